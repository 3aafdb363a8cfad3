#!/usr/bin/env python3
"""The project's own conformance check of one committed TimeF version, with
pyarrow alone (no timef code): what a consumer of a version relies on.

Checks (docs/format.md):
- manifest: `format` = "timef", `format_version` = 1, `files` lists every
  Parquet file of the directory exactly once, each with its size and sha256;
- every file reads with pyarrow, page CRCs verified, and its row count is the
  manifest's;
- counts: samples, time series, chunks, values, annotations, shards, task rows;
- index: sorted by (spec_type, channel, time_series_id, chunk_idx); every row
  points (shard_path, row_group, row_offset) at the shard row with the same
  series id and chunk index, whose `values` list has `n_values` values; chunk
  statistics equal the values'; chunks of a series are contiguous from 0;
- references: every series a sample lists is in the index; every sample an
  annotation or a task row names exists.

Ids are compared as canonical strings whatever their storage (string,
fixed_size_binary(16), arrow.uuid).

usage: conformance.py VERSION_DIR
prints `conforming: 0 violation(s)` or one `FAIL ...` line per violation
followed by `NOT conforming: N violation(s)`; exit 0 / 1; 2 if unusable.
"""
import hashlib
import json
import math
import os
import sys
import uuid

import pyarrow as pa
import pyarrow.parquet as pq

failures = []


def fail(msg):
    failures.append(msg)
    print(f"FAIL {msg}")


def canon(v):
    if isinstance(v, (bytes, bytearray)) and len(v) == 16:
        return str(uuid.UUID(bytes=bytes(v)))
    if isinstance(v, uuid.UUID):
        return str(v)
    return v


def read(path):
    return pq.ParquetFile(path, page_checksum_verification=True).read()


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def main(version):
    try:
        with open(os.path.join(version, "manifest.json"), "rb") as f:
            m = json.load(f)
    except (OSError, ValueError) as e:
        print(f"unusable: manifest.json: {e}")
        return 2
    if m.get("format") != "timef" or m.get("format_version") != 1:
        fail(f"manifest: format {m.get('format')!r} version {m.get('format_version')!r}")

    on_disk = sorted(
        os.path.relpath(os.path.join(d, f), version).replace(os.sep, "/")
        for d, _, fs in os.walk(version)
        for f in fs
        if f.endswith(".parquet")
    )
    listed = [e["path"] for e in m.get("files", [])]
    if sorted(listed) != on_disk or len(set(listed)) != len(listed):
        fail(f"manifest: files listed {sorted(listed)} but on disk {on_disk}")

    tables = {}
    for e in m.get("files", []):
        p = os.path.join(version, e["path"])
        if not os.path.isfile(p):
            continue
        if os.path.getsize(p) != e["bytes"]:
            fail(f"{e['path']}: {os.path.getsize(p)} bytes, manifest says {e['bytes']}")
        if sha256(p) != e["sha256"]:
            fail(f"{e['path']}: sha256 differs from the manifest")
        try:
            t = read(p)
        except Exception as ex:  # any reader error is a finding, not a crash
            fail(f"{e['path']}: pyarrow cannot read it: {ex}")
            continue
        if t.num_rows != e["rows"]:
            fail(f"{e['path']}: {t.num_rows} rows, manifest says {e['rows']}")
        tables[e["path"]] = t

    index = tables.get("time_series_index.parquet")
    samples = tables.get("samples.parquet")
    if index is None or samples is None:
        fail("index or samples file missing or unreadable")
        return finish()
    rows = index.to_pylist()
    for r in rows:
        r["time_series_id"] = canon(r["time_series_id"])
    keys = [(r["spec_type"], r["channel"], r["time_series_id"], r["chunk_idx"]) for r in rows]
    if keys != sorted(keys):
        fail("time_series_index.parquet: rows not sorted by (spec_type, channel, time_series_id, chunk_idx)")

    shards = {}
    n_values = 0
    next_chunk = {}
    for i, r in enumerate(rows):
        sid = r["time_series_id"]
        if r["chunk_idx"] != next_chunk.get(sid, 0):
            fail(f"index row {i}: series {sid} chunk {r['chunk_idx']} out of sequence")
        next_chunk[sid] = r["chunk_idx"] + 1
        path = r["shard_path"]
        if path not in tables:
            fail(f"index row {i}: shard {path!r} is not a listed, readable file")
            continue
        if path not in shards:
            f = pq.ParquetFile(os.path.join(version, path))
            starts, acc = [], 0
            for g in range(f.metadata.num_row_groups):
                starts.append(acc)
                acc += f.metadata.row_group(g).num_rows
            shards[path] = (tables[path], starts)
        shard, starts = shards[path]
        if not 0 <= r["row_group"] < len(starts):
            fail(f"index row {i}: row group {r['row_group']} not in {path}")
            continue
        at = starts[r["row_group"]] + r["row_offset"]
        if not 0 <= at < shard.num_rows:
            fail(f"index row {i}: row offset {r['row_offset']} not in {path}")
            continue
        row = shard.slice(at, 1).to_pylist()[0]
        if canon(row["time_series_id"]) != sid or row["chunk_idx"] != r["chunk_idx"]:
            fail(f"index row {i}: points at ({canon(row['time_series_id'])}, {row['chunk_idx']}) in {path}")
            continue
        values = row["values"]
        n_values += len(values)
        if len(values) != r["n_values"]:
            fail(f"index row {i}: n_values {r['n_values']} but the shard row holds {len(values)}")
            continue
        if values and not all(math.isfinite(v) for v in values):
            fail(f"index row {i}: non-finite value in {sid}")
        elif values and (min(values) != r["min"] or max(values) != r["max"]):
            fail(f"index row {i}: min/max {r['min']}/{r['max']} but values give {min(values)}/{max(values)}")
        elif values and not math.isclose(sum(values) / len(values), r["mean"], rel_tol=1e-9, abs_tol=1e-9):
            fail(f"index row {i}: mean {r['mean']} but values give {sum(values) / len(values)}")

    series_ids = set(next_chunk)
    sample_rows = samples.to_pylist()
    sample_ids = {canon(s["sample_id"]) for s in sample_rows}
    for s in sample_rows:
        for ref in s["series"] or []:
            if canon(ref["time_series_id"]) not in series_ids:
                fail(f"sample {canon(s['sample_id'])}: series {canon(ref['time_series_id'])} not in the index")
    named = []
    ann = tables.get("annotations.parquet")
    if ann is not None:
        named += [("annotations.parquet", canon(x)) for x in ann.column("sample_id").to_pylist()]
    task_rows = {}
    for path, t in sorted(tables.items()):
        if not path.startswith("tasks/"):
            continue
        name = path.split("/")[1].removeprefix("task=")
        task_rows[name] = task_rows.get(name, 0) + t.num_rows
        for r in t.to_pylist():
            for x in (r["sample_ids"] or []) + (r["context_sample_ids"] or []) + [r["target_sample_id"]]:
                if x is not None:
                    named.append((path, canon(x)))
    for path, x in named:
        if x not in sample_ids:
            fail(f"{path}: sample {x} does not exist")

    c = m.get("counts", {})
    want = {
        "samples": samples.num_rows,
        "time_series": len(series_ids),
        "chunks": len(rows),
        "values": n_values,
        "annotations": len({canon(x) for x in ann.column("annotation_id").to_pylist()}) if ann is not None else 0,
        "shards": len([p for p in tables if p.startswith("time_series/")]),
        "tasks": task_rows,
    }
    for k, v in want.items():
        if c.get(k) != v:
            fail(f"manifest: counts.{k} = {c.get(k)!r}, the files give {v!r}")
    return finish()


def finish():
    if failures:
        print(f"NOT conforming: {len(failures)} violation(s)")
        return 1
    print("conforming: 0 violation(s)")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
