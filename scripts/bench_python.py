#!/usr/bin/env python3
"""One timed Python write of a gen_bench.py Arrow file (used by bench_python.sh).

  bench_python.py MODE IN.arrow ROOT [TIMES_FILE]
MODE: values       every series added as a numpy array (a zero-copy view of the table)
      loaders      every series added with a loader returning that view
      ingest_arrow timef.ingest_arrow on the pyarrow Table (Arrow C stream)
Each writes ROOT/b/v1 with the ids `timef ingest arrow` gives, so the bytes match.
With TIMES_FILE, appends the seconds from opening the input to the commit (the
process time without interpreter start-up, imports and teardown).
"""
import sys
import time

import pyarrow as pa
import pyarrow.ipc as ipc

import timef

mode, src, root = sys.argv[1:4]
start = time.perf_counter()


def done() -> None:
    if len(sys.argv) > 4:
        with open(sys.argv[4], "a") as f:
            f.write(f"{time.perf_counter() - start:.3f}\n")


table = ipc.open_file(pa.memory_map(src)).read_all()
if mode == "ingest_arrow":
    timef.ingest_arrow(table, root, dataset_name="b", dataset_version="v1")
    done()
    sys.exit(0)
ds = timef.TimeFDataset("b", "v1")
ds.add_source(source_id="b", name="b")
for batch in table.to_batches():
    # per batch, so every series is a zero-copy view of the memory-mapped file
    target = batch.column("target")
    offsets, flat = target.offsets.to_numpy(), target.flatten().to_numpy()
    starts = batch.column("start").cast(pa.int64()).to_pylist()
    for i, item in enumerate(batch.column("item_id").to_pylist()):
        view = flat[offsets[i] - offsets[0]:offsets[i + 1] - offsets[0]]
        meta = dict(time_series_id=item, spec_type="unknown", channel="0", sampling_rate_hz=1.0,
                    t_start_s=float(starts[i]))
        if mode == "values":
            ds.add_series(**meta, values=view)
        else:
            ds.add_series(**meta, loader=lambda v=view: v)
        ds.add_sample(sample_id=item, source_id="b", series=[item])
with timef.TimeFWriter(root, ds) as writer:
    writer.write()
done()
