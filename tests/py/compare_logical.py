#!/usr/bin/env python3
"""Compares the logical content of two TimeF versions through pyarrow alone:
samples (ids, series entries, windows), index rows (every column but the
physical pointers shard_path/row_group/row_offset), and every series' values.
Ids are compared as canonical strings whatever their storage. Prints a summary
line and exits 1 on the first difference.

usage: compare_logical.py VERSION_A VERSION_B
"""
import math
import sys

import pyarrow as pa
import pyarrow.parquet as pq


def canon(v):
    if isinstance(v, bytes):
        h = v.hex()
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
    return v


def read(path):
    return pq.ParquetFile(path, arrow_extensions_enabled=False).read()


def index_rows(d):
    t = read(f"{d}/time_series_index.parquet")
    rows = t.drop_columns(["shard_path", "row_group", "row_offset"]).to_pylist()
    for r in rows:
        r["time_series_id"] = canon(r["time_series_id"])
    return rows


def samples(d):
    rows = read(f"{d}/samples.parquet").to_pylist()
    for r in rows:
        for k in ("sample_id", "source_id", "subject_id"):
            r[k] = canon(r[k])
        r["series"] = [(canon(e["time_series_id"]), e["view"]) for e in r["series"]]
        r["metadata"] = sorted(r["metadata"] or [])
    return rows


def values(d):
    out = {}
    idx = read(f"{d}/time_series_index.parquet").to_pylist()
    shards = {}
    for r in idx:
        sp = r["shard_path"]
        if sp not in shards:
            pf = pq.ParquetFile(f"{d}/{sp}", arrow_extensions_enabled=False)
            shards[sp] = [pf.read_row_group(i) for i in range(pf.num_row_groups)]
        rg = shards[sp][r["row_group"]]
        row = rg.slice(r["row_offset"], 1)
        assert canon(row.column("time_series_id")[0].as_py()) == canon(r["time_series_id"])
        out.setdefault(canon(r["time_series_id"]), []).extend(row.column("values")[0].values.to_pylist())
    return out


def close(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return a == b or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def main(a, b):
    ia, ib = index_rows(a), index_rows(b)
    if len(ia) != len(ib):
        sys.exit(f"index rows differ: {len(ia)} vs {len(ib)}")
    for ra, rb in zip(ia, ib):
        for k in ra:
            if not close(ra[k], rb[k]):
                sys.exit(f"index {ra['time_series_id']}#{ra['chunk_idx']} {k}: {ra[k]!r} vs {rb[k]!r}")
    sa, sb = samples(a), samples(b)
    if sa != sb:
        diff = next((x, y) for x, y in zip(sa, sb) if x != y) if len(sa) == len(sb) else (len(sa), len(sb))
        sys.exit(f"samples differ: {diff}")
    va, vb = values(a), values(b)
    if va.keys() != vb.keys():
        sys.exit("series ids differ")
    for k in va:
        if va[k] != vb[k]:
            sys.exit(f"values of {k} differ")
    print(f"equal: {len(sa)} samples, {len(va)} series, {len(ia)} index rows, {sum(map(len, va.values()))} values")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
