#!/usr/bin/env python3
"""What a DataLoader costs per batch of windows, one run (issue 26 §5):
timef.torch.WindowDataset(context 512, horizon 64, batch_size=256, threads=1)
iterated directly, through DataLoader(batch_size=None) in the main process,
and with 1 and 2 forked workers; 400 batches each.

  bench_loader.py VERSION_DIR

Prints windows/s and milliseconds per batch for each; the difference between
`direct` and `workers-1` is the cost of handing batches between processes.
"""
import sys
import time

import torch.utils.data

import timef.torch


def run(label: str, batches, limit: int = 400) -> None:
    t0 = time.perf_counter()
    windows = n = 0
    for batch in batches:
        windows += len(batch["start"])
        n += 1
        if n >= limit:
            break
    dt = time.perf_counter() - t0
    print(f"{label:10s} {windows / dt:10.0f} windows/s  {dt / n * 1e3:6.2f} ms a batch", flush=True)


def main() -> None:
    ds = timef.torch.WindowDataset(sys.argv[1], 512, 64, batch_size=256, threads=1)
    run("direct", iter(ds))
    run("workers-0", torch.utils.data.DataLoader(ds, batch_size=None, num_workers=0))
    for workers in (1, 2):
        dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers, multiprocessing_context="fork")
        run(f"workers-{workers}", dl)


if __name__ == "__main__":
    main()
