#!/usr/bin/env bash
# Edits at the cost of the change (issue 25 §3), one run each: ingests a
# gen_bench.py mixed input, then derives from it
#   remove   1% of the samples (`timef edit --remove-samples-from`),
#   add      1% new series, one new sample each (examples/derive_version.rs),
#   both     the two at once (derive_version),
#   relabel  a label annotation on 1% of the samples (derive_version),
# and prints each one's wall time as a share of the ingest's, its peak RSS,
# what it copied from the base, and `timef dedup` against the base.
#   scripts/bench_edit.sh [TOTAL_MIB=1024]
# PY (default .venv/bin/python, made by .ci/run) runs gen_bench.py from SHARED
# (default ../shared).
set -euo pipefail
cd "$(dirname "$0")/.."
mib=${1:-1024}
py=${PY:-.venv/bin/python}
[ -x "$py" ] || { echo "run .ci/run once to create .venv, or set PY" >&2; exit 2; }
cargo build --release --quiet --bin timef --example derive_version
target=${CARGO_TARGET_DIR:-target}/release
bin=$target/timef
derive=$target/examples/derive_version
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
$py "${SHARED:-../shared}/tools/gen_bench.py" "$work/in.arrow" --total-mib "$mib" --shape mixed

# runs the command; sets wall (s), rss (MiB) and out (its last line)
run() {
  /usr/bin/time -f "%e %M" -o "$work/time" "$@" >"$work/out"
  read -r wall rss_kib <"$work/time"
  rss=$((rss_kib / 1024))
  out=$(tail -1 "$work/out")
}

run "$bin" --quiet ingest arrow --root "$work/r" --name b --version v1 "$work/in.arrow"
ingest=$wall
echo "ingest ${mib} MiB: ${ingest} s, peak RSS ${rss} MiB"
$py - "$work" <<'PY'
import sys, pyarrow.parquet as pq
w = sys.argv[1]
ids = sorted(pq.read_table(f"{w}/r/b/v1/samples.parquet").column("sample_id").to_pylist())
k = max(1, round(len(ids) / 100))
step = len(ids) // k
open(f"{w}/rm.txt", "w").write("\n".join(ids[step // 2::step][:k]) + "\n")
print(f"{len(ids)} samples; removing {k}, adding one series after every 100th, labelling every 100th")
PY

report() {
  local name=$1
  local share dedup
  share=$(awk -v a="$wall" -v b="$ingest" 'BEGIN { printf "%.3f", a / b }')
  dedup=$("$bin" dedup "$work/r/b/v1" "$work/r/b/$name" | sed 's/.*(\(.*\))/\1/')
  printf '%-8s %6.2f s  %s of ingest  peak RSS %4d MiB  dedup %s\n         %s\n' \
    "$name" "$wall" "$share" "$rss" "$dedup" "$out"
}

run "$bin" --quiet edit "$work/r/b/v1" --out-root "$work/r" --version remove --remove-samples-from "$work/rm.txt"
report remove
run "$derive" "$work/r/b/v1" "$work/r" add --add 100
report add
run "$derive" "$work/r/b/v1" "$work/r" both --remove "$work/rm.txt" --add 100
report both
run "$derive" "$work/r/b/v1" "$work/r" relabel --relabel 100
report relabel
