#!/usr/bin/env bash
# Read benchmarks, ours beside the peers in the same run (wall time and peak
# RSS of each process via /usr/bin/time; best wall time of RUNS, RSS of the last):
#  1. full scan of a SCAN_MIB mixed version (gen_bench.py --shape mixed, then
#     `timef ingest arrow`): `timef export --count` (every chunk decoded and
#     checked, nothing written) and `timef export --out FILE.arrow`, against
#     pyarrow (read_table of time_series/ + values regrouped per series) and
#     DuckDB (values grouped per series), see scripts/bench_read_peers.py;
#  2. random access: p50/p99 latency of reading N_IDS random series of a
#     RANDOM_MIB mixed version: `Version::read_series` in one process
#     (examples/read_latency.rs, index read before the clock starts) against
#     pyarrow's pq.read_table(shard, filters=[("time_series_id", "=", id)])
#     with the shard picked from the index.
#   scripts/bench_read.sh [SCAN_MIB=256] [RANDOM_MIB=1024] [RUNS=3] [N_IDS=1000]
# BENCH_DIR=DIR keeps the inputs and versions there for the next run.
set -euo pipefail
cd "$(dirname "$0")/.."
scan_mib=${1:-256}; random_mib=${2:-1024}; runs=${3:-3}; n_ids=${4:-1000}
py=$PWD/.venv/bin/python; tools=../shared/tools; peers=$PWD/scripts/bench_read_peers.py
[ -x "$py" ] || { echo "run .ci/run once to create .venv" >&2; exit 2; }
cargo build --release --quiet --bin timef --example read_latency
bin=${CARGO_TARGET_DIR:-target}/release
if [ -n "${BENCH_DIR:-}" ]; then work=$BENCH_DIR; mkdir -p "$work"; else work=$(mktemp -d); trap 'rm -rf "$work"' EXIT; fi
version() { # mib -> version dir (made once)
  local mib=$1 dir=$work/v/m$1/1
  if [ ! -f "$dir/manifest.json" ]; then
    [ -f "$work/mixed$mib.arrow" ] || $py $tools/gen_bench.py "$work/mixed$mib.arrow" --total-mib "$mib" --shape mixed >&2
    $bin/timef ingest arrow --quiet --root "$work/v" --name "m$mib" --version 1 "$work/mixed$mib.arrow" >/dev/null
  fi
  echo "$dir"
}
. scripts/bench_lib.sh
before_run() { rm -f "$work/out.arrow"; }
v=$(version "$scan_mib")
echo "full scan of $v ($scan_mib MiB of float32 values; best of $runs):"
{
  best_of timef-count $bin/timef export "$v" --count
  best_of timef-export $bin/timef export "$v" --out "$work/out.arrow"
  best_of pyarrow $py "$peers" pyarrow-scan "$v"
  best_of duckdb $py "$peers" duckdb-scan "$v"
} > "$work/scan.txt"
rm -f "$work/out.arrow"
python3 - "$scan_mib" "$work/scan.txt" <<'PY'
import sys
mib = float(sys.argv[1]); rows = [l.split() for l in open(sys.argv[2])]
ours = float(rows[0][1])
for label, s, kb in rows:
    s = float(s)
    vs = "" if label.startswith("timef") else f"  (timef-count {s / ours:.2f}x faster)"
    print(f"{label:>13}: {s:6.2f} s  {mib / s:7.1f} MiB/s  peak RSS {int(kb) / 1024:6.0f} MiB{vs}")
PY
v=$(version "$random_mib")
$py "$peers" pick-ids "$v" "$n_ids" 7 "$work/ids.txt" >/dev/null
echo "random access: $n_ids random series of $v (same ids for both):"
ours=$($bin/examples/read_latency "$v" "$work/ids.txt")
theirs=$($py "$peers" pyarrow-random "$v" "$work/ids.txt")
echo "    timef read_series: $ours"
echo "  pyarrow filtered read: $theirs"
python3 - "$ours" "$theirs" <<'PY'
import sys
p50 = lambda s: float(s.split()[1])
print(f"p50 speedup: {p50(sys.argv[2]) / p50(sys.argv[1]):.1f}x")
PY
