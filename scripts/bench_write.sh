#!/usr/bin/env bash
# Every write figure of the throughput targets in one command: the writer
# against ref_writer.py (scripts/bench_vs_ref.sh) on mixed 256 MiB and 1 GiB,
# small 32 and 256 MiB and long 256 MiB, then the writer's share of the codec ceiling
# on mixed 256 MiB and on small 32 MiB (scripts/bench_codec_limit.sh): small
# series compress less and more slowly, so their ceiling is lower. After the
# writes it prints small 32 MiB's throughput as a share of mixed 256 MiB's
# (the target), and small 256 MiB's: at equal size the share shows the cost of
# many series alone, without the fixed cost of a write (start, tables,
# commit: ~8 ms) that weighs 8 times more on 32 MiB. Last, the ratio of the
# two ceilings: the share the codec alone reaches, against which the target's
# share is read.
#   scripts/bench_write.sh [RUNS=3]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
log=$(mktemp); trap 'rm -f "$log"' EXIT
for case in "256 mixed" "1024 mixed" "32 small" "256 small" "256 long"; do
  set -- $case
  echo "== write $2 $1 MiB" | tee -a "$log"
  scripts/bench_vs_ref.sh "$1" "$2" "$runs" | tee -a "$log"
done
# the small-series target: small 32 MiB against mixed 256 MiB, both best of RUNS
python3 - "$log" <<'PY'
import re, sys
rate, case = {}, None
for line in open(sys.argv[1]):
    if m := re.match(r"== write (\w+) (\d+) MiB", line):
        case = m.groups()
    elif m := re.match(r"\s*timef: .* ([\d.]+) MiB/s", line):
        rate[case] = float(m.group(1))
mixed = rate.get(("mixed", "256"))
for mib, what in (("32", "target >= 0.80"), ("256", "equal size")):
    small = rate.get(("small", mib))
    if small and mixed:
        print(f"== small {mib} MiB/mixed 256 MiB: {small:.1f} / {mixed:.1f} MiB/s = {small / mixed:.2f} ({what})")
    else:
        print(f"== small {mib} MiB/mixed 256 MiB: n/a (no timef figure for small {mib} MiB or mixed 256 MiB above)")
PY
echo "== codec limit, mixed 256 MiB"
scripts/bench_codec_limit.sh 256 mixed "$runs" | tee "$log"
echo "== codec limit, small 32 MiB"
scripts/bench_codec_limit.sh 32 small "$runs" | tee -a "$log"
# the bound of the small-series target: the codec alone reaches this share, so
# small 32 MiB/mixed 256 MiB passes it only when small's write is a larger
# share of its own ceiling than mixed's is of its
python3 - "$log" <<'PY'
import re, sys
best = [float(m.group(1)) for line in open(sys.argv[1])
        if (m := re.match(r"codec ceiling .* best\s+([\d.]+) MiB/s", line))]
if len(best) == 2:
    print(f"== codec ceilings, small 32 MiB/mixed 256 MiB: {best[1]:.1f} / {best[0]:.1f} MiB/s = {best[1] / best[0]:.2f}"
          " (the codec alone; small/mixed >= this needs small at a larger share of its ceiling than mixed)")
else:
    print("== codec ceilings, small 32 MiB/mixed 256 MiB: n/a (no ceiling figure above)")
PY
