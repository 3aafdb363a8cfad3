"""Python and the CLI write the same bytes; pyarrow, polars and DuckDB read the same
values; edits of a real file's version; the README example runs."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

import timef
from conftest import REPO, check_conforming, listing, real, run_cli, tree_bytes, wave


def gluonts_table() -> pa.Table:
    """GluonTS-style rows: item_id, start (timestamp[s]), target (list<float32>)."""
    ids = ["item-a", "item-b", "item-c", "item-d"]
    targets = [wave(i, n) for i, n in enumerate([900, 70_000, 3, 2500])]
    return pa.table({
        "item_id": pa.array(ids),
        "start": pa.array([1_600_000_000 + 3600 * i for i in range(4)], pa.timestamp("s")),
        "target": pa.array([t.tolist() for t in targets], pa.list_(pa.float32())),
    })


def write_ipc(table: pa.Table, path: Path) -> None:
    with ipc.new_file(path, table.schema) as w:
        w.write_table(table)


def test_ingest_arrow_from_a_table_equals_the_cli_on_the_file(tmp_path: Path, cli: Path) -> None:
    table = gluonts_table()
    write_ipc(table, tmp_path / "in.arrow")
    cli_dir = run_cli(cli, "ingest", "arrow", "--root", str(tmp_path / "cli"), "--name", "gts", "--version", "v1",
                      str(tmp_path / "in.arrow"))
    py_dir = timef.ingest_arrow(table, tmp_path / "py", dataset_name="gts", dataset_version="v1")
    path_dir = timef.ingest_arrow(tmp_path / "in.arrow", tmp_path / "path", dataset_name="gts", dataset_version="v1")
    expected = tree_bytes(cli_dir)
    assert "manifest.json" in expected and len(expected) >= 5
    assert tree_bytes(py_dir) == expected
    assert tree_bytes(path_dir) == expected
    check_conforming(py_dir)


def test_ingest_arrow_from_polars_equals_the_cli(tmp_path: Path, cli: Path) -> None:
    pl = pytest.importorskip("polars")
    table = gluonts_table()
    write_ipc(table, tmp_path / "in.arrow")
    cli_dir = run_cli(cli, "ingest", "arrow", "--root", str(tmp_path / "cli"), "--name", "gts", "--version", "v1",
                      str(tmp_path / "in.arrow"))
    df = pl.from_arrow(table)
    py_dir = timef.ingest_arrow(df, tmp_path / "py", dataset_name="gts", dataset_version="v1")
    assert tree_bytes(py_dir) == tree_bytes(cli_dir)


def test_hand_built_dataset_equals_the_cli(tmp_path: Path, cli: Path) -> None:
    """The same entities added one by one (with loaders) give the CLI's bytes."""
    table = gluonts_table()
    write_ipc(table, tmp_path / "in.arrow")
    cli_dir = run_cli(cli, "ingest", "arrow", "--root", str(tmp_path / "cli"), "--name", "gts", "--version", "v1",
                      str(tmp_path / "in.arrow"))
    ds = timef.TimeFDataset("gts", "v1")
    ds.add_source(source_id="gts", name="gts")
    for row in table.to_pylist():
        item = row["item_id"]
        target = np.asarray(row["target"], np.float32)
        ds.add_series(time_series_id=item, spec_type=timef.DEFAULT_SPEC_TYPE, channel="0",
                      sampling_rate_hz=timef.DEFAULT_SAMPLING_RATE_HZ, t_start_s=row["start"].timestamp(),
                      loader=lambda t=target: t)
        ds.add_sample(sample_id=item, source_id="gts", series=[item])
    with timef.TimeFWriter(tmp_path / "py", ds) as w:
        w.write()
    assert tree_bytes(w.version_dir) == tree_bytes(cli_dir)


def test_ingest_tsf_equals_the_cli(tmp_path: Path, cli: Path) -> None:
    tsf = real("tsf/UnitTest_Tsf_Loader.tsf")
    cli_dir = run_cli(cli, "ingest", "tsf", "--root", str(tmp_path / "cli"), "--name", "unit", "--version", "v1",
                      str(tsf))
    py_dir = timef.ingest_tsf(tsf, tmp_path / "py", dataset_name="unit", dataset_version="v1")
    assert tree_bytes(py_dir) == tree_bytes(cli_dir)


def test_readers_agree(tmp_path: Path) -> None:
    """timef.open, pyarrow, polars and DuckDB see the same samples and values."""
    pl = pytest.importorskip("polars")
    duckdb = pytest.importorskip("duckdb")
    table = gluonts_table()
    vdir = Path(timef.ingest_arrow(table, tmp_path, dataset_name="gts", dataset_version="v1",
                                   chunk_max_bytes=4096, row_group_target_bytes=16384))
    v = timef.open(vdir)
    ids = table.column("item_id").to_pylist()
    assert v.samples().column("sample_id").to_pylist() == ids
    assert pq.read_table(vdir / "samples.parquet").equals(v.samples())
    assert pl.read_parquet(vdir / "samples.parquet")["sample_id"].to_list() == ids
    con = duckdb.connect()
    assert [r[0] for r in con.execute(
        f"SELECT sample_id FROM read_parquet('{vdir}/samples.parquet') ORDER BY sample_id").fetchall()] == ids
    index = pq.read_table(vdir / "time_series_index.parquet").to_pylist()
    for item, target in zip(ids, table.column("target").to_pylist()):
        expected = np.asarray(target, np.float32)
        ours = v.read_series(item)
        assert np.array_equal(ours.view(np.uint32), expected.view(np.uint32))
        # pyarrow: follow the index pointers by hand
        parts = []
        for row in sorted((r for r in index if r["time_series_id"] == item), key=lambda r: r["chunk_idx"]):
            rg = pq.ParquetFile(vdir / row["shard_path"]).read_row_group(row["row_group"], columns=["values"])
            parts.append(np.asarray(rg.column("values")[row["row_offset"]].as_py(), np.float32))
        assert np.array_equal(np.concatenate(parts).view(np.uint32), expected.view(np.uint32))
        # polars and DuckDB: every shard, the series' rows by chunk_idx
        shards = str(vdir / "time_series" / "*.parquet")
        df = pl.read_parquet(shards).filter(pl.col("time_series_id") == item).sort("chunk_idx")
        assert np.array_equal(np.concatenate([np.asarray(x, np.float32) for x in df["values"].to_list()]), expected)
        rows = con.execute(f"SELECT values FROM read_parquet('{shards}') WHERE time_series_id = ? ORDER BY chunk_idx",
                           [item]).fetchall()
        assert np.array_equal(np.concatenate([np.asarray(r[0], np.float32) for r in rows]), expected)


def test_edit_a_real_forecasting_version_refused_then_cascaded(tmp_path: Path) -> None:
    base = timef.ingest_tsf(real("tsf/UnitTest_Tsf_Loader.tsf"), tmp_path / "base", dataset_name="unit",
                            dataset_version="v1")
    before = tree_bytes(tmp_path / "base")
    v = timef.open(base)
    task_name = v.task_names()[0]
    task = v.task(task_name).to_pylist()[0]
    target = task["target_sample_id"]
    assert task["task_type"] == "forecasting" and target
    with pytest.raises(timef.TimeFEditError) as e:
        timef.edit_version(base, tmp_path / "out", dataset_version="v2", remove_sample_ids=[target])
    assert (e.value.id, e.value.field) == (task["task_id"], "target_sample_id")
    assert any(f"target_sample_id {target} would be removed" in b for b in e.value.blockers)
    assert listing(tmp_path / "out") == []
    with pytest.raises(timef.TimeFEditError, match="unknown sample id nope"):
        timef.edit_version(base, tmp_path / "out", dataset_version="v2", remove_sample_ids=["nope"])

    new = timef.edit_version(base, tmp_path / "out", dataset_version="v2", remove_sample_ids=[target], cascade=True)
    assert new == str(tmp_path / "out" / "unit" / "v2")
    n = timef.open(new)
    assert target not in n.samples().column("sample_id").to_pylist()
    assert n.samples().num_rows == v.samples().num_rows - 1
    derived = n.manifest["derived_from"]
    assert derived["dataset_version"] == "v1" and derived["manifest_sha256"] == v.manifest_sha256
    assert derived["operation"] == {"cascade": True, "steps": [
        {"op": "remove_samples", "count": 1, "ids_sha256": hashlib.sha256(f"{target}\n".encode()).hexdigest()}]}
    assert derived["removed"]["samples"] == 1 and derived["removed"]["tasks"] >= 1
    assert tree_bytes(tmp_path / "base") == before
    assert n.verify()["findings"] == []
    check_conforming(new)


def test_open_and_read_errors(tmp_path: Path) -> None:
    with pytest.raises(timef.NotAVersionError) as e:
        timef.open(tmp_path)
    assert e.value.reason == "no manifest.json"
    v = timef.open(timef.ingest_arrow(gluonts_table(), tmp_path, dataset_name="gts", dataset_version="v1"))
    with pytest.raises(timef.TimeFValidationError) as e:
        v.read_series("no-such-series")
    assert (e.value.id, e.value.field) == ("no-such-series", "time_series_id")
    with pytest.raises(timef.TimeFValidationError) as e:
        v.task("nope")
    assert (e.value.id, e.value.field) == ("nope", "task_name")


def test_readme_python_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = (REPO / "README.md").read_text()
    blocks = re.findall(r"<!-- python-example -->\s*```python\n(.*?)```", text, re.S)
    assert len(blocks) == 1, "README.md must hold one ```python block after <!-- python-example -->"
    code = blocks[0]
    assert len(code.strip().splitlines()) <= 12
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {})
    assert (tmp_path / "out" / "my-ecg" / "v1" / "manifest.json").is_file()
    assert (tmp_path / "out" / "my-ecg" / "v2" / "manifest.json").is_file()
