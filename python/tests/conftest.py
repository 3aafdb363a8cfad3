"""Shared fixtures: the repository, the `timef` CLI, ../shared (checker, real data)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"


def _skip_or_fail(why: str) -> None:
    """Skips visibly on a dev machine; under CI (`CI` set) a missing input is a failure."""
    if os.environ.get("CI"):
        pytest.fail(f"CI must provide it: {why}")
    pytest.skip(why)


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
    _skip_or_fail(f"real data file {rel} not found")
    raise AssertionError("unreachable")


def check_conforming(version_dir: str | Path) -> None:
    """Asserts ../shared/tools/timef_check.py finds `version_dir` conforming (visible skip without ../shared)."""
    checker = SHARED / "tools" / "timef_check.py"
    if not checker.is_file():
        _skip_or_fail(f"{checker} not found")
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
