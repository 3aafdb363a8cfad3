"""Writes one logical GluonTS-style dataset in every column typing the Arrow
connector accepts (tests/inputs.rs ingests each and asserts byte-identical
versions). Usage: write_typings.py OUT_DIR; prints one file name per line.

Logical data, univariate: items "7", "12", "100"; starts 2020-01-01, 2020-01-02,
1900-03-01 (midnight UTC); targets [1,2,3], [4,5,6], [7,8,9]; freq "H".
Multivariate: the same items and starts, targets [[1,2,3],[4,5,6]],
[[7,8,9],[10,11,12]], [[13,14,15],[16,17,18]].
"""
import datetime as dt
import os
import sys

import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq

out = sys.argv[1]
IDS = [7, 12, 100]
DAYS = [dt.date(2020, 1, 1), dt.date(2020, 1, 2), dt.date(1900, 3, 1)]
UNI = [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
MULTI = [[[1, 2, 3], [4, 5, 6]], [[7, 8, 9], [10, 11, 12]], [[13, 14, 15], [16, 17, 18]]]
NUMBERS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32", "float64"]
written = []


def midnight(d, tz=None):
    return dt.datetime(d.year, d.month, d.day, tzinfo=tz)


def ids(kind):
    s = [str(i) for i in IDS]
    if kind in ("string", "large_string", "string_view"):
        return pa.array(s, getattr(pa, kind)())
    if kind.startswith("dict_"):
        return pa.array(s, getattr(pa, kind[5:])()).dictionary_encode()
    if kind == "dict_int32_keys_int16":
        return pa.array(s).dictionary_encode()
    return pa.array(IDS, getattr(pa, kind)())


def starts(kind):
    utc = dt.timezone.utc
    if kind == "date32":
        return pa.array(DAYS, pa.date32())
    if kind == "date64":
        return pa.array(DAYS, pa.date64())
    if kind == "iso_z":
        return pa.array([d.isoformat() + "T00:00:00Z" for d in DAYS])
    if kind == "iso_date":
        return pa.array([d.isoformat() for d in DAYS], pa.large_string())
    if kind == "iso_offset":
        return pa.array([d.isoformat() + "T02:00:00+02:00" for d in DAYS])
    unit, _, tz = kind.partition("_")
    return pa.array([midnight(d, utc if tz else None) for d in DAYS], pa.timestamp(unit, tz or None))


def number_list(values, leaf, kind):
    t = getattr(pa, leaf)()
    if leaf == "float16":
        import numpy as np

        arr = pa.array([np.array(v, dtype=np.float16) for v in values], pa.list_(t))
    else:
        arr = pa.array(values, pa.list_(t))
    return as_kind(arr, kind, t, 3)


def as_kind(arr, kind, t, n):
    """`arr` (a list array) as list kind `kind` (pyarrow casts to list views are not implemented)."""
    if kind in ("list_view", "large_list_view"):
        offsets = arr.offsets.to_pylist()
        sizes = [b - a for a, b in zip(offsets, offsets[1:])]
        cls = pa.ListViewArray if kind == "list_view" else pa.LargeListViewArray
        return cls.from_arrays(offsets[:-1], sizes, arr.values)
    return arr.cast(list_type(kind, t, n))


def list_type(kind, t, n):
    return {
        "list": pa.list_(t),
        "large_list": pa.large_list(t),
        "list_view": pa.list_view(t),
        "large_list_view": pa.large_list_view(t),
        "fixed_size_list": pa.list_(t, n),
    }[kind]


def multi_list(leaf, outer, inner):
    t = getattr(pa, leaf)()
    if leaf == "float16":
        import numpy as np

        base = pa.array([[np.array(c, dtype=np.float16) for c in v] for v in MULTI], pa.list_(pa.list_(t)))
    else:
        base = pa.array(MULTI, pa.list_(pa.list_(t)))
    inner_arr = as_kind(base.values, inner, t, 3)
    offsets = base.offsets
    rebuilt = pa.ListArray.from_arrays(offsets, inner_arr)
    return as_kind(rebuilt, outer, inner_arr.type, 2)


def write(name, table, formats, **parquet_kw):
    for fmt in formats:
        path = os.path.join(out, f"{name}.{fmt}")
        if fmt == "parquet":
            pq.write_table(table, path, **parquet_kw)
        elif fmt == "arrow":
            feather.write_feather(table, path)
        else:
            with pa.ipc.new_stream(path, table.schema) as w:
                w.write_table(table)
        written.append(os.path.basename(path))


def table(item_id="string", start="ms", target=None, freq="string"):
    cols = {"item_id": ids(item_id), "start": starts(start), "target": target if target is not None else number_list(UNI, "float32", "list")}
    if freq is not None:
        f = pa.array(["H"] * 3, getattr(pa, freq)() if not freq.startswith("dict") else pa.string())
        cols["freq"] = f.dictionary_encode() if freq.startswith("dict") else f
    return pa.table(cols)


BOTH = ("parquet", "arrow")
# item_id typings (views only in IPC: Parquet stores them as plain strings)
for k in ["string", "large_string", "dict_string", "dict_large_string", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]:
    write(f"uni-id-{k}", table(item_id=k), BOTH)
write("uni-id-string_view", table(item_id="string_view"), ("arrow", "arrows"))
# start typings
for k in ["s", "ms", "us", "ns", "s_utc", "ms_utc", "us_utc", "ns_utc", "date32", "date64", "iso_z", "iso_date", "iso_offset"]:
    write(f"uni-start-{k}", table(start=k), BOTH)
write("uni-start-int96", table(start="ns"), ("parquet",), use_deprecated_int96_timestamps=True)
# target typings: every number type in every list kind
for leaf in NUMBERS:
    for kind in ["list", "large_list", "fixed_size_list"]:
        write(f"uni-target-{kind}-{leaf}", table(target=number_list(UNI, leaf, kind)), BOTH)
    for kind in ["list_view", "large_list_view"]:
        write(f"uni-target-{kind}-{leaf}", table(target=number_list(UNI, leaf, kind)), ("arrow",))
# freq typings, and no freq (the rate then comes from the option)
for k in ["large_string", "dict_string"]:
    write(f"uni-freq-{k}", table(freq=k), BOTH)
write("uni-freq-none", table(freq=None), BOTH)
# multivariate
for leaf in ["int8", "uint64", "float16", "float32", "float64"]:
    for outer, inner in [("list", "list"), ("large_list", "list"), ("list", "fixed_size_list"), ("fixed_size_list", "fixed_size_list")]:
        write(f"multi-{outer}-{inner}-{leaf}", table(target=multi_list(leaf, outer, inner)), BOTH)
    write(f"multi-list_view-list_view-{leaf}", table(target=multi_list(leaf, "list_view", "list_view")), ("arrow",))
print("\n".join(written))
