#!/usr/bin/env python3
"""pyarrow sees the statistics of every FLOAT/DOUBLE column chunk of every
file of the given versions and prunes on them (docs/format.md §3, "Float
statistics and column order").

Checks, per version: every float column chunk of every Parquet file that
holds a value has `statistics.has_min_max`; a zero minimum is -0.0 and a zero maximum +0.0 (the
type-defined order's writing rule); a pyarrow dataset filter on the index's
`t_start_s` beyond its maximum keeps fewer row groups than the index has (none),
and one at its minimum keeps them all.

usage: float_statistics.py VERSION_DIR...
prints one line per version: `<dir>: <n> float column chunks with min/max;
index row groups <all> -> <kept>`; exit 1 on the first failure.
"""
import glob
import math
import os
import sys

import pyarrow.dataset as ds
import pyarrow.parquet as pq


def main():
    for version in sys.argv[1:]:
        chunks = 0
        for path in sorted(glob.glob(os.path.join(version, "**", "*.parquet"), recursive=True)):
            md = pq.ParquetFile(path).metadata
            for g in range(md.num_row_groups):
                for c in range(md.num_columns):
                    col = md.row_group(g).column(c)
                    if col.physical_type not in ("FLOAT", "DOUBLE"):
                        continue
                    s = col.statistics
                    where = f"{path} row group {g} {col.path_in_schema}"
                    if s is not None and s.has_null_count and s.null_count == col.num_values:
                        continue  # all null: there is no min or max to have
                    if s is None or not s.has_min_max:
                        sys.exit(f"FAIL {where}: no min/max for pyarrow")
                    if s.min == 0 and not math.copysign(1.0, s.min) < 0:
                        sys.exit(f"FAIL {where}: zero min {s.min!r} is not -0.0")
                    if s.max == 0 and not math.copysign(1.0, s.max) > 0:
                        sys.exit(f"FAIL {where}: zero max {s.max!r} is not +0.0")
                    chunks += 1
        index = os.path.join(version, "time_series_index.parquet")
        fragment = next(iter(ds.dataset(index, format="parquet").get_fragments()))
        groups = fragment.split_by_row_group()
        t = pq.read_table(index, columns=["t_start_s"]).column(0).to_pylist()
        beyond = fragment.split_by_row_group(filter=ds.field("t_start_s") > max(t))
        at_min = fragment.split_by_row_group(filter=ds.field("t_start_s") >= min(t))
        if not (len(beyond) < len(groups) and len(at_min) == len(groups)):
            sys.exit(f"FAIL {index}: row groups {len(groups)}, kept {len(beyond)} beyond the max, {len(at_min)} from the min")
        print(f"{version}: {chunks} float column chunks with min/max; index row groups {len(groups)} -> {len(beyond)}")


main()
