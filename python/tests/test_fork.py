"""Forked and spawned workers (issue 24 item 5): a child of a process that already read
from a store reads and writes that store itself, on a local root, `file://` and S3.

The parent opens and reads a version first (so its object-store runtime and client
exist), then starts a child with `multiprocessing`'s `fork` (PyTorch DataLoader's
default on Linux) or `spawn`. The child reads through the version the parent opened
(fork) or opens it again (spawn), reads another series, and writes a version of its
own, which the parent then reads back. Every child is joined with a timeout: a hang
fails the test instead of hanging CI.
"""

from __future__ import annotations

import multiprocessing
import traceback
from pathlib import Path

import numpy as np
import pytest

import timef
from conftest import s3_bucket, s3_endpoint, s3_options, wave

CHILD_TIMEOUT_S = 120

# the version the parent opened; a forked child inherits it
_opened: dict[str, timef.Version] = {}


def dataset(version: str, seed: int) -> timef.TimeFDataset:
    ds = timef.TimeFDataset("fork", version)
    ds.add_source(source_id="src", name="src")
    for i in range(2):
        ds.add_series(time_series_id=f"s{i}", spec_type="ecg", channel="I", sampling_rate_hz=100.0,
                      values=wave(seed + i, 3000))
    ds.add_sample(sample_id="a", source_id="src", series=["s0", "s1"])
    return ds


def child(root: str, options: dict[str, str] | None, results) -> None:
    """Reads v1 (through the inherited Version when forked), writes v-child; reports what it read."""
    try:
        url = f"{root}/fork/v1"
        inherited = _opened.get(url)
        v = inherited if inherited is not None else timef.open(url, storage_options=options)
        got = {"inherited": inherited is not None,
               "s0": v.read_series("s0").tolist(),
               "s1": timef.open(url, storage_options=options).read_series("s1").tolist()}
        with timef.TimeFWriter(root, dataset("v-child", 10), storage_options=options) as w:
            w.write()
        results.put(("ok", got))
    except BaseException:  # noqa: BLE001 - the parent reports the child's traceback
        results.put(("error", traceback.format_exc()))


def roots(tmp_path: Path) -> dict[str, tuple[str, dict[str, str] | None]]:
    return {"local": (str(tmp_path / "local"), None), "file": (f"file://{tmp_path / 'file'}", None)}


@pytest.mark.parametrize("method", ["fork", "spawn"])
@pytest.mark.parametrize("backend", ["local", "file", "s3"])
def test_child_reads_and_writes_after_the_parent_used_the_store(tmp_path: Path, backend: str, method: str) -> None:
    if backend == "s3":
        endpoint = s3_endpoint()
        root, options = f"s3://{s3_bucket(endpoint)}/data", s3_options(endpoint)
    else:
        root, options = roots(tmp_path)[backend]
    with timef.TimeFWriter(root, dataset("v1", 0), storage_options=options) as w:
        w.write()
    url = f"{root}/fork/v1"
    v = timef.open(url, storage_options=options)
    np.testing.assert_array_equal(v.read_series("s0"), wave(0, 3000))
    _opened[url] = v
    try:
        ctx = multiprocessing.get_context(method)
        results = ctx.Queue()
        proc = ctx.Process(target=child, args=(root, options, results))
        proc.start()
        proc.join(CHILD_TIMEOUT_S)
        if proc.is_alive():
            proc.kill()
            proc.join()
            pytest.fail(f"the {method} child on {backend} hung (no result in {CHILD_TIMEOUT_S} s)")
        status, got = results.get(timeout=10)
    finally:
        _opened.pop(url, None)
    assert status == "ok", got
    assert proc.exitcode == 0
    assert got["inherited"] == (method == "fork")
    assert got["s0"] == wave(0, 3000).tolist()
    assert got["s1"] == wave(1, 3000).tolist()
    # the parent still reads through its own runtime, and sees the child's version
    np.testing.assert_array_equal(v.read_series("s1"), wave(1, 3000))
    mine = timef.open(f"{root}/fork/v-child", storage_options=options)
    np.testing.assert_array_equal(mine.read_series("s0"), wave(10, 3000))
    np.testing.assert_array_equal(mine.read_series("s1"), wave(11, 3000))
    assert timef.verify(f"{root}/fork/v-child", storage_options=options)["findings"] == []
