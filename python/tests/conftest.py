"""Shared fixtures: the repository, the `timef` CLI, ../shared (checker, real data)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"


def _skip_or_fail(why: str) -> None:
    """Skips visibly on a dev machine; under CI (`CI` set) a missing input is a failure."""
    if os.environ.get("CI"):
        pytest.fail(f"CI must provide it: {why}")
    pytest.skip(why)


def _skip_or_fail_shared(why: str) -> None:
    """Skips visibly when ../shared is not beside the checkout; fails when `TIMEF_REQUIRE_SHARED` is set.

    `.ci/run` sets it exactly when ../shared is there (as in CI), as tests/common/mod.rs reads it.
    """
    if os.environ.get("TIMEF_REQUIRE_SHARED"):
        pytest.fail(f"TIMEF_REQUIRE_SHARED is set: {why}")
    pytest.skip(f"{why} (../shared not found)")


@pytest.fixture(scope="session")
def cli() -> Path:
    """The `timef` binary that `cargo test --release` built."""
    candidates = [os.environ.get("TIMEF_CLI")]
    if os.environ.get("CARGO_TARGET_DIR"):
        candidates.append(os.path.join(os.environ["CARGO_TARGET_DIR"], "release", "timef"))
    candidates.append(str(REPO / "target" / "release" / "timef"))
    for c in candidates:
        if c and Path(c).is_file():
            return Path(c)
    _skip_or_fail("no timef binary (run cargo build --release, or set TIMEF_CLI)")
    raise AssertionError("unreachable")


def real(rel: str) -> Path:
    """A real data file: tests/data/real/<rel> in the repository, else ../shared/data/real/<rel>."""
    for base in (REPO / "tests" / "data" / "real", SHARED / "data" / "real"):
        if (base / rel).is_file():
            return base / rel
    _skip_or_fail_shared(f"real data file {rel} not found")
    raise AssertionError("unreachable")


def check_conforming(version_dir: str | Path) -> None:
    """Asserts ../shared/tools/timef_check.py finds `version_dir` conforming (visible skip without ../shared)."""
    checker = SHARED / "tools" / "timef_check.py"
    if not checker.is_file():
        _skip_or_fail_shared(f"{checker} not found")
    out = subprocess.run([sys.executable, str(checker), str(version_dir)], capture_output=True, text=True)
    last = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""
    assert last == "conforming: 0 violation(s)", out.stdout + out.stderr


def run_cli(cli: Path, *args: str) -> str:
    out = subprocess.run([str(cli), "--quiet", *args], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def tree_bytes(root: str | Path) -> dict[str, bytes]:
    """Every file under `root` by relative path, with its bytes."""
    root = Path(root)
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def listing(root: str | Path) -> list[str]:
    """Every path under `root`, sorted (empty for a missing root)."""
    root = Path(root)
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


def wave(seed: int, n: int) -> np.ndarray:
    """Deterministic float32 values with a fractional part (quantized sine plus a ramp)."""
    k = np.arange(n, dtype=np.float64)
    return (np.round(np.sin(k * 0.05 + seed) * 100.0) / 100.0 + seed + k * 1e-3).astype(np.float32)


def tree_sha256(root: str | Path) -> dict[str, str]:
    """sha256 (hex) of every file under `root` (manifest.json included), by relative path."""
    return {rel: hashlib.sha256(data).hexdigest() for rel, data in tree_bytes(root).items()}


def gluonts_rows(n_items: int, seed: int = 0, *, dims: int | None = None, freq: str | None = None) -> pa.Table:
    """GluonTS-style rows (`item_id`, `start`, `target`, optional `freq`) of `n_items`
    items with lengths 40..2400 (a few long ones span several 4 KiB shards):
    univariate `list<float32>`, or `dims` channels as `list<list<float32>>`."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(40, 600, n_items)
    lengths[:: max(1, n_items // 4)] = 2400
    targets = []
    for i, n in enumerate(lengths):
        if dims is None:
            targets.append(wave(seed + i, int(n)))
        else:
            targets.append([wave(seed + i * dims + d, int(n)) for d in range(dims)])
    value_type = pa.list_(pa.float32()) if dims is None else pa.list_(pa.list_(pa.float32()))
    columns = {
        "item_id": pa.array([f"item-{seed}-{i:04d}" for i in range(n_items)]),
        "start": pa.array([1_600_000_000 + 3600 * i for i in range(n_items)], pa.timestamp("s")),
        "target": pa.array(targets, value_type),
    }
    if freq is not None:
        columns["freq"] = pa.array([freq] * n_items)
    return pa.table(columns)


def write_ipc(table: pa.Table, path: Path) -> Path:
    """`table` as an Arrow IPC file (what `timef ingest arrow` reads)."""
    with pa.ipc.new_file(path, table.schema) as w:
        w.write_table(table)
    return path


def s3_endpoint() -> str:
    """The local S3 server `.ci/run` starts (127.0.0.1 only); skipped visibly without it, a failure under CI."""
    endpoint = os.environ.get("TIMEF_TEST_S3_ENDPOINT", "")
    if not endpoint:
        _skip_or_fail("no S3 server (set TIMEF_TEST_S3_ENDPOINT or run .ci/run)")
    assert endpoint.startswith("http://127.0.0.1:"), endpoint
    return endpoint


def s3_bucket(endpoint: str) -> str:
    """A bucket of the test's own, made with a plain HTTP PUT (the server does not check signatures)."""
    import urllib.request

    import timef

    name = "timef-py-" + timef.new_id().replace("-", "")[:24]
    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/{name}", method="PUT")).read()
    return name


def s3_options(endpoint: str) -> dict[str, str]:
    """storage_options for the local S3 server."""
    return {"aws_endpoint": endpoint, "aws_allow_http": "true", "aws_access_key_id": "testing",
            "aws_secret_access_key": "testing", "aws_region": "us-east-1"}
