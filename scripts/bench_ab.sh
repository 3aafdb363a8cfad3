#!/usr/bin/env bash
# Two builds of `timef` on the same write, in alternating runs: `timef ingest
# arrow --quiet` of a gen_bench.py input by binary A, then by B, PAIRS times,
# each run after the page cache's dirty pages were written back and the last
# run's output removed. Prints each binary's median and best wall time and the
# median of the pairs' B/A time ratios: on a VM whose pace drifts by tens of
# percent within minutes, the runs of a pair are a second apart, so that
# ratio carries much less of the drift than two separate best-of figures.
# A change against its parent: build the parent in a worktree of its own
# (`git worktree add /tmp/parent HEAD~1`, `cargo build --release` there), then
#   scripts/bench_ab.sh /tmp/parent/target/release/timef target/release/timef 32 small 20
#
#   scripts/bench_ab.sh A_BIN B_BIN [TOTAL_MIB=32] [SHAPE=small] [PAIRS=10]
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: scripts/bench_ab.sh A_BIN B_BIN [TOTAL_MIB=32] [SHAPE=small] [PAIRS=10]" >&2; exit 2; }
a=$1; b=$2; mib=${3:-32}; shape=${4:-small}; pairs=${5:-10}
py=.venv/bin/python; tools=../shared/tools
[ -x "$py" ] || { echo "run .ci/run once to create .venv" >&2; exit 2; }
for bin in "$a" "$b"; do [ -x "$bin" ] || { echo "not an executable: $bin" >&2; exit 2; }; done
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
. scripts/bench_lib.sh
"$py" "$tools/gen_bench.py" "$work/in.arrow" --total-mib "$mib" --shape "$shape"
: > "$work/times"
for i in $(seq "$pairs"); do
  for side in a b; do
    bin=$a; [ "$side" = b ] && bin=$b
    rm -rf "$work/out"
    written_back
    timed "$work/t" "$bin" ingest arrow --quiet --root "$work/out" --name b --version v1 "$work/in.arrow" >/dev/null
    read -r s _ < "$work/t"
    echo "$i $side $s" >> "$work/times"
  done
done
python3 - "$work/times" "$a" "$b" "$shape" "$mib" <<'PY'
import statistics, sys
times, a, b, shape, mib = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5])
runs = {}
for line in open(times):
    i, side, s = line.split()
    runs.setdefault(side, {})[int(i)] = float(s)
for side, name in (("a", a), ("b", b)):
    t = list(runs[side].values())
    print(f"{side} {name}: median {statistics.median(t) * 1000:7.1f} ms, best {min(t) * 1000:7.1f} ms"
          f" ({mib / min(t):.1f} MiB/s at best), {shape} {mib:.0f} MiB, {len(t)} runs")
ratios = sorted(runs["b"][i] / runs["a"][i] for i in runs["a"])
# a pair's own ratio (the lower middle one for an even count), never an average of two
print(f"b/a time per pair: median {statistics.median_low(ratios):.3f}, range {ratios[0]:.3f}-{ratios[-1]:.3f}"
      f" ({len(ratios)} pairs; below 1: b is faster)")
PY
