#!/usr/bin/env bash
# Many tiny series: N series of 16 float32 values each (scripts/gen_many_series.py,
# deterministic), written by `timef ingest arrow` and by the pyarrow reference
# writer (../shared/tools/ref_writer.py) in the same run. Prints wall time, peak
# RSS and the size of each small file for both, the size ratios, and the
# per-series slope of time and peak RSS between consecutive N.
#   scripts/bench_many_series.sh [N ...]   (default: 100000 1000000 10000000)
#   REF_MAX_N=1000000: the largest N the reference writer runs on (it needs
#   about 2 KB per series; 1e7 exceeds what it finishes in reasonable time here).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench_lib.sh
[ $# -gt 0 ] || set -- 100000 1000000 10000000
ref_max=${REF_MAX_N:-1000000}
py=.venv/bin/python; tools=../shared/tools
[ -x "$py" ] || { echo "run .ci/run once to create .venv" >&2; exit 2; }
cargo build --release --quiet
bin=${CARGO_TARGET_DIR:-target}/release/timef
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
results=$work/results; : > "$results"
measure() { # label n out_root command...
  local label=$1 n=$2 root=$3; shift 3
  rm -rf "$root"
  timed "$work/t" "$@" >/dev/null
  read -r s kb < "$work/t"
  local v=$root/m/v1 sizes=""
  for f in time_series_index.parquet samples.parquet annotations.parquet manifest.json; do
    sizes="$sizes $(stat -c %s "$v/$f")"
  done
  local shards; shards=$(du -cb "$v"/time_series/*.parquet | tail -1 | cut -f1)
  echo "$label $n $s $kb$sizes $shards" >> "$results"
  rm -rf "$root"
}
for n in "$@"; do
  $py scripts/gen_many_series.py "$work/in.arrow" "$n"
  measure timef "$n" "$work/out" "$bin" ingest arrow --root "$work/out" --name m --version v1 "$work/in.arrow"
  if [ "$n" -le "$ref_max" ]; then
    measure ref_writer "$n" "$work/out" $py $tools/ref_writer.py "$work/in.arrow" --root "$work/out" --name m --version v1
  fi
  rm -f "$work/in.arrow"
done
python3 - "$results" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1])]
print(f"{'writer':>10} {'N':>9} {'time s':>8} {'us/series':>9} {'peak RSS MiB':>12} {'index B':>10} {'samples B':>10} {'annot B':>8} {'manifest B':>10} {'shards B':>11}")
by = {}
for label, n, s, kb, idx, smp, ann, man, sh in rows:
    n, s, kb = int(n), float(s), int(kb)
    by[(label, n)] = (s, kb, int(idx), int(smp))
    print(f"{label:>10} {n:>9} {s:>8.2f} {s / n * 1e6:>9.2f} {kb / 1024:>12.0f} {idx:>10} {smp:>10} {ann:>8} {man:>10} {sh:>11}")
for (label, n), (s, kb, idx, smp) in sorted(by.items()):
    if label == "timef" and ("ref_writer", n) in by:
        rs, rkb, ridx, rsmp = by[("ref_writer", n)]
        print(f"N={n}: time {s / rs:.2f}x the reference's; index {idx / ridx:.2f}x, samples {smp / rsmp:.2f}x its size")
ours = sorted((n, v) for (l, n), v in by.items() if l == "timef")
for (n0, a), (n1, b) in zip(ours, ours[1:]):
    print(f"timef slope {n0}->{n1}: {(b[0] - a[0]) / (n1 - n0) * 1e6:.2f} us/series, "
          f"{(b[1] - a[1]) * 1024 / (n1 - n0):.0f} B of peak RSS per series")
PY
