#!/usr/bin/env python3
"""Training windows, one run (issue 26, section 5): timef against HF datasets.

  bench_windows.py WORK [--total-mib 256] [--context 512] [--horizon 64] [--s3 | --s3-endpoint URL]
                        [--modes timef,loader-1,...] [--repeat N] [--gen PATH]

Makes (once, kept in WORK) a ../shared/tools/gen_bench.py mixed input of
--total-mib, its TimeF version (timef.ingest_arrow, default options) and an
Arrow stream file of the same rows for HF `datasets`; then, each mode in a
process of its own (so its peak RSS is its own):

  timef-1     Version.windows(context, horizon, shuffle=True, batch_size=256,
              threads=1): every window of the epoch, one decoding thread
  timef       the same with threads=0 (one per core)
  timef-1x2   two timef-1 processes at once: what this machine gives two
              independent single-thread readers against one (the ceiling of
              "2 workers / 1": no DataLoader, nothing shared but the machine)
  loader-1/2  timef.torch.WindowDataset(batch_size=256) through
              DataLoader(batch_size=None, num_workers=1|2), threads=1 each;
              also the CPU time a batch costs in the main process and in the
              workers, and the cores that keeps busy
  hf          Dataset.from_file(stream).with_format("numpy"): random windows
              ds[row]["target"][s:s+L] (rows and starts drawn uniformly among
              the same non-overlapping windows), for --hf-seconds
  zstd        zstd level-3 single-thread decompression of the same values in
              1 MiB frames (pyarrow's codec): the decoder's ceiling
  timef-s3    timef with threads=0 on the same version written to S3: a moto server
              this script starts on 127.0.0.1 and stops (--s3), or the one at
              --s3-endpoint (keys from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY);
              the version is written once per server and reused (or uploaded
              beforehand at s3://timef-bench/data/bench/mixed-<MiB>, for a
              server without conditional writes)

With --repeat N the modes run N rounds, one mode after another each round,
and each line is the mode's median run (this machine's speed drifts by up to
a third from one minute to the next).

Prints one line per mode: windows/s, decoded MiB/s, peak RSS MiB, CPU seconds
of the mode's processes (DataLoader workers included), and for timef-s3 the
GET requests and bytes the read took.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GEN = REPO.parent / "shared" / "tools" / "gen_bench.py"


def rss_mib() -> float:
    # this process's own peak (VmHWM): ru_maxrss would also count the parent's
    # resident memory at the fork (exec carries it over into the child's)
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def mode_timef(url: str, ctx: int, horizon: int, threads: int, options: dict | None) -> dict:
    import timef

    v = timef.open(url, storage_options=options)
    t0 = time.perf_counter()
    n = 0
    plan = v.window_plan(ctx, horizon, shuffle=True, seed=0, threads=threads)
    for b in plan.windows(batch_size=256):
        n += len(b["start"])
    dt = time.perf_counter() - t0
    return {"windows": n, "seconds": dt, "values": n * (ctx + horizon), "reads": plan.read_stats()}


def mode_loader(url: str, ctx: int, horizon: int, workers: int) -> dict:
    import torch.utils.data

    import timef.torch

    ds = timef.torch.WindowDataset(url, ctx, horizon, batch_size=256, threads=1)
    dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers, multiprocessing_context="fork")
    t0, c0 = time.perf_counter(), time.process_time()
    batches = n = 0
    for b in dl:
        batches += 1
        n += len(b["start"])
    dt, main_cpu = time.perf_counter() - t0, time.process_time() - c0
    del dl  # the workers have exited: their CPU time is counted in RUSAGE_CHILDREN
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"windows": n, "seconds": dt, "values": n * (ctx + horizon),
            "per_batch_ms": {"main": 1e3 * main_cpu / batches, "workers": 1e3 * (c.ru_utime + c.ru_stime) / batches,
                             "wall": 1e3 * dt / batches}}


def mode_hf(stream: str, ctx: int, horizon: int, seconds: float) -> dict:
    import numpy as np
    from datasets import Dataset

    ds = Dataset.from_file(stream).with_format("numpy")
    length = ctx + horizon
    table = ds.with_format("arrow")[:]["target"]
    lengths = np.diff(table.combine_chunks().offsets.to_numpy())
    per_row = lengths // length
    rows = np.repeat(np.arange(len(per_row)), per_row)
    starts = np.concatenate([np.arange(k) * length for k in per_row])
    rng = np.random.default_rng(0)
    order = rng.permutation(len(rows))
    t0 = time.perf_counter()
    n = 0
    for i in order:
        w = ds[int(rows[i])]["target"][starts[i] : starts[i] + length]
        assert len(w) == length
        n += 1
        if n % 256 == 0 and time.perf_counter() - t0 > seconds:
            break
    dt = time.perf_counter() - t0
    return {"windows": n, "seconds": dt, "values": n * length, "epoch_windows": int(len(rows))}


def mode_zstd(stream: str) -> dict:
    import numpy as np
    import pyarrow as pa

    with pa.memory_map(stream) as f:
        t = pa.ipc.open_stream(f).read_all()
    values = t.column("target").combine_chunks().values.to_numpy().tobytes()
    codec = pa.Codec("zstd", compression_level=3)
    frame = 1 << 20
    frames = [codec.compress(values[i : i + frame], asbytes=True) for i in range(0, len(values), frame)]
    t0 = time.perf_counter()
    for i, c in enumerate(frames):
        codec.decompress(c, decompressed_size=min(frame, len(values) - i * frame), asbytes=True)
    dt = time.perf_counter() - t0
    return {"windows": 0, "seconds": dt, "values": len(values) // 4}


def run(mode: str, *args: str) -> dict:
    """One mode in a process of its own; adds `cpu_s`, the CPU seconds (user +
    system) of that process and its children (DataLoader workers) together."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([sys.executable, __file__, "--mode", mode, *args], capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise SystemExit(f"{mode} failed:\n{out.stderr[-4000:]}")
    r = json.loads(out.stdout.strip().splitlines()[-1])
    r["cpu_s"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return r


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("work", nargs="?")
    ap.add_argument("--total-mib", type=float, default=256)
    ap.add_argument("--context", type=int, default=512)
    ap.add_argument("--horizon", type=int, default=64)
    ap.add_argument("--hf-seconds", type=float, default=20)
    ap.add_argument("--s3-endpoint")
    ap.add_argument("--s3", action="store_true", help="start a moto S3 server on 127.0.0.1 for timef-s3")
    ap.add_argument("--gen", default=str(GEN), help="gen_bench.py (default: ../shared/tools/gen_bench.py)")
    ap.add_argument("--modes", help="comma-separated modes to run (default: all)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="run the modes this many rounds and report each mode's median run (default 1)")
    ap.add_argument("--mode")
    ap.add_argument("--arg", action="append", default=[])
    a = ap.parse_args()
    if a.mode:
        args = a.arg
        if a.mode.startswith("timef"):
            options = json.loads(args[2]) if len(args) > 2 else None
            r = mode_timef(args[0], a.context, a.horizon, int(args[1]), options)
        elif a.mode.startswith("loader"):
            r = mode_loader(args[0], a.context, a.horizon, int(args[1]))
        elif a.mode == "hf":
            r = mode_hf(args[0], a.context, a.horizon, a.hf_seconds)
        else:
            r = mode_zstd(args[0])
        r["rss_mib"] = rss_mib()
        print(json.dumps(r))
        return

    import pyarrow as pa

    import timef

    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    tag = f"mixed-{a.total_mib:g}"
    source = work / f"{tag}.arrow"
    stream = work / f"{tag}.stream.arrow"
    if not source.exists():
        subprocess.run([sys.executable, a.gen, str(source), "--total-mib", str(a.total_mib), "--shape", "mixed"],
                       check=True)
    if not stream.exists():
        with pa.memory_map(str(source)) as f:
            t = pa.ipc.open_file(f).read_all()
        with pa.ipc.new_stream(str(stream), t.schema) as w:
            w.write_table(t)
    vdir = work / "timef" / "bench" / tag
    if not vdir.exists():
        timef.ingest_arrow(str(source), work / "timef", dataset_name="bench", dataset_version=tag)
    size = sum(p.stat().st_size for p in (vdir / "time_series").iterdir())
    print(f"input {source.stat().st_size / 2**20:.0f} MiB of float32, version shards {size / 2**20:.0f} MiB; "
          f"context {a.context}, horizon {a.horizon}, shuffle on, seed 0")
    common = ["--context", str(a.context), "--horizon", str(a.horizon), "--hf-seconds", str(a.hf_seconds)]
    plan = [("zstd", [str(stream)]), ("timef-1", [str(vdir), "1"]), ("timef", [str(vdir), "0"]),
            ("timef-1x2", [str(vdir), "1"]), ("loader-1", [str(vdir), "1"]), ("loader-2", [str(vdir), "2"]), ("hf", [str(stream)])]
    moto = start_moto() if a.s3 else None
    endpoint = a.s3_endpoint or (moto[1] if moto else None)
    if endpoint:
        # moto takes any keys; another server (--s3-endpoint) its own, from the environment
        keys = ("testing", "testing") if moto else (os.environ.get("AWS_ACCESS_KEY_ID", "testing"),
                                                    os.environ.get("AWS_SECRET_ACCESS_KEY", "testing"))
        options = {"aws_endpoint": endpoint, "aws_allow_http": "true", "aws_access_key_id": keys[0],
                   "aws_secret_access_key": keys[1], "aws_region": "us-east-1"}
        url = copy_to_s3(source, endpoint, tag, options)
        plan.append(("timef-s3", [url, "0", json.dumps(options)]))
    try:
        measure(a, plan, common)
    finally:
        if moto:
            moto[0].terminate()
            moto[0].wait()


def start_moto() -> tuple[subprocess.Popen, str]:
    """A moto S3 server on a free port of 127.0.0.1 (stopped by the caller), once it answers."""
    import socket
    import urllib.request

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            urllib.request.urlopen(endpoint, timeout=1).read()
            return server, endpoint
        except OSError:
            time.sleep(0.1)
    server.terminate()
    raise SystemExit(f"moto did not answer on {endpoint}")


def measure_mode(mode: str, argv: list[str]) -> dict:
    """One run of `mode` (timef-1x2: two timef-1 processes at once)."""
    if mode != "timef-1x2":
        return run(mode, *argv)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        pair = list(pool.map(lambda _: run("timef-1", *argv), range(2)))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # both processes' windows in the time the slower took
    return {**pair[0], "windows": pair[0]["windows"] + pair[1]["windows"],
            "values": pair[0]["values"] + pair[1]["values"], "seconds": max(p["seconds"] for p in pair),
            "rss_mib": max(p["rss_mib"] for p in pair),
            # both processes' CPU (each run's own count overlaps the other's)
            "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)}


def measure(a: argparse.Namespace, plan: list, common: list[str]) -> None:
    results = {}
    if a.modes:
        plan = [(m, args) for m, args in plan if m in a.modes.split(",")]
    rounds: dict[str, list[dict]] = {}
    for _ in range(a.repeat):
        # the modes one after another, again each round: a machine whose speed
        # drifts slows every mode of a round alike
        for mode, args in plan:
            rounds.setdefault(mode, []).append(measure_mode(mode, [*common, *[x for arg in args for x in ("--arg", arg)]]))
    if a.repeat > 1:
        print(f"each line: the median of {a.repeat} runs")
    for mode, _ in plan:
        runs = sorted(rounds[mode], key=lambda r: r["seconds"])
        r = runs[len(runs) // 2]  # the median run (of an even count, the slower middle one)
        results[mode] = r
        rate = r["windows"] / r["seconds"] if r["windows"] else 0
        mib_s = r["values"] * 4 / 2**20 / r["seconds"]
        print(f"{mode:9s} {r['windows']:>8d} windows in {r['seconds']:7.2f} s: {rate:>10.0f} windows/s, "
              f"{mib_s:8.0f} MiB/s of values, peak RSS {r['rss_mib']:.0f} MiB, {r['cpu_s']:.1f} CPU s")
        if r.get("per_batch_ms"):
            m = r["per_batch_ms"]
            print(f"          per batch of 256: {m['wall']:.2f} ms wall; CPU {m['main']:.2f} ms in the main process, "
                  f"{m['workers']:.2f} ms in the workers (all their threads): "
                  f"{(m['main'] + m['workers']) / m['wall']:.2f} cores busy")
        if r.get("reads"):
            s = r["reads"]
            print(f"          {s['requests']} requests ({s['bytes'] / 2**20:.0f} MiB), of which read ahead "
                  f"{s['read_ahead_requests']} ({s['read_ahead_bytes'] / 2**20:.0f} MiB); "
                  f"{s['read_ahead_hits']} reads answered from read-ahead bytes")
    if not {"zstd", "timef-1", "timef", "timef-1x2", "loader-1", "loader-2", "hf"} <= results.keys():
        return  # the ratios need every local mode
    t, hf = results["timef"], results["hf"]
    print(f"timef / hf windows/s: {t['windows'] / t['seconds'] / (hf['windows'] / hf['seconds']):.1f}x; "
          f"timef-1 decoded MiB/s / zstd: "
          f"{results['timef-1']['values'] / results['timef-1']['seconds'] / (results['zstd']['values'] / results['zstd']['seconds']):.2f}; "
          f"2 workers / 1: {results['loader-1']['seconds'] / results['loader-2']['seconds']:.2f}x "
          f"(two timef-1 processes at once / one: "
          f"{results['timef-1']['seconds'] * 2 / results['timef-1x2']['seconds']:.2f}x)")
    if "timef-s3" in results:
        print(f"s3 / local time: {results['timef-s3']['seconds'] / t['seconds']:.2f}x")


def copy_to_s3(source: Path, endpoint: str, tag: str, options: dict) -> str:
    """The version of `source` in bucket timef-bench of the S3 server, written
    by timef.ingest_arrow unless there (the same bytes as the local version:
    writes are deterministic)."""
    import urllib.error
    import urllib.request

    import timef

    try:
        urllib.request.urlopen(urllib.request.Request(f"{endpoint}/timef-bench", method="PUT")).read()
    except urllib.error.HTTPError as e:
        if e.code != 409:  # BucketAlreadyOwnedByYou
            raise
    url = f"s3://timef-bench/data/bench/{tag}"
    try:
        timef.open(url, storage_options=options)
        return url
    except FileNotFoundError:
        return timef.ingest_arrow(str(source), "s3://timef-bench/data", dataset_name="bench", dataset_version=tag,
                                  storage_options=options)


if __name__ == "__main__":
    main()
