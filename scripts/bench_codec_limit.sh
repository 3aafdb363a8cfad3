#!/usr/bin/env bash
# The writer's throughput as a share of the codec's 2-core ceiling, in one run:
# the ceiling is zstd level 3 on the BYTE_STREAM_SPLIT value bytes of the same
# gen_bench.py input, series in the writer's order (sorted by id), in 1 MiB
# pages on THREADS threads, compression alone timed (examples/codec_limit.rs);
# the writer is `timef ingest arrow` of that input (wall time, peak RSS).
# RUNS rounds, each a ceiling run right before a writer run: this machine's
# speed drifts from minute to minute, so each round's share compares two runs
# a second apart, and the figure is the median round's share (best-of figures
# of both sides are printed too). Each round then runs a second ceiling on the
# version the writer just wrote: zstd alone on the format's own values pages,
# where its content-defined cuts put them (at least 256 KiB: near 256 KiB for
# many small series, near 1 MiB for long ones), the most a writer of this
# format reaches with zstd alone (codec_limit with VERSION_DIR).
#   scripts/bench_codec_limit.sh [TOTAL_MIB=256] [SHAPE=mixed] [RUNS=3] [THREADS=2]
set -euo pipefail
cd "$(dirname "$0")/.."
mib=${1:-256}; shape=${2:-mixed}; runs=${3:-3}; threads=${4:-2}
py=.venv/bin/python; tools=../shared/tools
[ -x "$py" ] || { echo "run .ci/run once to create .venv" >&2; exit 2; }
cargo build --release --quiet --bin timef --example codec_limit
bin=${CARGO_TARGET_DIR:-target}/release
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
. scripts/bench_lib.sh
$py $tools/gen_bench.py "$work/in.arrow" --total-mib "$mib" --shape "$shape"
written_back
rounds=""
for _ in $(seq "$runs"); do
  ceiling=$($bin/examples/codec_limit "$work/in.arrow" "$threads" | awk '{print $6}')
  rm -rf "$work/out"
  timed "$work/t" $bin/timef ingest arrow --quiet --root "$work/out" --name b --version v1 "$work/in.arrow" >/dev/null
  read -r s kb < "$work/t"
  pages=$($bin/examples/codec_limit "$work/in.arrow" "$threads" "$work/out/b/v1" | awk 'NR == 1 {print $6}')
  rounds="$rounds $ceiling:$s:$kb:$pages"
done
python3 - "$mib" "$shape" "$threads" $rounds <<'PY'
import statistics, sys
mib, shape, threads = float(sys.argv[1]), sys.argv[2], sys.argv[3]
rounds = [tuple(float(x) for x in r.split(":")) for r in sys.argv[4:]]
for i, (ceiling, s, kb, pages) in enumerate(rounds, 1):
    print(f"round {i}: ceiling {ceiling:7.1f} MiB/s, writer {s:5.2f} s {mib / s:7.1f} MiB/s"
          f" (peak RSS {kb / 1024:.0f} MiB) = {100 * mib / s / ceiling:.0f}%;"
          f" on the format's pages {pages:7.1f} MiB/s = {100 * mib / s / pages:.0f}%")
best_ceiling = max(r[0] for r in rounds)
best_pages = max(r[3] for r in rounds)
_, best_s, best_kb, _ = min(rounds, key=lambda r: r[1])
# a round's own share (the lower middle one for an even count), never an average of two
share = statistics.median_low(100 * mib / s / ceiling for ceiling, s, _, _ in rounds)
pages_share = statistics.median_low(100 * mib / s / pages for _, s, _, pages in rounds)
print(f"codec ceiling ({threads} threads, zstd-3 on BSS pages): best {best_ceiling:7.1f} MiB/s")
print(f"format pages' ceiling ({threads} threads, zstd-3 on the version's own values pages):"
      f" best {best_pages:7.1f} MiB/s")
print(f"writer ({shape} {mib:.0f} MiB): best {best_s:6.2f} s  {mib / best_s:7.1f} MiB/s"
      f"  peak RSS {best_kb / 1024:.0f} MiB  = {share:.0f}% of the ceiling (median round),"
      f" {pages_share:.0f}% of the format pages' ceiling")
PY
