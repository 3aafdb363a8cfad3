#!/usr/bin/env bash
# Where a write's CPU goes, and how much of it the codec is: for a
# gen_bench.py input, in one run,
#  1. RUNS rounds of the codec ceiling (examples/codec_limit: zstd level 3 on
#     the BSS value bytes in 1 MiB pages on THREADS threads, compression alone
#     timed) each next to a write on THREADS threads under `perf stat` (the
#     write's own duration and CPU, perf's start excluded);
#  2. one write under `perf record -e cpu-clock --call-graph dwarf`, its CPU
#     samples put in buckets by what they do (the first bucket whose pattern
#     matches the innermost frame or any frame of the stack);
#  3. the shares: the writer's throughput as a share of each round's ceiling
#     (min, median, max: the ceiling itself drifts by tens of percent on a
#     shared VM); the cores the writer keeps busy; and, in CPU terms, which
#     the drift does not move, zstd's part of the work the writer cannot skip
#     (zstd plus the buckets marked [required]: the files' sha256 for the
#     manifest, the byte stream split and statistics, page CRCs, the kernel's
#     writes and their fsync, the connector's pass over the input). Its zstd
#     costs what the ceiling's costs per byte, so with every core busy and
#     everything else gone the writer reaches at most that share of the
#     ceiling.
# Needs perf with kernel samples (root, or kernel.perf_event_paranoid <= 1)
# and .venv from .ci/run.
#   scripts/profile_write.sh [TOTAL_MIB=256] [SHAPE=mixed] [RUNS=5] [THREADS=2]
set -euo pipefail
cd "$(dirname "$0")/.."
mib=${1:-256}; shape=${2:-mixed}; runs=${3:-5}; threads=${4:-2}
py=.venv/bin/python; tools=../shared/tools
[ -x "$py" ] || { echo "run .ci/run once to create .venv" >&2; exit 2; }
[ "$runs" -ge 1 ] || { echo "RUNS must be at least 1" >&2; exit 2; }
command -v perf >/dev/null || { echo "perf not found (linux-tools)" >&2; exit 2; }
paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 2)
if [ "$(id -u)" -ne 0 ] && [ "$paranoid" -gt 1 ]; then
  echo "perf records no kernel samples here (kernel.perf_event_paranoid=$paranoid, not root):" \
    "run as root or lower it to 1" >&2
  exit 2
fi
cargo build --release --quiet --bin timef --example codec_limit
bin=${CARGO_TARGET_DIR:-target}/release
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
. scripts/bench_lib.sh
"$py" "$tools/gen_bench.py" "$work/in.arrow" --total-mib "$mib" --shape "$shape" >/dev/null
written_back
write() {
  rm -rf "$work/out"
  RAYON_NUM_THREADS=$threads "$@" "$bin/timef" ingest arrow --quiet --root "$work/out" --name b --version v1 \
    "$work/in.arrow" >/dev/null
}
: > "$work/rounds"
for _ in $(seq "$runs"); do
  # "<MiB> MiB in <s> s: <MiB/s> MiB/s (<ratio>x)"
  read -r ceiling_mib _ _ ceiling_s _ < <("$bin/examples/codec_limit" "$work/in.arrow" "$threads")
  LC_ALL=C write perf stat -x, -e task-clock,duration_time -o "$work/stat"
  # task-clock in ms, duration_time in ns
  stat=$(awk -F, '$3 ~ /^task-clock/ {cpu = $1} $3 ~ /^duration_time/ {wall = $1 / 1e6} END {print cpu, wall}' "$work/stat")
  echo "$ceiling_mib $ceiling_s $stat" >> "$work/rounds"
done
write perf record -q -e cpu-clock -F 2999 --call-graph dwarf,32768 -o "$work/perf.data"
perf script --no-inline -i "$work/perf.data" > "$work/script.txt" 2> "$work/script.err" \
  || { cat "$work/script.err" >&2; exit 1; }
python3 - "$shape" "$threads" "$work/rounds" "$work/script.txt" <<'PY'
import collections, re, statistics, sys
shape, threads = sys.argv[1], int(sys.argv[2])
rounds = [[float(x) for x in l.split()] for l in open(sys.argv[3])]
if any(len(r) != 4 for r in rounds):
    sys.exit(f"perf stat gave no task-clock or duration_time: {rounds}")
mib = rounds[0][0]
shares = sorted(ceiling_s * 1000 / wall_ms for _, ceiling_s, _, wall_ms in rounds)
wall_ms = statistics.median(r[3] for r in rounds)
cpu_ms = statistics.median(r[2] for r in rounds)
# (bucket, work the format or the input requires besides zstd, pattern of the
# innermost frame, pattern of any frame); the first bucket that matches takes the sample
BUCKETS = [
    ("zstd (the codec)", False, r"^(ZSTD_|HUF_|FSE_|HIST_)", r"\bZSTD_"),
    ("sha256 of the files (manifest)", True, r"sha2::", r"sha2::|FileHash"),
    ("byte stream split and statistics", True, r"Extremes|Lanes", r"Extremes|Lanes|manifest::Partial"),
    ("page CRC", True, r"crc32", None),
    ("output: kernel writes", True, None, r"ksys_write|vfs_write"),
    ("output: fsync and write-back", True, None, r"fsync|fadvise"),
    ("input: connector pass (checks, conversion)", True, None, r"timef::connectors::"),
    ("page faults (input, buffers)", False, None, r"exc_page_fault|handle_mm_fault"),
    ("memory release (madvise, munmap)", False, None, r"madvise|munmap"),
    ("small tables (index, samples ...)", False, None, r"encode_leaf_pages|writer::files::|index_rows::"),
    ("memmove, memset (other)", False, r"memmove|memcpy|memset", None),
    ("shard cutting and append", False, None, r"timef::writer::|timef::layout::|timef::chunks::"),
    ("pool scheduling and idle spin", False, None, r"rayon_core::|sched_yield|futex"),
]
def bucket(frames):
    stack = "\n".join(frames)
    for name, _, leaf, anywhere in BUCKETS:
        if (leaf and frames and re.search(leaf, frames[0])) or (anywhere and re.search(anywhere, stack)):
            return name
    return "other (process start and exit, dataset, manifest ...)"
# `perf script`: a header line a sample, its frames indented ("addr symbol+off (dso)"), a blank line
counts, frames = collections.Counter(), []
for line in list(open(sys.argv[4])) + [""]:
    if line.startswith((" ", "\t")) and line.strip():
        parts = line.split(None, 1)
        if len(parts) == 2:
            frames.append(re.sub(r"\+0x[0-9a-f]+$", "", parts[1].split(" (")[0].strip()))
    elif frames or not line.strip():
        if frames:
            counts[bucket(frames)] += 1
        frames = []
total = sum(counts.values())
if not total:
    sys.exit("perf recorded no samples")
share = {name: n / total for name, n in counts.items()}
print(f"{shape} input, {mib:.0f} MiB of values, {len(rounds)} rounds (medians): writer {wall_ms:.1f} ms, {cpu_ms:.1f} ms CPU, "
      f"{cpu_ms / wall_ms / threads:.0%} of {threads} cores busy")
print(f"writer's share of the codec ceiling per round: min {shares[0]:.0%}, median {statistics.median(shares):.0%}, "
      f"max {shares[-1]:.0%}")
print(f"CPU by what it does ({total} samples of one more write; ms = share x the median CPU):")
required = {name for name, r, _, _ in BUCKETS if r}
for name, n in counts.most_common():
    print(f"  {100 * n / total:5.1f}%  {cpu_ms * n / total:7.1f} ms  {name}{'  [required]' if name in required else ''}")
zstd = share.get("zstd (the codec)", 0)
needed = zstd + sum(share.get(n, 0) for n in required)
print(f"zstd is {zstd:.0%} of the CPU and {zstd / needed:.0%} of the required work: "
      f"the most of the ceiling a writer doing that work can reach on {threads} busy cores")
PY
