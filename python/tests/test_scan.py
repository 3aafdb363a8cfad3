"""Version.scan: the bulk read path as a pyarrow.RecordBatchReader, on the
committed golden version (five series, 26 chunks, 6000 values)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import timef

from conftest import REPO

GOLDEN = REPO / "golden" / "golden" / "1.0.0"
SERIES = ["rec-a/I", "rec-b/I", "rec-a/II", "rec-b/II", "rec-b/resp"]


def by_series(table: pa.Table) -> dict[str, np.ndarray]:
    out: dict[str, list[np.ndarray]] = {}
    for row in table.to_pylist():
        out.setdefault(row["time_series_id"], []).append(np.array(row["values"], dtype=np.float32))
    return {k: np.concatenate(v) for k, v in out.items()}


def test_scan_of_every_series_equals_read_series() -> None:
    v = timef.open(GOLDEN)
    reader = v.scan(threads=2)
    assert reader.schema == pa.schema(
        [
            pa.field("time_series_id", pa.string(), nullable=False),
            pa.field("chunk_idx", pa.int32(), nullable=False),
            pa.field("value_offset", pa.int64(), nullable=False),
            pa.field("values", pa.list_(pa.field("item", pa.float32(), nullable=False)), nullable=False),
        ]
    )
    t = reader.read_all()
    assert t.num_rows == 26
    got = by_series(t)
    assert list(got) == SERIES
    for sid in SERIES:
        np.testing.assert_array_equal(got[sid], v.read_series(sid))
    assert sum(len(x) for x in got.values()) == 6000


def test_scan_selections() -> None:
    v = timef.open(GOLDEN)
    ids = lambda **kw: list(dict.fromkeys(v.scan(**kw).read_all().column("time_series_id").to_pylist()))
    assert ids(channels=["I"]) == ["rec-a/I", "rec-b/I"]
    assert ids(task="diagnosis", split="test") == ["rec-a/II"]
    assert ids(task="diagnosis", split="train", channels=["II"]) == ["rec-a/II", "rec-b/II"]
    assert ids(samples=["0190f5a2-7c3e-7d41-9b6a-000000005001"]) == ["rec-a/I", "rec-a/II"]


def test_scan_errors() -> None:
    v = timef.open(GOLDEN)
    with pytest.raises(timef.TimeFValidationError) as e:
        v.scan(channels=["V9"])
    assert str(e.value) == "invalid channel of V9: no such channel in this version (channels: I, II, chest)"
    with pytest.raises(timef.TimeFValidationError, match="invalid option split: needs task"):
        v.scan(split="train")


def test_scan_of_a_corrupt_shard_raises_from_the_reader(tmp_path: Path) -> None:
    d = tmp_path / "v"
    shutil.copytree(GOLDEN, d)
    # shard 0 holding shard 1's bytes (the manifest's sha256 is not checked by a
    # reader): its footer's values count is not the index's, refused before decoding
    shutil.copy(d / "time_series" / "shard-00001.parquet", d / "time_series" / "shard-00000.parquet")
    reader = timef.open(d).scan(samples=["0190f5a2-7c3e-7d41-9b6a-000000005001"], threads=1)
    with pytest.raises(pa.ArrowException) as e:
        reader.read_all()
    assert str(e.value) == (
        f"External error: corrupt version: {d}/time_series/shard-00000.parquet: "
        "row group 0 values column chunk holds 1308 values by the footer, the index puts 1580 in it"
    )


def test_a_repeated_index_row_is_a_corrupt_version(tmp_path: Path) -> None:
    """The golden version with its first index row repeated (manifest resealed):
    every read refuses it as corrupt, naming the repeated row; nothing panics."""
    import hashlib
    import json

    import pyarrow.parquet as pq

    d = tmp_path / "golden"
    shutil.copytree(GOLDEN, d)
    index = d / "time_series_index.parquet"
    t = pq.read_table(index)
    pq.write_table(pa.concat_tables([t.slice(0, 1), t]), index)
    manifest = json.loads((d / "manifest.json").read_text())
    for f in manifest["files"]:
        if f["path"] == "time_series_index.parquet":
            data = index.read_bytes()
            f["bytes"], f["sha256"] = len(data), hashlib.sha256(data).hexdigest()
            f["rows"] += 1  # listed as written: the footer's row count is checked first
    manifest["counts"]["chunks"] += 1
    (d / "manifest.json").write_text(json.dumps(manifest, indent=2))
    first = t.column("time_series_id").to_pylist()[0]
    n = t.column("n_values").to_pylist()[0]
    reason = f"row 1: {first} chunk 0 at value 0 with {n} values, expected chunk 1 at value {n}"
    v = timef.open(d)
    for read in (lambda: v.read_series(first), lambda: v.read_series(SERIES[-1]), lambda: v.scan().read_all()):
        with pytest.raises(timef.CorruptVersionError, match=reason):
            read()
