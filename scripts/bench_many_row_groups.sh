#!/usr/bin/env bash
# Ingest time and peak RSS of a Parquet input with many small row groups (10
# series of 32 float32 values each), against the same data as Arrow IPC, for
# 800, 8000 and 80000 row groups (or the counts given). Time should grow
# linearly with the input: the footer is parsed once, each row group read once.
#   scripts/bench_many_row_groups.sh [ROW_GROUPS...]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench_lib.sh
py=.venv/bin/python
[ -x "$py" ] || { echo "run .ci/run once to create .venv" >&2; exit 2; }
cargo build --release --quiet
bin=${CARGO_TARGET_DIR:-target}/release/timef
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
counts=("$@"); [ ${#counts[@]} -gt 0 ] || counts=(800 8000 80000)
printf "%12s %10s %8s %10s %12s\n" row_groups series input seconds peak_rss_mib
for groups in "${counts[@]}"; do
  $py - "$work" "$groups" <<'PY'
import sys
import numpy as np, pyarrow as pa, pyarrow.parquet as pq, pyarrow.feather as feather
work, groups = sys.argv[1], int(sys.argv[2])
per_group, length = 10, 32
n = groups * per_group
rng = np.random.default_rng(0)
values = rng.standard_normal(n * length).astype(np.float32)
target = pa.ListArray.from_arrays(pa.array(np.arange(0, n * length + 1, length, dtype=np.int32)), pa.array(values))
t = pa.table({"item_id": pa.array([f"s{i:07d}" for i in range(n)]), "target": target})
pq.write_table(t, f"{work}/in.parquet", row_group_size=per_group)
feather.write_feather(t, f"{work}/in.arrow")
assert pq.ParquetFile(f"{work}/in.parquet").metadata.num_row_groups == groups
PY
  for input in in.parquet in.arrow; do
    rm -rf "$work/out"
    timed "$work/t" "$bin" ingest arrow --quiet --root "$work/out" --name b --version v1 "$work/$input" >/dev/null
    read -r s kb < "$work/t"
    printf "%12s %10s %8s %10s %12s\n" "$groups" "$((groups * 10))" "${input#in.}" "$s" "$((kb / 1024))"
  done
done
