#!/usr/bin/env python3
"""Writes a GluonTS-style Arrow IPC file of N series of 16 float32 values each.

Deterministic (seeded; the same N gives the same bytes): `item_id` "w0000000"...,
one `start` for every row, `target` list<float32> of 16 values. Written in
batches of 65536 rows so generating 1e7 series needs little memory.

    scripts/gen_many_series.py OUT.arrow N
"""
import sys

import numpy as np
import pyarrow as pa

VALUES_PER_SERIES = 16
BATCH_ROWS = 65536


def main() -> None:
    out, n = sys.argv[1], int(sys.argv[2])
    rng = np.random.default_rng(20261201)
    start = pa.scalar(np.datetime64("2020-01-01T00:00:00", "s"), type=pa.timestamp("s"))
    schema = pa.schema([("item_id", pa.string()), ("start", pa.timestamp("s")), ("target", pa.list_(pa.float32()))])
    width = max(7, len(str(n - 1)))
    with pa.OSFile(out, "wb") as sink, pa.ipc.new_file(sink, schema) as w:
        for lo in range(0, n, BATCH_ROWS):
            rows = min(BATCH_ROWS, n - lo)
            ids = pa.array([f"w{i:0{width}d}" for i in range(lo, lo + rows)])
            values = rng.standard_normal(rows * VALUES_PER_SERIES, dtype=np.float32)
            offsets = np.arange(0, rows * VALUES_PER_SERIES + 1, VALUES_PER_SERIES, dtype=np.int32)
            target = pa.ListArray.from_arrays(pa.array(offsets), pa.array(values))
            starts = pa.repeat(start, rows) if hasattr(pa, "repeat") else pa.array([start.value] * rows, pa.timestamp("s"))
            w.write_batch(pa.record_batch([ids, starts, target], schema=schema))


if __name__ == "__main__":
    main()
