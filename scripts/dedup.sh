#!/usr/bin/env bash
# Dedup after an edit: ingests a gen_bench.py file, removes 1% of the samples
# spread evenly through the sorted ids, and reports the share of the new
# version's shard bytes in pages byte-identical to the base's.
#   scripts/dedup.sh [TOTAL_MIB=256]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench_lib.sh
mib=${1:-256}
py=.venv/bin/python
[ -x "$py" ] || { echo "run .ci/run once to create .venv" >&2; exit 2; }
cargo build --release --quiet
bin=${CARGO_TARGET_DIR:-target}/release/timef
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
$py ../shared/tools/gen_bench.py "$work/in.arrow" --total-mib "$mib"
"$bin" --quiet ingest arrow --root "$work/r" --name b --version v1 "$work/in.arrow" >/dev/null
every_hundredth_sample "$py" "$work/r/b/v1" "$work/rm.txt"
"$bin" --quiet edit "$work/r/b/v1" --out-root "$work/r" --version v2 --remove-samples-from "$work/rm.txt" | tail -1 >/dev/null
"$bin" dedup "$work/r/b/v1" "$work/r/b/v2"
