#!/usr/bin/env bash
# The writer's throughput as a share of the codec's 2-core ceiling, in one run:
# the ceiling is zstd level 3 on the BYTE_STREAM_SPLIT value bytes of the same
# gen_bench.py input in 1 MiB pages on THREADS threads (examples/codec_limit.rs);
# the writer is `timef ingest arrow` of that input (wall time, peak RSS).
# Best of RUNS for both.
#   scripts/bench_codec_limit.sh [TOTAL_MIB=256] [SHAPE=mixed] [RUNS=3] [THREADS=2]
set -euo pipefail
cd "$(dirname "$0")/.."
mib=${1:-256}; shape=${2:-mixed}; runs=${3:-3}; threads=${4:-2}
py=.venv/bin/python; tools=../shared/tools
[ -x "$py" ] || { echo "run .ci/run once to create .venv" >&2; exit 2; }
cargo build --release --quiet --bin timef --example codec_limit
bin=${CARGO_TARGET_DIR:-target}/release
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
$py $tools/gen_bench.py "$work/in.arrow" --total-mib "$mib" --shape "$shape"
ceiling=0
for _ in $(seq "$runs"); do
  line=$($bin/examples/codec_limit "$work/in.arrow" "$threads")
  ceiling=$(python3 -c "import sys; print(max($ceiling, float('$line'.split()[5])))")
done
. scripts/bench_lib.sh
before_run() { rm -rf "$work/out"; }
read -r _ best kb < <(best_of writer $bin/timef ingest arrow --quiet --root "$work/out" --name b --version v1 "$work/in.arrow")
python3 - "$mib" "$shape" "$ceiling" "$best" "$kb" "$threads" <<'PY'
import sys
mib, shape, ceiling, s, kb, threads = float(sys.argv[1]), sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
w = mib / s
print(f"codec ceiling ({threads} threads, zstd-3 on BSS pages): {ceiling:7.1f} MiB/s")
print(f"writer ({shape} {mib:.0f} MiB): {s:6.2f} s  {w:7.1f} MiB/s  peak RSS {kb / 1024:.0f} MiB  = {100 * w / ceiling:.0f}% of the ceiling")
PY
