#!/usr/bin/env bash
# Times `timef ingest arrow` against the pyarrow reference writer
# (../shared/tools/ref_writer.py) on the same gen_bench.py input, in the same run,
# and reports wall time, speedup and peak RSS of each.
#   scripts/bench_vs_ref.sh [TOTAL_MIB=256] [SHAPE=mixed] [RUNS=3]
set -euo pipefail
cd "$(dirname "$0")/.."
mib=${1:-256}; shape=${2:-mixed}; runs=${3:-3}
py=.venv/bin/python; tools=../shared/tools
[ -x "$py" ] || { echo "run .ci/run once to create .venv" >&2; exit 2; }
cargo build --release --quiet
bin=${CARGO_TARGET_DIR:-target}/release
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
$py $tools/gen_bench.py "$work/in.arrow" --total-mib "$mib" --shape "$shape"
. scripts/bench_lib.sh
written_back
before_run() { rm -rf "$work/out"; }
ours=$(best_of timef $bin/timef ingest arrow --quiet --root "$work/out" --name b --version v1 "$work/in.arrow")
theirs=$(best_of ref_writer $py $tools/ref_writer.py "$work/in.arrow" --root "$work/out" --name b --version v1)
python3 - "$mib" "$ours" "$theirs" <<'PY'
import sys
mib = float(sys.argv[1]); o = sys.argv[2].split(); t = sys.argv[3].split()
for l, s, kb in (o, t):
    print(f"{l:>10}: {float(s):6.2f} s  {mib / float(s):7.1f} MiB/s  peak RSS {int(kb) / 1024:6.0f} MiB")
print(f"speedup: {float(t[1]) / float(o[1]):.2f}x")
PY
