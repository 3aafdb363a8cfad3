"""Issue 25: `timef.edit_version` keyword operations and `Version.to_dataset`:
an edit writes the bytes of a fresh write of its result; refusals carry the
id and field; the README's curation round trip runs."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

import timef
from conftest import REPO, check_conforming, listing, real, tree_bytes


def files_sans_manifest(version_dir: str | Path) -> dict[str, bytes]:
    files = tree_bytes(version_dir)
    del files["manifest.json"]
    return files


def manifest_sans_lineage(version_dir: str | Path) -> dict:
    m = json.loads((Path(version_dir) / "manifest.json").read_text())
    m.pop("derived_from", None)
    m.pop("manifest_sha256", None)
    return m


def ids_sha256(ids: list[str]) -> str:
    return hashlib.sha256("".join(f"{i}\n" for i in sorted(set(ids))).encode()).hexdigest()


def test_add_relabel_resplit_and_describe_from_keywords(tmp_path: Path) -> None:
    train, test = real("ucr/ArrowHead_TRAIN.ts"), real("ucr/ArrowHead_TEST.ts")
    base = timef.ingest_ucr([train], tmp_path / "a", dataset_name="ArrowHead", dataset_version="v1")
    added = timef.read_ucr([test], dataset_name="ArrowHead", dataset_version="ignored")
    new = timef.edit_version(base, tmp_path / "a", dataset_version="v2", add=[added])
    fresh = timef.ingest_ucr([train, test], tmp_path / "b", dataset_name="ArrowHead", dataset_version="v2")
    assert files_sans_manifest(new) == files_sans_manifest(fresh)
    assert manifest_sans_lineage(new) == manifest_sans_lineage(fresh)
    test_ids = [f"ArrowHead-test-{i}" for i in range(175)]
    assert timef.open(new).manifest["derived_from"]["operation"] == {"cascade": False, "steps": [
        {"op": "add", "count": 175, "ids_sha256": ids_sha256(test_ids), "samples": 175, "time_series": 175,
         "annotations": 175, "tasks": 1, "sources": 0}]}
    with pytest.raises(ValueError) as e:
        added.sample_ids
    assert str(e.value) == ("dataset ArrowHead/ignored was already handed to edit_version (add=) (its loaders run "
                            "once): build it again")

    relabel = {"annotation_id": "ArrowHead-train-0/class", "sample_id": "ArrowHead-train-0",
               "annotation_type": "label", "key": "class", "value_str": "2"}
    split = {"task_name": "val", "task_id": "ArrowHead-val", "task_type": "classification", "split": "val",
             "sample_ids": ["ArrowHead-test-0", "ArrowHead-test-1"]}
    v3 = timef.edit_version(new, tmp_path / "a", dataset_version="v3", set_annotations=[relabel],
                            set_tasks=[split], remove_task_ids=["ArrowHead-test"], description="relabelled")
    v = timef.open(v3)
    assert v.task_names() == ["train", "val"]
    assert [t["split"] for t in v.task("val").to_pylist()] == ["val"]
    ann = v.annotations().to_pylist()
    assert [a["value_str"] for a in ann if a["sample_id"] == "ArrowHead-train-0"] == ["2"]
    assert v.manifest["dataset"]["description"] == "relabelled"
    assert v.manifest["derived_from"]["operation"] == {"cascade": False, "steps": [
        {"op": "remove_tasks", "count": 1, "ids_sha256": ids_sha256(["ArrowHead-test"])},
        {"op": "set_annotations", "count": 1, "ids_sha256": ids_sha256(["ArrowHead-train-0/class"])},
        {"op": "set_tasks", "count": 1, "ids_sha256": ids_sha256(["ArrowHead-val"])},
        {"op": "set_dataset", "fields": ["description"]}]}
    assert v.verify()["findings"] == []
    check_conforming(v3)


def test_remove_channels_series_and_refusals(tmp_path: Path) -> None:
    base = timef.ingest_ucr([real("ucr/BasicMotions_TRAIN.ts")], tmp_path, dataset_name="bm", dataset_version="v1")
    before = listing(tmp_path)
    with pytest.raises(timef.TimeFEditError) as e:
        timef.edit_version(base, tmp_path, dataset_version="v2", remove_channels=["9", "5"],
                           remove_series_ids=["bm-train-0/0"], remove_sample_ids=["nope"])
    assert (e.value.id, e.value.field) == ("nope", "remove_sample_ids")
    channel = "unknown channel 9 (channels: 0, 1, 2, 3, 4, 5)"
    assert e.value.blockers == ["unknown sample id nope", channel]
    assert e.value.ids == ["nope", "9"]
    assert str(e.value) == f"edit refused: unknown sample id nope; {channel}"
    all_channels = [str(c) for c in range(6)]
    with pytest.raises(timef.TimeFEditError) as e:
        timef.edit_version(base, tmp_path, dataset_version="v2", remove_channels=all_channels)
    assert (e.value.id, e.value.field) == ("bm-train-0", "series")
    assert e.value.blockers[0] == "sample bm-train-0: its last series would be removed"
    assert listing(tmp_path) == before
    new = timef.edit_version(base, tmp_path, dataset_version="v2", remove_channels=["5"],
                             remove_series_ids=["bm-train-0/0"])
    v = timef.open(new)
    assert v.manifest["counts"]["time_series"] == 40 * 5 - 1
    assert v.manifest["derived_from"]["removed"] == {"annotations": 0, "samples": 0, "tasks": 0, "time_series": 41}
    assert list(v.read_sample("bm-train-0")) == [f"bm-train-0/{d}" for d in range(1, 5)]
    # an added series that exists with other values: the first that differs, the held one first
    held = timef.open(base).read_series("bm-train-0/0")
    values = held.copy()
    values[5] = 0.5
    other = timef.TimeFDataset("bm", "x")
    other.add_source(source_id="bm", name="BasicMotions")
    meta = timef.open(base).index().to_pylist()[0]
    other.add_series(time_series_id="bm-train-0/0", spec_type=meta["spec_type"], channel="0",
                     sampling_rate_hz=meta["sampling_rate_hz"], values=values)
    other.add_sample(sample_id="bm-train-0-copy", source_id="bm", series=["bm-train-0/0"])
    with pytest.raises(timef.TimeFEditError) as e:
        timef.edit_version(base, tmp_path, dataset_version="v3", add=[other])
    assert (e.value.id, e.value.field) == ("bm-train-0/0", "values")
    assert e.value.blockers == [f"added series bm-train-0/0 exists with other values: values[5] {str(held[5])} (added 0.5)"]
    # other metadata and another source name: each blocker names the fields that differ
    other = timef.TimeFDataset("bm", "x")
    other.add_source(source_id="bm", name="Basic Motions", url="https://example.org/bm")
    other.add_series(time_series_id="bm-train-0/0", spec_type="imu", channel="0", sampling_rate_hz=20.0,
                     values=held)
    other.add_sample(sample_id="bm-train-0-copy", source_id="bm", series=["bm-train-0/0"])
    with pytest.raises(timef.TimeFEditError) as e:
        timef.edit_version(base, tmp_path, dataset_version="v3", add=[other])
    assert e.value.blockers == [
        'added source bm exists with other content: name "BasicMotions" (added "Basic Motions"), '
        'url none (added "https://example.org/bm")',
        'added series bm-train-0/0 exists with other content: spec_type "unknown" (added "imu"), '
        'sampling_rate_hz 1 (added 20)',
    ]
    assert e.value.fields == ["source_id", "time_series_id"]
    assert e.value.ids == ["bm", "bm-train-0/0"]
    with pytest.raises(timef.TimeFInputError) as e:
        timef.edit_version(base, tmp_path, dataset_version="v3", set_annotations=[{"annotation_id": "a"}])
    assert (e.value.path, e.value.line) == ("<set_annotations>", 1)
    assert e.value.reason == "missing field `sample_id`"



def test_a_source_spelled_otherwise_than_another_is_refused_as_on_the_cli(tmp_path: Path) -> None:
    """Additions read with other connector ids than the base's spell its source
    otherwise (a name and its UUIDv5): a second source for the same data. The
    CLI refused it, Python's edit_version wrote it. Readable ids of any other
    kind are taken (review 134: refusing them refused ordinary curation)."""
    train, test = real("ucr/BasicMotions_TRAIN.ts"), real("ucr/BasicMotions_TEST.ts")
    kw = dict(dataset_name="BasicMotions", dataset_version="v1")
    uuid_base = timef.ingest_ucr(train, tmp_path / "u", ids="uuid", **kw)
    string_base = timef.ingest_ucr(train, tmp_path / "s", **kw)
    uuid_source = "81bb92bd-080f-548b-b15b-3706d76ff22b"

    def twice(added: str, other: str) -> str:
        return (f"source {added} is source {other} spelled otherwise (a name and its UUID, as a connector's ids "
                "\"string\" and \"uuid\" spell it): read the additions with the base's ids option (CLI --ids, "
                f"Python ids=) or give the source as {other}, or the version gets a second source for the same data")

    before = listing(tmp_path)
    for base, ids, want in [(uuid_base, "string", twice("BasicMotions", uuid_source)),
                            (string_base, "uuid", twice(uuid_source, "BasicMotions"))]:
        for dry_run in (True, False):
            added = timef.read_ucr(test, ids=ids, **kw)
            with pytest.raises(timef.TimeFEditError) as e:
                timef.edit_version(base, tmp_path / "o", dataset_version="v2", add=[added], dry_run=dry_run)
            assert (e.value.blockers, e.value.id, e.value.field) == ([want], want.split()[1], "source_id")
            assert listing(tmp_path) == before
    # a set source spelled as the UUID of the base's; two new sources, one the other's UUID (review 134)
    with pytest.raises(timef.TimeFEditError) as e:
        timef.edit_version(string_base, tmp_path / "o", dataset_version="v2",
                           set_sources=[{"source_id": uuid_source, "name": "BasicMotions"}])
    assert e.value.blockers == [twice(uuid_source, "BasicMotions")]
    walk = [timef.read_ucr(test, ids=i, dataset_name="Walk", dataset_version="v1") for i in ("string", "uuid")]
    assert (walk[0].source_ids, walk[1].source_ids) == (["Walk"], ["e26ee268-043c-573f-889e-380f9c144c88"])
    with pytest.raises(timef.TimeFEditError) as e:
        timef.edit_version(string_base, tmp_path / "o", dataset_version="v2", add=walk)
    assert e.value.blockers == [twice("Walk", "e26ee268-043c-573f-889e-380f9c144c88")]
    assert listing(tmp_path) == before
    # readable ids onto a uuid16 base (set rows a curator writes) are taken as given
    sample = timef.open(uuid_base).to_dataset("x").sample_ids[0]
    fixed = timef.edit_version(uuid_base, tmp_path / "o", dataset_version="v2",
                               set_sources=[{"source_id": "site-b", "name": "Second lab"}],
                               set_annotations=[{"annotation_id": "qc-1", "sample_id": sample,
                                                 "annotation_type": "note", "key": "qc", "value_str": "clipped"}])
    m = timef.open(fixed).manifest
    assert (m["id_encoding"]["annotation_id"], m["id_encoding"]["source_id"], m["id_encoding"]["sample_id"]) == (
        "string", "string", "uuid16")
    # spelled as the base's, the additions are taken, and the ids stay uuid16
    new = timef.edit_version(uuid_base, tmp_path / "o", dataset_version="v3",
                             add=[timef.read_ucr(test, ids="uuid", **kw)])
    m = timef.open(new).manifest
    assert m["id_encoding"] == timef.open(uuid_base).manifest["id_encoding"]
    assert m["sources"] == timef.open(uuid_base).manifest["sources"]

# what a write of one values page without a base takes from none
FRESH_WRITE_COPIES = {"pages_copied": 0, "pages_encoded": 1, "pages_decoded": 0, "shards_copied": 0, "bytes_read": 0}


def test_a_version_as_dataset_extends_to_a_fresh_write(tmp_path: Path) -> None:
    train = real("ucr/ArrowHead_TRAIN.ts")
    base = timef.ingest_ucr([train], tmp_path / "a", dataset_name="ArrowHead", dataset_version="v1")

    def extend(d: timef.TimeFDataset) -> timef.TimeFDataset:
        d.add_series(time_series_id="new-rec/0", spec_type="unknown", channel="0", sampling_rate_hz=1.0,
                     values=np.arange(251, dtype=np.float32))
        d.add_sample(sample_id="new-rec", source_id="ArrowHead", series=["new-rec/0"])
        return d

    d = extend(timef.open(base).to_dataset("v2"))
    assert (d.dataset_name, d.dataset_version) == ("ArrowHead", "v2")
    with timef.TimeFWriter(tmp_path / "a", d) as w:
        assert w.copied is None
        w.write()
        # the base's shard is read; its one values page now holds the new series too
        assert w.copied == {
            "pages_copied": 0,
            "pages_encoded": 1,
            "pages_decoded": 1,
            "shards_copied": 0,
            "bytes_read": 30424,
        }
    fresh = extend(timef.read_ucr([train], dataset_name="ArrowHead", dataset_version="v2"))
    with timef.TimeFWriter(tmp_path / "b", fresh) as w:
        w.write()
        assert w.copied == FRESH_WRITE_COPIES
    assert tree_bytes(tmp_path / "a" / "ArrowHead" / "v2") == tree_bytes(tmp_path / "b" / "ArrowHead" / "v2")


def test_a_version_as_dataset_rewritten_copies_its_values_pages(tmp_path: Path) -> None:
    train = real("ucr/ArrowHead_TRAIN.ts")
    base = timef.ingest_ucr([train], tmp_path / "a", dataset_name="ArrowHead", dataset_version="v1")
    d = timef.open(base).to_dataset("v2")
    d.add_source(source_id="other", name="another source")
    with timef.TimeFWriter(tmp_path / "a", d) as w:
        w.write()
        # the shard is unchanged: the base's file is linked, only its footer read
        assert w.copied == {
            "pages_copied": 1,
            "pages_encoded": 0,
            "pages_decoded": 0,
            "shards_copied": 1,
            "bytes_read": 1804,
        }
    fresh = timef.read_ucr([train], dataset_name="ArrowHead", dataset_version="v2")
    fresh.add_source(source_id="other", name="another source")
    with timef.TimeFWriter(tmp_path / "b", fresh) as w:
        w.write()
        assert w.copied == FRESH_WRITE_COPIES
    assert tree_bytes(tmp_path / "a" / "ArrowHead" / "v2") == tree_bytes(tmp_path / "b" / "ArrowHead" / "v2")


def test_readme_curation_python_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = (REPO / "README.md").read_text()
    blocks = re.findall(r"<!-- curation-python-example -->\s*```python\n(.*?)```", text, re.S)
    assert len(blocks) == 1, "README.md must hold one ```python block after <!-- curation-python-example -->"
    assert len(blocks[0].strip().splitlines()) <= 12
    (tmp_path / "examples").symlink_to(REPO / "examples")
    monkeypatch.chdir(tmp_path)
    exec(compile(blocks[0], "README.md", "exec"), {})
    v = timef.open(tmp_path / "out" / "BasicMotions" / "v2")
    assert v.task_names() == ["test", "train", "val"]
    assert v.manifest["counts"]["samples"] == 80


def test_a_dry_run_makes_every_check_writes_nothing_and_returns_the_plan(tmp_path: Path) -> None:
    base = timef.ingest_ucr([real("ucr/BasicMotions_TRAIN.ts")], tmp_path, dataset_name="bm", dataset_version="v1")
    added = timef.TimeFDataset("bm", "x")
    added.add_source(source_id="bm", name="BasicMotions")
    added.add_series(time_series_id="bm-new/0", spec_type="unknown", channel="0", sampling_rate_hz=1.0,
                     values=np.arange(100, dtype=np.float32))
    added.add_sample(sample_id="bm-new", source_id="bm", series=["bm-new/0"])
    relabel = {"annotation_id": "bm-train-1/class", "sample_id": "bm-train-1", "annotation_type": "label",
               "key": "class", "value_str": "Walking"}
    before = listing(tmp_path)
    kwargs = dict(remove_sample_ids=["bm-train-0"], remove_channels=["5"], add=[added],
                  set_annotations=[relabel], set_sources=[{"source_id": "bm", "name": "BasicMotions"}],
                  license="MIT", citation="a paper")
    plan = timef.edit_version(base, tmp_path, dataset_version="v2", dry_run=True, **kwargs)
    assert listing(tmp_path) == before
    removed_series = sorted({f"bm-train-0/{d}" for d in range(6)} | {f"bm-train-{i}/5" for i in range(40)})
    assert plan == {
        "remove_samples": ["bm-train-0"],
        "remove_tasks": [],
        "strip_samples_from_tasks": [["train", "bm-train"]],
        "remove_annotations": ["bm-train-0/class"],
        "remove_series": removed_series,
        "add_samples": ["bm-new"],
        "add_series": ["bm-new/0"],
        "add_annotations": [],
        "add_tasks": [],
        "add_sources": [],
        "set": {"set_annotations": ["bm-train-1/class"], "set_tasks": [], "set_sources": ["bm"],
                "set_dataset": ["license", "citation"]},
    }
    # the dataset handed to `add` was taken by the dry run as by a write
    with pytest.raises(ValueError) as e:
        added.sample_ids
    assert str(e.value) == "dataset bm/x was already handed to edit_version (add=) (its loaders run once): build it again"
    # every check of the write: a target that exists, a refused edit
    with pytest.raises(FileExistsError):
        timef.edit_version(base, tmp_path, dataset_version="v1", dry_run=True, remove_sample_ids=["bm-train-0"])
    with pytest.raises(timef.TimeFEditError) as e:
        timef.edit_version(base, tmp_path, dataset_version="v2", dry_run=True, remove_sample_ids=["nope"])
    assert (e.value.id, e.value.field) == ("nope", "remove_sample_ids")
    # an edit of no operation, dry run or not, as the CLI (review 146: it wrote a copy of the base)
    # (an addition that holds nothing is none either: review 147; and is left usable: review 148)
    empty = timef.TimeFDataset("bm", "x")
    for dry_run, add, why in [(True, [], ""), (False, [], ""), (False, [empty], " (the datasets of add hold nothing)")]:
        with pytest.raises(ValueError) as e:
            timef.edit_version(base, tmp_path, dataset_version="v2", dry_run=dry_run, cascade=True, add=add)
        assert type(e.value) is ValueError
        assert str(e.value).startswith(f"no operation given{why}: name at least one of remove_sample_ids, ")
    assert empty.sample_ids == []
    assert listing(tmp_path) == before
    # the write does what the dry run said
    new = timef.edit_version(base, tmp_path, dataset_version="v2", remove_sample_ids=["bm-train-0"],
                             remove_channels=["5"])
    assert timef.open(new).manifest["derived_from"]["removed"] == {
        "annotations": 1, "samples": 1, "tasks": 0, "time_series": len(removed_series)}


def test_a_malformed_set_row_is_refused_before_the_added_datasets_are_taken(tmp_path: Path) -> None:
    """The rows are read first: a typo in one leaves the `add` datasets usable for the retry."""
    base = timef.ingest_ucr([real("ucr/ArrowHead_TRAIN.ts")], tmp_path / "a", dataset_name="ArrowHead",
                            dataset_version="v1")
    added = timef.TimeFDataset("ArrowHead", "x")
    added.add_source(source_id="more", name="more")
    added.add_series(time_series_id="more/0", spec_type="unknown", channel="0", sampling_rate_hz=1.0,
                     values=np.arange(10, dtype=np.float32))
    added.add_sample(sample_id="more", source_id="more", series=["more/0"])
    before = listing(tmp_path)
    row = {"annotation_id": "z", "sample_id": "more", "annotation_type": "label", "key": "k"}
    task = {"task_name": "val", "task_id": "t", "task_type": "classification", "sample_ids": ["more"]}
    # review 96: what a row breaks alone is refused before the take too, as is a bad version name
    refused = [
        ({"set_annotations": [{k: v for k, v in row.items() if k != "key"}]}, timef.TimeFInputError,
         "<set_annotations>:1: missing field `key`"),
        ({"set_annotations": [{**row, "annotation_id": ""}]}, timef.TimeFValidationError,
         "invalid annotation_id of : must not be empty"),
        ({"set_tasks": [{**task, "task_name": "a/b"}]}, timef.TimeFValidationError, None),
        ({"set_tasks": [{**task, "task_type": "forecasting"}]}, timef.TimeFValidationError,
         "invalid target_sample_id of t: a forecasting task needs a target sample"),
        ({"set_sources": [{"source_id": "", "name": "x"}]}, timef.TimeFValidationError,
         "invalid source_id of : must not be empty"),
        ({"dataset_version": "v/2"}, timef.TimeFValidationError, None),
    ]
    for kwargs, error, message in refused:
        kwargs = {"dataset_version": "v2", **kwargs}
        with pytest.raises(error) as e:
            timef.edit_version(base, tmp_path / "a", add=[added], **kwargs)
        if message is not None:
            assert str(e.value) == message, kwargs
        assert listing(tmp_path) == before
        assert added.sample_ids == ["more"], kwargs
    # the datasets are taken all or none: one given twice, or one already spent, takes none
    spent = timef.TimeFDataset("ArrowHead", "y")
    spent.add_source(source_id="s", name="s")
    timef.edit_version(base, tmp_path / "a", dataset_version="x1", dry_run=True, add=[spent])
    with pytest.raises(ValueError) as e:
        timef.edit_version(base, tmp_path / "a", dataset_version="v2", add=[added, added])
    assert str(e.value) == "dataset ArrowHead/x is given twice in add"
    with pytest.raises(ValueError) as e:
        timef.edit_version(base, tmp_path / "a", dataset_version="v2", add=[added, spent])
    assert str(e.value) == ("dataset ArrowHead/y was already handed to edit_version (add=) (its loaders run once): "
                            "build it again")
    assert added.sample_ids == ["more"]
    new = timef.edit_version(base, tmp_path / "a", dataset_version="v2", add=[added])
    assert timef.open(new).manifest["counts"]["samples"] == 37


def test_a_nan_or_infinity_in_set_rows_is_refused_naming_the_id_and_field(tmp_path: Path) -> None:
    """JSON cannot carry NaN or infinity to the row parser: such a value is refused as
    `TimeFDataset.add_annotation` refuses it (once a bare ValueError "expected value at line 1 column ...")."""
    base = timef.ingest_ucr([real("ucr/ArrowHead_TRAIN.ts")], tmp_path / "a", dataset_name="ArrowHead",
                            dataset_version="v1")
    row = {"annotation_id": "z", "sample_id": "ArrowHead-train-0", "annotation_type": "label", "key": "k"}
    task = {"task_name": "val", "task_id": "t", "task_type": "forecasting", "sample_ids": ["ArrowHead-train-0"]}
    cases = [
        ({"set_annotations": [{**row, "value_num": float("nan")}]}, "z", "value_num", "NaN"),
        ({"set_annotations": [{**row, "t_start_s": float("inf")}]}, "z", "t_start_s", "inf"),
        ({"set_tasks": [{**task, "horizon": float("-inf")}]}, "t", "horizon", "-inf"),
    ]
    for kwargs, id_, field, shown in cases:
        with pytest.raises(timef.TimeFValidationError) as e:
            timef.edit_version(base, tmp_path / "out", dataset_version="v2", **kwargs)
        assert (e.value.id, e.value.field, str(e.value)) == (id_, field, f"invalid {field} of {id_}: {shown} is not finite")
    with pytest.raises(timef.TimeFInputError, match=r"^<set_annotations>:1: other: NaN is not finite$"):
        timef.edit_version(base, tmp_path / "out", dataset_version="v2",
                           set_annotations=[{**row, "other": float("nan")}])
    assert not (tmp_path / "out").exists()


def test_a_renamed_series_in_the_index_is_refused_also_for_a_shard_copied_whole(cli: Path, tmp_path: Path) -> None:
    """Review 25: the index (and samples) renaming series s0005 to s0005a, order kept, the shard untouched,
    resealed: every edit refuses it, also one that places that shard whole (once, it was committed and only
    `verify` of the edit found it)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    table = pa.table({"item_id": [f"s{i:04d}" for i in range(48)],
                      "target": [rng.normal(size=256).astype(np.float32) for _ in range(48)]})
    base = Path(timef.ingest_arrow(table, tmp_path / "r", dataset_name="d", dataset_version="v1",
                                   chunk_max_bytes=1024, row_group_target_bytes=4096, shard_target_bytes=16384))

    def rewrite(rel: str, change) -> None:
        f = pq.ParquetFile(base / rel)
        pq.write_table(change(f.read()).cast(f.schema_arrow), base / rel, compression="zstd", write_page_index=True)

    def index(t: pa.Table) -> pa.Table:
        i = t.schema.get_field_index("time_series_id")
        ids = ["s0005a" if x == "s0005" else x for x in t.column(i).to_pylist()]
        return t.set_column(i, t.schema.field(i), pa.array(ids, t.schema.field(i).type))

    def samples(t: pa.Table) -> pa.Table:
        rows = t.to_pylist()
        for r in rows:
            for s in r["series"]:
                s["time_series_id"] = "s0005a" if s["time_series_id"] == "s0005" else s["time_series_id"]
        return pa.Table.from_pylist(rows, schema=t.schema)

    rewrite("time_series_index.parquet", index)
    rewrite("samples.parquet", samples)
    m = json.loads((base / "manifest.json").read_text())
    for f in m["files"]:
        data = (base / f["path"]).read_bytes()
        f["bytes"], f["sha256"] = len(data), hashlib.sha256(data).hexdigest()
    m.pop("manifest_sha256")
    (base / "manifest.json").write_text(json.dumps(m, indent=2) + "\n")
    problem = 'pointer of s0005a chunk 0 lands on "s0005" chunk 0'
    for args in (["--description", "x"], ["--remove-sample", "s0047"], ["--remove-sample", "s0001"]):
        done = subprocess.run([str(cli), "--quiet", "edit", str(base), "--out-root", str(tmp_path / "out"),
                               "--version", "v2", *args], capture_output=True, text=True)
        assert done.returncode == 2 and done.stderr.rstrip().endswith(problem), (args, done.stderr)
    with pytest.raises(timef.CorruptVersionError, match=re.escape(problem)):
        timef.edit_version(base, tmp_path / "out", dataset_version="v2", description="x")
    assert not (tmp_path / "out").exists()


def interrupted_at(point: str, script: str, *args: str, gap_s: float = 0.5) -> tuple[int, str, str]:
    """Runs `script` (Python, given `args`) held at the pause point `point`,
    sends it SIGINT there, lets it go on `gap_s` later (it looks every 0.1 s;
    0: it goes on before it looked), and returns its exit code, stdout and stderr."""
    with tempfile.TemporaryDirectory() as tmp:
        resume = Path(tmp) / "resume"
        env = {**os.environ, "TIMEF_TEST_PAUSE_AT": point, "TIMEF_TEST_RESUME_ON": str(resume)}
        proc = subprocess.Popen([sys.executable, "-c", script, *args], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        assert proc.stderr is not None
        assert proc.stderr.readline() == f"timef: paused at {point}\n"
        proc.send_signal(signal.SIGINT)
        time.sleep(gap_s)
        resume.touch()
        out, err = proc.communicate(timeout=60)
    return proc.returncode, out, err


# the call of argv[3], its KeyboardInterrupt's notes printed (made a
# function first: a KeyboardInterrupt out of `eval` itself makes CPython exit
# by SIGINT at the end, though caught)
CALL = """
import sys, timef
call = eval("lambda: " + sys.argv[3], {"timef": timef, "a": sys.argv})
try:
    print(call())
except KeyboardInterrupt as e:
    print("KeyboardInterrupt", getattr(e, "__notes__", []))
"""


def test_ctrl_c_during_an_edit_stops_it_and_leaves_no_version(tmp_path: Path) -> None:
    """A Ctrl-C reached Python only once `edit_version` returned, after the
    edit had committed. Now it stops the edit at its next write: the staging
    goes, no version appears, and `KeyboardInterrupt` is raised. Held at a
    pause point while the signal arrives; after the rename, too late, the
    exception says the version was committed (review 129: it said nothing)."""
    base = timef.ingest_ucr(REPO / "examples/data/BasicMotions_TRAIN.ts", tmp_path, dataset_name="bm",
                            dataset_version="v1")
    before = listing(tmp_path)
    edit = "timef.edit_version(a[1], a[2], dataset_version='v2', remove_sample_ids=['bm-train-3'])"
    for point in ["staging-created", "shards-written", "before-rename"]:
        assert interrupted_at(point, CALL, base, str(tmp_path), edit) == (0, "KeyboardInterrupt []\n", ""), point
        assert listing(tmp_path) == before, point
    v2 = tmp_path / "bm" / "v2"
    note = f"timef: interrupted too late: {v2} was committed"
    assert interrupted_at("after-rename", CALL, base, str(tmp_path), edit) == (0, f"KeyboardInterrupt [{note!r}]\n", "")
    assert timef.open(v2).verify()["findings"] == []
    # a Ctrl-C that came before the rename but was not looked for before the
    # call ended commits, and says so (review 130: a bare KeyboardInterrupt);
    # looked for in time (a look may fall in the 10 ms the pause takes to end),
    # it stops the edit
    v3 = tmp_path / "bm" / "v3"
    note = f"timef: interrupted too late: {v3} was committed"
    code, out, err = interrupted_at("before-rename", CALL, base, str(tmp_path), edit.replace("'v2'", "'v3'"), gap_s=0)
    assert (code, out, err) == (0, f"KeyboardInterrupt [{note!r}]\n" if v3.exists() else "KeyboardInterrupt []\n", "")
    # a writer so interrupted counts as committed (review 130: committed was False)
    write = """
import sys, timef
w = timef.TimeFWriter(sys.argv[2], timef.read_ucr(sys.argv[1], dataset_name="bm3", dataset_version="v1"))
w.write()
try:
    w.commit()
except KeyboardInterrupt as e:
    print(e.__notes__, w.committed)
try:
    w.commit()
except ValueError as e:
    print(e)
"""
    train = str(REPO / "examples/data/BasicMotions_TRAIN.ts")
    v1 = tmp_path / "bm3" / "v1"
    out = f"['timef: interrupted too late: {v1} was committed'] True\n{v1} is already committed\n"
    assert interrupted_at("after-rename", write, train, str(tmp_path)) == (0, out, "")
    # a plain write's commit too (review 129: it committed, then raised)
    ingest = "timef.ingest_ucr(a[1], a[2], dataset_name='bm2', dataset_version='v1')"
    assert interrupted_at("before-rename", CALL, train, str(tmp_path), ingest) == (0, "KeyboardInterrupt []\n", "")
    assert not (tmp_path / "bm2").exists()


def test_ctrl_c_stops_every_edit_of_the_process_and_the_next_call_works(tmp_path: Path) -> None:
    """The stop a Ctrl-C asks is the process's, as the CLI's: an edit of
    another thread that reaches a check meanwhile stops too, with
    `InterruptedError` (it read as EIO, a disk failure), or else goes on and
    commits; once they ended, the next call goes on (review 129). Nothing is
    left half-written either way."""
    base = timef.ingest_ucr(REPO / "examples/data/BasicMotions_TRAIN.ts", tmp_path, dataset_name="bm",
                            dataset_version="v1")
    script = """
import sys, threading, timef
def edit(version, out):
    try:
        out.append(timef.edit_version(sys.argv[1], sys.argv[2], dataset_version=version, remove_sample_ids=["bm-train-3"]))
    except BaseException as e:
        out.append((type(e).__name__, getattr(e, "errno", None)))
other = []
thread = threading.Thread(target=edit, args=("vb", other))
thread.start()
main = []
edit("va", main)
thread.join()
print(main, other)
print(timef.edit_version(sys.argv[1], sys.argv[2], dataset_version="vc", remove_sample_ids=["bm-train-3"]))
"""
    code, out, err = interrupted_at("shards-written", script, base, str(tmp_path))
    assert code == 0 and "Traceback" not in err, err
    vb, vc = tmp_path / "bm" / "vb", tmp_path / "bm" / "vc"
    assert out in (f"[('KeyboardInterrupt', None)] [('InterruptedError', 4)]\n{vc}\n",
                   f"[('KeyboardInterrupt', None)] ['{vb}']\n{vc}\n"), out
    versions = sorted(p.name for p in (tmp_path / "bm").iterdir())
    assert versions == (["v1", "vb", "vc"] if str(vb) in out else ["v1", "vc"])
    for v in versions:
        assert timef.open(tmp_path / "bm" / v).verify()["findings"] == []
