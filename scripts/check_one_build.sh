#!/usr/bin/env bash
# One compiled copy of each dependency serves the binary, the tests and the
# Python package: `cargo build --release`, `cargo test --release --no-run` and
# the package's build (`cargo build --release -p timef-python`, with the
# features python/pyproject.toml's [tool.maturin] passes, as `pip install
# ./python` builds it) must name the same .rlib for each crate below. Run
# after those builds (.ci/run does), it compiles nothing; on a cold target it
# builds all three. The features that keep them equal: Cargo.toml, "One build".
#   scripts/check_one_build.sh
set -euo pipefail
cd "$(dirname "$0")/.."
crates="arrow_array parquet object_store zstd_sys"
rlibs() { # cargo arguments... -> "crate file.rlib" lines, sorted
  cargo "$@" --message-format=json-render-diagnostics | python3 -c '
import json, os, sys
crates = set(sys.argv[1].split())
out = set()
for line in sys.stdin:
    m = json.loads(line)
    name = m.get("target", {}).get("name")
    if m.get("reason") == "compiler-artifact" and name in crates:
        out.update(f"{name} {os.path.basename(f)}" for f in m["filenames"] if f.endswith(".rlib"))
print("\n".join(sorted(out)))
' "$crates"
}
binary=$(rlibs build --release)
tests=$(rlibs test --release --no-run)
python=$(rlibs build --release -p timef-python --features pyo3/extension-module)
status=0
for c in $crates; do
  b=$(grep "^$c " <<<"$binary" || true); t=$(grep "^$c " <<<"$tests" || true); p=$(grep "^$c " <<<"$python" || true)
  if [ -z "$b" ] || [ "$(wc -l <<<"$b")" -ne 1 ] || [ "$b" != "$t" ] || [ "$b" != "$p" ]; then
    echo "check_one_build: $c is built more than once:" >&2
    printf '  cargo build:  %s\n  cargo test:   %s\n  python:       %s\n' "${b:-none}" "${t:-none}" "${p:-none}" >&2
    status=1
  else
    echo "one build of $c: ${b#* }"
  fi
done
exit "$status"
