#!/usr/bin/env bash
# Ingests the gen_bench.py input (`timef ingest arrow`) to local disk and to a
# local S3-compatible server (moto on 127.0.0.1, started here, stopped at exit),
# in one run, and reports wall time and peak RSS of each (best of RUNS).
#   scripts/bench_object_store.sh [TOTAL_MIB=256] [RUNS=2]
set -euo pipefail
cd "$(dirname "$0")/.."
mib=${1:-256}; runs=${2:-2}
py=.venv/bin/python; tools=../shared/tools
[ -x .venv/bin/moto_server ] || { echo "run .ci/run once to create .venv with moto" >&2; exit 2; }
cargo build --release --quiet
bin=${CARGO_TARGET_DIR:-target}/release/timef
work=$(mktemp -d)
port=$($py -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
.venv/bin/moto_server -H 127.0.0.1 -p "$port" >/dev/null 2>&1 &
moto=$!
trap 'kill $moto 2>/dev/null || true; wait $moto 2>/dev/null || true; rm -rf "$work"' EXIT
until $py -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null; do sleep 0.2; done
export AWS_ENDPOINT_URL=http://127.0.0.1:$port AWS_ALLOW_HTTP=true AWS_REGION=us-east-1
export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing
curl -s -X PUT "$AWS_ENDPOINT_URL/bench" >/dev/null
$py $tools/gen_bench.py "$work/in.arrow" --total-mib "$mib"
. scripts/bench_lib.sh
written_back
run() { # label, root: each run writes a version of its own under root/r<run>
  best_of "$1" sh -c '"$0" ingest arrow --quiet --root "$1/r$BENCH_RUN" --name b --version v1 "$2"' \
    "$bin" "$2" "$work/in.arrow"
}
a=$(run local "$work/out")
b=$(run s3-moto "s3://bench/run")
"$bin" verify "s3://bench/run/r1/b/v1" | tail -1
python3 - "$mib" "$a" "$b" <<'PY'
import sys
mib = float(sys.argv[1])
for arg in sys.argv[2:]:
    l, s, kb = arg.split()
    print(f"{l:>8}: {float(s):6.2f} s  {mib / float(s):7.1f} MiB/s  peak RSS {int(kb) / 1024:6.0f} MiB")
PY
