"""`timef.ray.write` on a local Ray (2 CPUs): the single-machine bytes whatever
the workers and the blocks; a worker killed in a part; bad rows; an object store."""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import timef
from conftest import REPO, _skip_or_fail, gluonts_rows, listing, run_cli, s3_bucket, s3_endpoint, s3_options, tree_sha256
from conftest import write_ipc

try:
    import ray
    import ray.data

    import timef.ray
except ImportError as e:  # visible skip on a dev machine; under CI a failure (see the fixture)
    ray = None
    RAY_MISSING = str(e)

SMALL = dict(chunk_max_bytes=1024, row_group_target_bytes=2048, shard_target_bytes=4096)


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """A local Ray of 2 CPUs for the module, shut down after it."""
    if ray is None:
        _skip_or_fail(f"ray is not installed ({RAY_MISSING}); .ci/run installs it")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    try:
        yield
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def rows() -> pa.Table:
    return gluonts_rows(48, seed=11, freq="h")


@pytest.fixture(scope="module")
def expected(rows: pa.Table, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """sha256 of every file of the single-machine write of `rows`."""
    root = tmp_path_factory.mktemp("single")
    vdir = timef.ingest_arrow(rows, root, dataset_name="d", dataset_version="v1", **SMALL)
    shards = [p for p in tree_sha256(vdir) if p.startswith("time_series/shard-")]
    assert len(shards) >= 8, "enough shards for 4 workers"
    return tree_sha256(vdir)


def blocks_of(rows: pa.Table, partitioning: str) -> ray.data.Dataset:
    if partitioning == "repartitioned":
        return ray.data.from_arrow(rows).repartition(3)
    # shuffled rows, in blocks of uneven sizes
    shuffled = rows.take(np.random.default_rng(3).permutation(rows.num_rows))
    return ray.data.from_arrow([shuffled.slice(0, 5), shuffled.slice(5, 30), shuffled.slice(35)])


@pytest.mark.parametrize("workers", [1, 2, 4])
@pytest.mark.parametrize("partitioning", ["repartitioned", "shuffled"])
def test_same_bytes_as_one_machine(local_ray: None, rows: pa.Table, expected: dict[str, str], tmp_path: Path,
                                   workers: int, partitioning: str) -> None:
    ds = blocks_of(rows, partitioning)
    vdir = timef.ray.write(ds, tmp_path, "d", "v1", parts=workers, **SMALL)
    assert vdir == str(tmp_path / "d" / "v1")
    assert tree_sha256(vdir) == expected
    assert [p for p in listing(tmp_path / "d") if not p.startswith("v1")] == [], "no staging left"


def test_defaults_equal_the_cli(local_ray: None, tmp_path: Path, cli: Path) -> None:
    """Multivariate rows, the default writer options, against `timef ingest arrow` on the same rows."""
    rows = gluonts_rows(10, seed=12, dims=2)
    cli_dir = run_cli(cli, "ingest", "arrow", "--root", str(tmp_path / "cli"), "--name", "d", "--version", "v1",
                      str(write_ipc(rows, tmp_path / "rows.arrow")))
    vdir = timef.ray.write(ray.data.from_arrow(rows).repartition(2), tmp_path / "ray", "d", "v1")
    assert tree_sha256(vdir) == tree_sha256(cli_dir)


def test_a_worker_killed_in_a_part_is_retried_with_the_same_bytes(local_ray: None, rows: pa.Table,
                                                                  expected: dict[str, str], tmp_path: Path) -> None:
    """The part task's process exits (os._exit) while its first attempt writes
    shard files; Ray reruns it; the commit has the single-machine bytes."""
    attempts = tmp_path / "attempts"
    attempts.mkdir()
    root = tmp_path / "root"

    @ray.remote(max_retries=2)
    def part(task: timef.PartTask, pieces: list[pa.Table]) -> timef.PartRecord:
        attempt = len(list(attempts.iterdir()))
        (attempts / f"{attempt}-{os.getpid()}").touch()
        if attempt == 0:
            staging = root / "d"
            before = set(staging.rglob("*"))

            def kill_when_a_file_appears() -> None:
                while not any(p.is_file() for p in set(staging.rglob("*")) - before):
                    time.sleep(0.0005)
                os._exit(1)

            threading.Thread(target=kill_when_a_file_appears, daemon=True).start()
            timef.write_part(task, pieces)
            time.sleep(30)  # the watcher ends the process (written files are there by now)
        return timef.write_part(task, pieces)

    w = timef.plan(root, [rows], dataset_name="d", dataset_version="v1", parts=2, **SMALL)
    by_part = timef.split_parts(rows, w.router)
    tasks = w.tasks()
    records = ray.get([part.remote(tasks[0], [by_part[0]])])
    records += [timef.write_part(tasks[1], [by_part[1]])]
    assert len(list(attempts.iterdir())) == 2, "one killed attempt, one retry"
    assert len({p.name.split("-")[1] for p in attempts.iterdir()}) == 2, "in two processes"
    assert tree_sha256(timef.commit(w, records)) == expected


def test_bad_rows_raise_the_core_error_and_leave_nothing(local_ray: None, rows: pa.Table, tmp_path: Path) -> None:
    values = rows.column("target").to_pylist()
    values[30][3] = None
    bad = rows.set_column(2, "target", pa.array(values, pa.list_(pa.float32())))
    ds = ray.data.from_arrow([bad.slice(0, 20), bad.slice(20)])
    with pytest.raises(timef.TimeFInputError) as e:
        timef.ray.write(ds, tmp_path, "d", "v1", parts=2, **SMALL)
    assert e.value.path == "<ray dataset>"
    assert "row 30" in e.value.reason and "item-11-0030" in e.value.reason, e.value.reason
    assert listing(tmp_path) == []


def test_an_existing_version_is_refused(local_ray: None, rows: pa.Table, tmp_path: Path) -> None:
    timef.ingest_arrow(rows, tmp_path, dataset_name="d", dataset_version="v1")
    before = tree_sha256(tmp_path)
    with pytest.raises(FileExistsError):
        timef.ray.write(ray.data.from_arrow(rows), tmp_path, "d", "v1", parts=2)
    assert tree_sha256(tmp_path) == before


def test_object_store_root(local_ray: None, rows: pa.Table, expected: dict[str, str], tmp_path: Path) -> None:
    endpoint = s3_endpoint()
    url = f"s3://{s3_bucket(endpoint)}/data"
    options = s3_options(endpoint)
    vdir = timef.ray.write(blocks_of(rows, "shuffled"), url, "d", "v1", parts=2, storage_options=options, **SMALL)
    assert vdir == f"{url}/d/v1"
    v = timef.open(vdir, storage_options=options)
    assert v.verify()["findings"] == []
    assert {f["path"]: f["sha256"] for f in v.manifest["files"]} == {
        p: h for p, h in expected.items() if p != "manifest.json"
    }
    np.testing.assert_array_equal(v.read_series("item-11-0007"), rows.column("target")[7].values.to_numpy())


def test_readme_ray_example_runs(local_ray: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    """The README's block, as written; its own ray.init/shutdown run against the
    module's Ray (ignore_reinit_error), which is started again after it."""
    text = (REPO / "README.md").read_text()
    blocks = re.findall(r"<!-- ray-example -->\s*```python\n(.*?)```", text, re.S)
    assert len(blocks) == 1, "README.md must hold one ```python block after <!-- ray-example -->"
    monkeypatch.chdir(tmp_path)
    ray.shutdown()
    try:
        exec(compile(blocks[0], "README.md", "exec"), {})
    finally:
        if not ray.is_initialized():
            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    assert capsys.readouterr().out.strip().splitlines()[-1] == "out/meters/v1"
    v = timef.open(tmp_path / "out" / "meters" / "v1")
    assert v.samples().num_rows == 100
    assert v.verify()["findings"] == []


def test_read_gives_the_series_chunks_and_windows_of_a_version(local_ray: None, tmp_path: Path) -> None:
    """timef.ray.read: one task per row group or block; the rows equal the local reads."""
    vdir = timef.ingest_arrow(gluonts_rows(20, seed=3), tmp_path, dataset_name="r", dataset_version="v1", **SMALL)
    v = timef.open(vdir)
    plan = v.window_plan(32, 8, shuffle=False)
    assert plan.row_groups > plan.blocks > 1, "series span row groups"
    ids = list(dict.fromkeys(v.index().column("time_series_id").to_pylist()))
    series = timef.ray.read(vdir).take_all()
    assert sorted(r["time_series_id"] for r in series) == sorted(ids)
    for r in series:
        np.testing.assert_array_equal(r["values"], v.read_series(r["time_series_id"]))
    chunks = pa.concat_tables(ray.get(timef.ray.read(vdir, what="chunks").to_arrow_refs()))
    scanned = v.scan().read_all()
    assert sorted(zip(*(chunks.column(c).to_pylist() for c in ("time_series_id", "chunk_idx")))) == sorted(
        zip(*(scanned.column(c).to_pylist() for c in ("time_series_id", "chunk_idx"))))
    windows = timef.ray.read(vdir, what="windows", context_length=32, prediction_length=8).take_all()
    local = [(i, int(s)) for b in v.windows(32, 8, shuffle=False) for i, s in zip(b["time_series_id"], b["start"])]
    assert sorted((w["time_series_id"], int(w["start"])) for w in windows) == sorted(local)
    for w in windows[:50]:
        values = v.read_series(w["time_series_id"])
        s = int(w["start"])
        np.testing.assert_array_equal(np.asarray(w["past_values"]), values[s : s + 32])
        np.testing.assert_array_equal(np.asarray(w["future_values"]), values[s + 32 : s + 40])
    with pytest.raises(ValueError, match="what='windows' needs context_length"):
        timef.ray.read(vdir, what="windows")


def test_read_gives_stacked_channel_windows(local_ray: None, tmp_path: Path) -> None:
    """timef.ray.read(what="windows", stack_channels=True): one row per sample's stacked window."""
    ds = timef.TimeFDataset("mv", "v1")
    ds.add_source(source_id="src", name="test")
    for i in range(6):
        ids = [ds.add_series(time_series_id=f"m{i}/{ch}", spec_type="imu", channel=ch, sampling_rate_hz=1.0,
                             values=np.arange(50 + 20 * i, dtype=np.float32) + 1000 * c)
               for c, ch in enumerate("ab")]
        ds.add_sample(sample_id=f"m{i}", source_id="src", series=ids)
    with timef.TimeFWriter(tmp_path, ds, chunk_max_bytes=128, row_group_target_bytes=512) as w:
        w.write()
    vdir = str(tmp_path / "mv" / "v1")
    rows = timef.ray.read(vdir, what="windows", context_length=8, prediction_length=2, stack_channels=True).take_all()
    want = sorted((f"m{i}", s) for i in range(6) for s in range(0, 50 + 20 * i - 10 + 1, 10))
    assert sorted((r["sample_id"], int(r["start"])) for r in rows) == want and len(want) == 5 + 7 + 9 + 11 + 13 + 15
    for r in rows:
        s = int(r["start"])
        past, future = np.asarray(r["past_values"]), np.asarray(r["future_values"])
        np.testing.assert_array_equal(past, [np.arange(s, s + 8), np.arange(s, s + 8) + 1000])
        np.testing.assert_array_equal(future, [[s + 8, s + 9], [s + 1008, s + 1009]])
