#!/usr/bin/env python3
"""The peers of scripts/bench_read.sh, one mode per process (so /usr/bin/time
gives each its own wall time and peak RSS):

  bench_read_peers.py pyarrow-scan VERSION_DIR
      pyarrow.parquet.read_table of VERSION_DIR/time_series/ (time_series_id,
      chunk_idx, values), then the values regrouped by series: one float32
      numpy array per series, its chunks concatenated in chunk order.
  bench_read_peers.py duckdb-scan VERSION_DIR
      DuckDB over the same shards: values grouped by series in chunk order
      (flatten(list(values ORDER BY chunk_idx)) ... GROUP BY time_series_id),
      fetched as an Arrow table.
  bench_read_peers.py pick-ids VERSION_DIR N SEED OUT
      N distinct series ids drawn with random.Random(SEED) from the index,
      one per line, into OUT (the same ids for every reader).
  bench_read_peers.py pyarrow-random VERSION_DIR IDS_FILE
      per id: the index (read once, untimed) picks the shard, then
      pq.read_table(shard, filters=[("time_series_id", "=", id)]) and the
      values concatenated in chunk order; prints p50/p99/mean latency in ms.

Each mode prints one summary line on stdout.
"""
import random
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq


def ids_as_str(col):
    if pa.types.is_fixed_size_binary(col.type):
        import uuid
        return [str(uuid.UUID(bytes=b)) for b in col.to_pylist()]
    return col.to_pylist()


def pyarrow_scan(d):
    t = pq.read_table(f"{d}/time_series", columns=["time_series_id", "chunk_idx", "values"])
    t = t.combine_chunks()
    ids = t.column("time_series_id").chunk(0)
    values = t.column("values").chunk(0)
    flat = values.values.to_numpy(zero_copy_only=False)
    offsets = values.offsets.to_numpy()
    # shards are sorted by series then chunk: a series' chunks are one run of rows
    starts = np.flatnonzero(pc.not_equal(ids[1:], ids[:-1]).to_numpy(zero_copy_only=False)) + 1
    bounds = np.concatenate(([0], starts, [len(ids)]))
    series = {}
    for a, b in zip(bounds[:-1], bounds[1:]):
        series[ids[int(a)].as_py()] = flat[offsets[a]:offsets[b]]
    n = sum(len(v) for v in series.values())
    print(f"{len(series)} series, {t.num_rows} chunks, {n} values")


def duckdb_scan(d):
    import duckdb
    con = duckdb.connect()
    t = con.sql(
        f"SELECT time_series_id, flatten(list(\"values\" ORDER BY chunk_idx)) AS v "
        f"FROM read_parquet('{d}/time_series/*.parquet') GROUP BY time_series_id"
    ).arrow()
    if isinstance(t, pa.RecordBatchReader):
        t = t.read_all()
    n = pc.sum(pc.list_value_length(t.column("v"))).as_py()
    print(f"{t.num_rows} series, {n} values")


def pick_ids(d, n, seed, out):
    ids = sorted(set(ids_as_str(pq.read_table(f"{d}/time_series_index.parquet", columns=["time_series_id"]).column(0))))
    chosen = random.Random(int(seed)).sample(ids, min(int(n), len(ids)))
    with open(out, "w") as f:
        f.write("\n".join(chosen) + "\n")
    print(f"{len(chosen)} of {len(ids)} series")


def pyarrow_random(d, ids_file):
    index = pq.read_table(f"{d}/time_series_index.parquet", columns=["time_series_id", "shard_path"])
    ids = ids_as_str(index.column("time_series_id"))
    shard_of = dict(zip(ids, index.column("shard_path").to_pylist()))
    uuid16 = pa.types.is_fixed_size_binary(index.column("time_series_id").type)
    wanted = [l.strip() for l in open(ids_file) if l.strip()]
    lat = []
    for sid in wanted:
        t0 = time.perf_counter()
        key = __import__("uuid").UUID(sid).bytes if uuid16 else sid
        t = pq.read_table(f"{d}/{shard_of[sid]}", columns=["chunk_idx", "values"],
                          filters=[("time_series_id", "=", key)])
        t = t.sort_by("chunk_idx")
        v = pc.list_flatten(t.column("values")).to_numpy()
        lat.append(time.perf_counter() - t0)
        assert len(v) > 0, sid
    lat = np.array(lat) * 1e3
    print(f"p50 {np.percentile(lat, 50):.3f} ms  p99 {np.percentile(lat, 99):.3f} ms  mean {lat.mean():.3f} ms  ({len(lat)} series)")


if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    {"pyarrow-scan": pyarrow_scan, "duckdb-scan": duckdb_scan, "pick-ids": pick_ids,
     "pyarrow-random": pyarrow_random}[mode](*args)
