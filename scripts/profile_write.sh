#!/usr/bin/env bash
# Where a write's CPU goes, and how close to the codec's ceiling the writer
# could come at all: for a gen_bench.py input, in one run,
#  1. RUNS writes under `perf stat` (wall, CPU; medians) and the codec ceiling
#     of the same input (examples/codec_limit: zstd level 3 on the BSS value
#     bytes in 1 MiB pages on THREADS threads, compression alone timed; the
#     median of RUNS), each ceiling run next to a write;
#  2. one write under `perf record --call-graph dwarf`, its CPU samples put in
#     buckets by what they do (the innermost frame first, then the stack);
#  3. bounds on the writer's share of the ceiling: the share measured; with
#     every bucket but zstd at zero and both cores busy all the time; with only
#     the work the format asks for besides zstd (the files' sha256 for the
#     manifest, chunk and page statistics, page CRCs, the connector's pass over
#     the input, the kernel's writes of the output and their fsync) at its
#     measured cost.
# Needs perf (with access to the process's samples) and .venv from .ci/run.
#   scripts/profile_write.sh [TOTAL_MIB=256] [SHAPE=mixed] [RUNS=5] [THREADS=2]
set -euo pipefail
cd "$(dirname "$0")/.."
mib=${1:-256}; shape=${2:-mixed}; runs=${3:-5}; threads=${4:-2}
py=.venv/bin/python; tools=../shared/tools
[ -x "$py" ] || { echo "run .ci/run once to create .venv" >&2; exit 2; }
command -v perf >/dev/null || { echo "perf not found (linux-tools)" >&2; exit 2; }
cargo build --release --quiet --bin timef --example codec_limit
bin=${CARGO_TARGET_DIR:-target}/release
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
. scripts/bench_lib.sh
$py $tools/gen_bench.py "$work/in.arrow" --total-mib "$mib" --shape "$shape" >/dev/null
written_back
write() { rm -rf "$work/out"; "$@" $bin/timef ingest arrow --quiet --root "$work/out" --name b --version v1 "$work/in.arrow" >/dev/null; }
: > "$work/rounds"
for _ in $(seq "$runs"); do
  ceiling=$($bin/examples/codec_limit "$work/in.arrow" "$threads" | awk '{print $6}')
  t0=${EPOCHREALTIME/,/.}
  write perf stat -x, -e task-clock -o "$work/stat"
  t1=${EPOCHREALTIME/,/.}
  cpu=$(awk -F, '$3 == "task-clock" {print $1}' "$work/stat")
  echo "$ceiling $t0 $t1 $cpu" >> "$work/rounds"
done
write perf record -q -o "$work/perf.data" -F 2999 --call-graph dwarf,16384
perf script -i "$work/perf.data" 2>/dev/null > "$work/script.txt"
python3 - "$mib" "$shape" "$threads" "$work/rounds" "$work/script.txt" <<'PY'
import collections, re, statistics, sys
mib, shape, threads = float(sys.argv[1]), sys.argv[2], int(sys.argv[3])
rounds = [[float(x) for x in l.split()] for l in open(sys.argv[4])]
ceiling = statistics.median(r[0] for r in rounds)            # MiB/s
wall_ms = statistics.median((r[2] - r[1]) * 1000 for r in rounds)
cpu_ms = statistics.median(r[3] for r in rounds)
# (bucket, what the format asks for besides zstd, pattern of the innermost frame, pattern of the stack);
# the first bucket that matches takes the sample
BUCKETS = [
    ("zstd (the codec)", False, r"^(ZSTD_|HUF_|FSE_|HIST_)", r"\bZSTD_"),
    ("sha256 of the files (manifest)", True, r"sha2::", r"sha2::|FileHash"),
    ("chunk and page statistics", True, r"Extremes|Lanes", r"Extremes|Lanes|manifest::Partial"),
    ("page CRC", True, r"crc32", None),
    ("input: connector (check, convert)", True, None, r"timef::connectors::"),
    ("output: kernel writes", True, None, r"ksys_write|vfs_write"),
    ("output: fsync and write-back", True, None, r"fsync|fadvise"),
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
counts, frames = collections.Counter(), []
for line in list(open(sys.argv[5])) + [""]:
    if line.startswith((" ", "\t")) and line.strip():
        parts = line.split(None, 1)
        if len(parts) == 2:
            frames.append(re.sub(r"\+0x[0-9a-f]+$", "", parts[1].split(" (")[0].strip()))
    elif frames or not line.strip():
        if frames:
            counts[bucket(frames)] += 1
        frames = []
total = sum(counts.values()) or 1
share = {name: counts[name] / total for name in counts}
print(f"{shape} {mib:.0f} MiB, {len(rounds)} rounds (medians): writer {wall_ms:.1f} ms wall, {cpu_ms:.1f} ms CPU "
      f"({cpu_ms / wall_ms / threads:.0%} of {threads} cores); codec ceiling {ceiling:.1f} MiB/s "
      f"({mib / ceiling * 1000:.1f} ms)")
print(f"CPU by what it does ({total} samples of one write):")
mandated = {name for name, m, _, _ in BUCKETS if m}
for name, n in counts.most_common():
    print(f"  {100 * n / total:5.1f}%  {cpu_ms * n / total:7.1f} ms  {name}{'  [format]' if name in mandated else ''}")
ceiling_ms = mib / ceiling * 1000
zstd = share.get("zstd (the codec)", 0) * cpu_ms
needed = zstd + sum(share.get(n, 0) for n in mandated) * cpu_ms
print(f"share of the ceiling: measured {ceiling_ms / wall_ms:.0%}; "
      f"zstd alone on {threads} busy cores {ceiling_ms / (zstd / threads):.0%}; "
      f"zstd and the format's other work on {threads} busy cores {ceiling_ms / (needed / threads):.0%}")
PY
