#!/usr/bin/env bash
# Every write figure of the throughput targets in one command: the writer
# against ref_writer.py (scripts/bench_vs_ref.sh) on mixed 256 MiB and 1 GiB,
# small and mixed 32 MiB, small 256 MiB and long 256 MiB, then the fixed cost
# of a write (a write of one series: start, staging, the tables, fsyncs,
# commit), then the writer's share of the codec ceiling on mixed 256 MiB and on
# small 32 MiB (scripts/bench_codec_limit.sh): small series compress less and
# more slowly, so their ceiling is lower. After the writes it prints small
# 32 MiB's throughput as a share of mixed 256 MiB's (the target), small
# 256 MiB's (equal size: the cost of many series alone) and mixed 32 MiB's
# (equal shape: the cost of a write's size alone, its fixed cost weighing 8
# times more on 32 MiB). Last, the ratio of the two ceilings and the bound of
# the target's share: small 32 MiB encoded as close to its ceiling as mixed
# 256 MiB is to its own, plus the fixed cost, against mixed 256 MiB's writer.
#   scripts/bench_write.sh [RUNS=3]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
log=$(mktemp); work=$(mktemp -d); trap 'rm -f "$log"; rm -rf "$work"' EXIT
for case in "256 mixed" "1024 mixed" "32 small" "32 mixed" "256 small" "256 long"; do
  set -- $case
  echo "== write $2 $1 MiB" | tee -a "$log"
  scripts/bench_vs_ref.sh "$1" "$2" "$runs" | tee -a "$log"
done
# the fixed cost of a write: one series of 2,621 values, best of RUNS
. scripts/bench_lib.sh
.venv/bin/python ../shared/tools/gen_bench.py "$work/one.arrow" --total-mib 0.01 --shape mixed >/dev/null
before_run() { rm -rf "$work/out"; }
written_back
best_of "== fixed cost of a write (one series, s, peak RSS KiB):" \
  "${CARGO_TARGET_DIR:-target}/release/timef" ingest arrow --root "$work/out" --name b --version v1 "$work/one.arrow" | tee -a "$log"
# the shares: each against mixed 256 MiB, both best of RUNS
python3 - "$log" <<'PY'
import re, sys
rate, case = {}, None
for line in open(sys.argv[1]):
    if m := re.match(r"== write (\w+) (\d+) MiB", line):
        case = m.groups()
    elif m := re.match(r"\s*timef: .* ([\d.]+) MiB/s", line):
        rate[case] = float(m.group(1))
pairs = ((("small", "32"), ("mixed", "256"), "target >= 0.80"), (("small", "256"), ("mixed", "256"), "equal size"),
         (("mixed", "32"), ("mixed", "256"), "equal shape"), (("small", "32"), ("mixed", "32"), "equal size"))
for a, b, what in pairs:
    name = f"{a[0]} {a[1]} MiB/{b[0]} {b[1]} MiB"
    if a in rate and b in rate:
        print(f"== {name}: {rate[a]:.1f} / {rate[b]:.1f} MiB/s = {rate[a] / rate[b]:.2f} ({what})")
    else:
        print(f"== {name}: n/a (no timef figure for one of them above)")
PY
echo "== codec limit, mixed 256 MiB"
scripts/bench_codec_limit.sh 256 mixed "$runs" | tee -a "$log"
echo "== codec limit, small 32 MiB"
scripts/bench_codec_limit.sh 32 small "$runs" | tee -a "$log"
# the bound of the small-series target: small 32 MiB encoded at the share of
# its codec ceiling that mixed 256 MiB's write reaches of its own (a share
# over 100% is possible: the rounds above show the writer passing the
# in-memory ceiling on mixed series on some machines), plus the fixed
# cost of a write, which cannot overlap the encoding (the start comes before
# the first value is read, the commit after the last page is written); and
# the ratio of the ceilings, the share the codec alone reaches
python3 - "$log" <<'PY'
import re, sys
best, mixed, fixed, case = [], None, None, None
for line in open(sys.argv[1]):
    if m := re.match(r"codec ceiling .* best\s+([\d.]+) MiB/s", line):
        best.append(float(m.group(1)))
    elif m := re.match(r"== write (\w+) (\d+) MiB", line):
        case = m.groups()
    elif (m := re.match(r"\s*timef: .* ([\d.]+) MiB/s", line)) and case == ("mixed", "256"):
        mixed = float(m.group(1))
    elif m := re.match(r"== fixed cost of a write .*: ([\d.]+) ", line):
        fixed = float(m.group(1))
if len(best) != 2:
    print("== codec ceilings, small 32 MiB/mixed 256 MiB: n/a (no ceiling figure above)")
    sys.exit()
ceiling_mixed, ceiling_small = best
print(f"== codec ceilings, small 32 MiB/mixed 256 MiB: {ceiling_small:.1f} / {ceiling_mixed:.1f} MiB/s"
      f" = {ceiling_small / ceiling_mixed:.2f} (the codec alone)")
if mixed is None or fixed is None:
    print("== bound, small 32 MiB/mixed 256 MiB: n/a (no mixed 256 MiB or fixed cost figure above)")
    sys.exit()
# mixed 256 MiB's encoding without its own fixed cost, as a share of its ceiling
share = 256 / (256 / mixed - fixed) / ceiling_mixed
small = 32 / (32 / (share * ceiling_small) + fixed)
print(f"== bound, small 32 MiB/mixed 256 MiB: encoding at {100 * share:.0f}% of the ceiling {ceiling_small:.1f} MiB/s"
      f" (mixed 256 MiB's share) plus the fixed cost {1000 * fixed:.1f} ms = {small:.1f} MiB/s;"
      f" / {mixed:.1f} MiB/s = {small / mixed:.2f}")
PY
