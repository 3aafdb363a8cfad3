#!/usr/bin/env bash
# Times writing the gen_bench.py data from Python (numpy arrays; loaders;
# ingest_arrow on a pyarrow Table) against `timef ingest arrow` and the pyarrow
# reference writer (../shared/tools/ref_writer.py), in the same run, on the same
# input; checks the Python outputs are byte-identical to the CLI's.
#   scripts/bench_python.sh [TOTAL_MIB=256] [SHAPE=mixed] [RUNS=3]
# Needs the package installed in .venv (.ci/run, or .venv/bin/pip install ./python).
set -euo pipefail
cd "$(dirname "$0")/.."
mib=${1:-256}; shape=${2:-mixed}; runs=${3:-3}
py=.venv/bin/python; tools=../shared/tools
[ -x "$py" ] || { echo "run .ci/run once to create .venv" >&2; exit 2; }
$py -c "import timef" || { echo "install the package: .venv/bin/pip install ./python" >&2; exit 2; }
cargo build --release --quiet --bin timef
cli=${CARGO_TARGET_DIR:-target}/release/timef
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
$py $tools/gen_bench.py "$work/in.arrow" --total-mib "$mib" --shape "$shape"
. scripts/bench_lib.sh
written_back
before_run() { rm -rf "$work/out-$1"; } # each command writes under $work/out-<label>
results=(
  "$(best_of cli "$cli" ingest arrow --quiet --root "$work/out-cli" --name b --version v1 "$work/in.arrow")"
  "$(best_of py-values $py scripts/bench_python.py values "$work/in.arrow" "$work/out-py-values" "$work/s-py-values")"
  "$(best_of py-loaders $py scripts/bench_python.py loaders "$work/in.arrow" "$work/out-py-loaders" "$work/s-py-loaders")"
  "$(best_of py-ingest $py scripts/bench_python.py ingest_arrow "$work/in.arrow" "$work/out-py-ingest" "$work/s-py-ingest")"
  "$(best_of ref_writer $py $tools/ref_writer.py "$work/in.arrow" --root "$work/out-ref_writer" --name b --version v1)"
)
for label in py-values py-loaders py-ingest; do
  diff -r "$work/out-cli" "$work/out-$label" >/dev/null || { echo "$label: bytes differ from the CLI's" >&2; exit 1; }
done
echo "py-values, py-loaders, py-ingest: byte-identical to the CLI's version"
python3 - "$mib" "$work" "${results[@]}" <<'PY'
import os, sys
mib = float(sys.argv[1]); work = sys.argv[2]; rows = [r.split() for r in sys.argv[3:]]
cli = float(rows[0][1])
print("whole process (best of runs); for Python also the time inside the script, from opening")
print("the input to the commit, i.e. without interpreter start-up, imports and teardown:")
for label, s, kb in rows:
    s = float(s)
    line = f"{label:>10}: {s:6.2f} s  {mib / s:7.1f} MiB/s  peak RSS {int(kb) / 1024:6.0f} MiB  {s / cli - 1:+6.1%} vs cli"
    inner = os.path.join(work, f"s-{label}")
    if os.path.exists(inner):
        w = min(float(x) for x in open(inner).read().split())
        line += f"   in-script {w:6.2f} s  {w / cli - 1:+6.1%} vs cli"
    print(line)
PY
