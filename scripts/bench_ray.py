#!/usr/bin/env python3
"""A gen_bench.py input written by `timef.ray.write` on a local Ray (2 workers)
beside the single-process `timef ingest arrow`, in one run, on the same input:
wall time and peak RSS of every process, and a check that both versions are
byte-identical (sha256 of every file, manifest included).

  nice -n 19 .venv/bin/python scripts/bench_ray.py [--total-mib 1024] [--shape mixed] [--workers 2]
      [--cli target/release/timef] [--keep DIR]

Needs the package installed in .venv (.venv/bin/pip install ./python) and Ray
(.ci/run installs both). The Ray side runs in a child process (`--ray-child`) so
its peak RSS is its own: the driver (reads the memory-mapped input, puts its
blocks into the object store, plans, commits) and each Ray process it started
(workers, raylet, GCS), read from /proc (VmHWM) before Ray shuts down.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BLOCK_BYTES = 64 << 20
"""Target size of each Ray Dataset block of the input, in float32 value bytes."""


def tree_sha256(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def descendants(pid: int) -> list[int]:
    """Every live process below `pid` (from /proc)."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(d.name))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return sorted(out)


def peak_rss_mib(pid: int) -> tuple[str, float] | None:
    """(command name, VmHWM in MiB) of `pid`, None once it is gone."""
    try:
        name = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return os.path.basename(name) or "?", int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def ray_child(src: str, root: str, workers: int) -> None:
    """The Ray side: prints one JSON line of timings and per-process peak RSS."""
    import pyarrow as pa
    import ray

    import timef.ray

    t0 = time.perf_counter()
    ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, configure_logging=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    t_init = time.perf_counter() - t0
    start = time.perf_counter()
    table = pa.ipc.open_file(pa.memory_map(src)).read_all()
    rows_per_block = max(1, int(table.num_rows * BLOCK_BYTES / max(1, table.nbytes)))
    blocks = [table.slice(i, rows_per_block) for i in range(0, table.num_rows, rows_per_block)]
    ds = ray.data.from_arrow(blocks)
    t_put = time.perf_counter() - start
    timef.ray.write(ds, root, "b", "v1", parts=workers)
    t_write = time.perf_counter() - start
    procs = [p for p in (peak_rss_mib(pid) for pid in descendants(os.getpid())) if p]
    ray.shutdown()
    driver = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"init_s": t_init, "blocks": len(blocks), "put_s": t_put, "write_s": t_write,
                      "driver_mib": driver, "processes": procs}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--total-mib", type=float, default=1024)
    ap.add_argument("--shape", default="mixed", choices=["mixed", "small", "long"])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--cli", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", REPO / "target"), "release",
                                                   "timef"))
    ap.add_argument("--keep", help="work in DIR and keep it (default: a temporary directory, removed)")
    ap.add_argument("--ray-child", nargs=3, metavar=("IN", "ROOT", "WORKERS"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.ray_child:
        ray_child(a.ray_child[0], a.ray_child[1], int(a.ray_child[2]))
        return
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(a.keep or tmp)
        work.mkdir(parents=True, exist_ok=True)
        src = work / "in.arrow"
        if not src.exists():
            subprocess.run([sys.executable, str(REPO.parent / "shared" / "tools" / "gen_bench.py"), str(src),
                            "--total-mib", str(a.total_mib), "--shape", a.shape], check=True)
        input_mib = src.stat().st_size / (1 << 20)
        for d in ("out-cli", "out-ray"):
            subprocess.run(["rm", "-rf", str(work / d)], check=True)
        start = time.perf_counter()
        cli = subprocess.run(["/usr/bin/time", "-f", "%M", a.cli, "ingest", "arrow", "--quiet", "--root",
                              str(work / "out-cli"), "--name", "b", "--version", "v1", str(src)],
                             capture_output=True, text=True, check=True)
        cli_s = time.perf_counter() - start
        cli_mib = int(cli.stderr.strip().splitlines()[-1]) / 1024
        start = time.perf_counter()
        child = subprocess.run([sys.executable, __file__, "--ray-child", str(src), str(work / "out-ray"),
                                str(a.workers)], capture_output=True, text=True)
        ray_total_s = time.perf_counter() - start
        if child.returncode != 0:
            sys.exit(f"the Ray write failed:\n{child.stderr[-4000:]}")
        r = json.loads(child.stdout.strip().splitlines()[-1])
        same = tree_sha256(work / "out-cli" / "b" / "v1") == tree_sha256(work / "out-ray" / "b" / "v1")
        print(f"input: {input_mib:.0f} MiB Arrow IPC ({a.shape}); Ray: {a.workers} workers, {r['blocks']} blocks")
        print(f"{'writer':<34}{'wall s':>9}{'MiB/s':>9}{'peak RSS MiB':>14}")
        print(f"{'timef ingest arrow (1 process)':<34}{cli_s:>9.2f}{input_mib / cli_s:>9.1f}{cli_mib:>14.0f}")
        print(f"{'timef.ray.write (write only)':<34}{r['write_s']:>9.2f}{input_mib / r['write_s']:>9.1f}"
              f"{r['driver_mib']:>14.0f}  (driver)")
        print(f"{'  of which input into Ray':<34}{r['put_s']:>9.2f}")
        print(f"{'  + ray.init':<34}{r['init_s']:>9.2f}")
        print(f"{'  whole child process':<34}{ray_total_s:>9.2f}")
        for name, mib in sorted(r["processes"], key=lambda p: -p[1]):
            print(f"{'    ' + name:<34}{'':>18}{mib:>14.0f}")
        print("byte-identical versions (sha256 of every file):", "yes" if same else "NO")
        if not same:
            sys.exit(1)


if __name__ == "__main__":
    main()
