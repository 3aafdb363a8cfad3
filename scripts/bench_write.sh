#!/usr/bin/env bash
# Every write figure of the throughput targets in one command: the writer
# against ref_writer.py (scripts/bench_vs_ref.sh) on mixed 256 MiB and 1 GiB,
# small 32 MiB and long 256 MiB, then the writer's share of the codec ceiling
# on mixed 256 MiB and on small 32 MiB (scripts/bench_codec_limit.sh): small
# series compress less and more slowly, so their ceiling is lower.
#   scripts/bench_write.sh [RUNS=3]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
for case in "256 mixed" "1024 mixed" "32 small" "256 long"; do
  set -- $case
  echo "== write $2 $1 MiB"
  scripts/bench_vs_ref.sh "$1" "$2" "$runs"
done
echo "== codec limit, mixed 256 MiB"
scripts/bench_codec_limit.sh 256 mixed "$runs"
echo "== codec limit, small 32 MiB"
scripts/bench_codec_limit.sh 32 small "$runs"
