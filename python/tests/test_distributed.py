"""The three steps of a distributed write without Ray (as Dask, Spark or a job
queue would run them): plan, parts in any order, commit; records that travel
(pickle); tampered records; a killed coordinator; two coordinators racing; on
S3, workers still uploading after an abort."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import timef
from conftest import REPO, gluonts_rows, listing, run_cli, s3_bucket, s3_endpoint, s3_options, tree_sha256, write_ipc

SMALL = dict(chunk_max_bytes=1024, row_group_target_bytes=2048, shard_target_bytes=4096)


def single_machine(tmp_path: Path, table: pa.Table, **kw) -> dict[str, str]:
    """sha256 of every file of the single-machine write of `table` (version d/v1)."""
    vdir = timef.ingest_arrow(table, tmp_path / "single", dataset_name="d", dataset_version="v1", **SMALL, **kw)
    return tree_sha256(vdir)


def slices(table: pa.Table, cuts: list[int]) -> list[pa.Table]:
    """`table` cut at the row numbers `cuts`."""
    bounds = [0, *cuts, table.num_rows]
    return [table.slice(a, b - a) for a, b in zip(bounds, bounds[1:])]


def plan(root: Path | str, blocks: list[pa.Table], parts: int, **kw) -> timef.DistributedWrite:
    return timef.plan(root, blocks, dataset_name="d", dataset_version="v1", parts=parts, **SMALL, **kw)


def rows_by_part(blocks: list[pa.Table], router: timef.PartRouter) -> dict[int, list[pa.Table]]:
    """Every block split by part, the pieces of each part gathered (as a shuffle would)."""
    out: dict[int, list[pa.Table]] = {}
    for b in blocks:
        for part, rows in timef.split_parts(b, router).items():
            out.setdefault(part, []).append(rows)
    return out


def write_parts(w: timef.DistributedWrite, blocks: list[pa.Table]) -> list[timef.PartRecord]:
    """Every part written, one after the other (the records in part order)."""
    pieces = rows_by_part(blocks, w.router)
    return [timef.write_part(t, pieces.get(t.part, [])) for t in w.tasks()]


def test_parts_finishing_out_of_order_commit_the_single_machine_bytes(tmp_path: Path) -> None:
    table = gluonts_rows(40, seed=1, freq="h")
    expected = single_machine(tmp_path, table)
    assert sum(p.startswith("time_series/shard-") for p in expected) >= 6, "several shards to spread"
    # shuffled rows in blocks of uneven sizes: the plan does not depend on them
    shuffled = table.take(np.random.default_rng(5).permutation(table.num_rows))
    blocks = slices(shuffled, [3, 17, 18])
    w = plan(tmp_path / "dist", blocks, parts=3)
    tasks = w.tasks()
    assert [t.part for t in tasks] == [0, 1, 2]
    assert [t.write_id for t in tasks] == [w.write_id] * 3
    shards = [s for t in tasks for s in t.shards]
    assert shards == list(range(len(shards))), "parts hold whole, consecutive shards, each once"
    # tasks and router travel between processes; rows are split on the "workers"
    tasks = [pickle.loads(pickle.dumps(t)) for t in tasks]
    router = pickle.loads(pickle.dumps(w.router))
    pieces = rows_by_part(list(reversed(blocks)), router)
    assert sorted(pieces) == [0, 1, 2]
    # the parts run concurrently and finish last-first; records come back shuffled
    with ThreadPoolExecutor(3) as pool:
        futures = [pool.submit(timef.write_part, t, pieces[t.part]) for t in reversed(tasks)]
        records = [f.result() for f in futures]
    records = [pickle.loads(pickle.dumps(r)) for r in records]
    assert sorted(r.part for r in records) == [0, 1, 2]
    for r in records:
        assert all(set(f) >= {"path", "bytes", "sha256"} for f in r.files), r.files
    vdir = timef.commit(w, records)
    assert vdir == str(tmp_path / "dist" / "d" / "v1")
    assert tree_sha256(vdir) == expected
    assert listing(tmp_path / "dist" / "d") == sorted(["v1", *(f"v1/{p}" for p in listing(vdir))])
    assert timef.open(vdir).verify()["findings"] == []


def test_matches_the_cli_on_the_same_rows(tmp_path: Path, cli: Path) -> None:
    """Multivariate rows at the default writer options against `timef ingest arrow`."""
    table = gluonts_rows(12, seed=2, dims=3)
    cli_dir = run_cli(cli, "ingest", "arrow", "--root", str(tmp_path / "cli"), "--name", "d", "--version", "v1",
                      str(write_ipc(table, tmp_path / "rows.arrow")))
    blocks = slices(table, [5])
    with timef.plan(tmp_path / "dist", iter(blocks), dataset_name="d", dataset_version="v1", parts=2) as w:
        pieces = rows_by_part(blocks, w.router)
        vdir = timef.commit(w, [timef.write_part(t, pieces.get(t.part, [])) for t in w.tasks()])
    assert tree_sha256(vdir) == tree_sha256(cli_dir)


def test_a_part_written_twice_gives_the_same_record(tmp_path: Path) -> None:
    table = gluonts_rows(20, seed=3)
    expected = single_machine(tmp_path, table)
    w = plan(tmp_path / "dist", [table], parts=2)
    pieces = rows_by_part([table], w.router)
    first = [timef.write_part(t, pieces[t.part]) for t in w.tasks()]
    again = [timef.write_part(t, pieces[t.part]) for t in w.tasks()]  # a retry, or a speculative copy
    assert [r.json for r in again] == [r.json for r in first]
    assert tree_sha256(timef.commit(w, again)) == expected


def test_a_part_of_a_local_write_refuses_storage_options_before_writing(tmp_path: Path) -> None:
    table = gluonts_rows(20, seed=3)
    w = plan(tmp_path / "dist", [table], parts=2)
    pieces = rows_by_part([table], w.router)
    task = w.tasks()[0]
    before = listing(tmp_path / "dist")
    with pytest.raises(ValueError) as e:
        timef.write_part(task, pieces[task.part], storage_options={"region": "x", "aws_region": "y"})
    staging = tmp_path / "dist" / "d" / f".tmp-v1-{task.write_id}"
    assert str(e.value) == ('storage_options["aws_region"]: storage options apply to cloud object-store URLs '
                            f'(s3://, gs://, az://), not "{staging}"')
    assert listing(tmp_path / "dist") == before
    # without them the write goes on to the single machine's bytes
    assert tree_sha256(timef.commit(w, write_parts(w, [table]))) == single_machine(tmp_path, table)


def tampered(record: timef.PartRecord, edit) -> timef.PartRecord:
    doc = json.loads(record.json)
    edit(doc)
    return timef.PartRecord(json.dumps(doc))


def test_commit_refuses_tampered_records_and_removes_every_part(tmp_path: Path) -> None:
    table = gluonts_rows(20, seed=4)
    root = tmp_path / "dist"

    def wrong_hash(doc: dict) -> None:
        doc["files"][0]["sha256"] = "0" * 64

    def missing_shard(doc: dict) -> None:
        del doc["files"][0]

    cases = [(wrong_hash, "hash_mismatch"), (missing_shard, "missing_shard")]
    for edit, problem in cases:
        w = plan(root, [table], parts=2)
        records = write_parts(w, [table])
        first_shard = w.tasks()[1].shards[0]
        bad = tampered(records[1], edit)
        with pytest.raises(timef.PartRecordError) as e:
            timef.commit(w, [records[0], bad])
        assert e.value.problem == problem
        assert e.value.write_id == w.write_id
        assert e.value.shard == first_shard
        assert isinstance(e.value, ValueError)
        assert listing(root / "d") == [], "no version, no staging left"
    # a whole part missing
    w = plan(root, [table], parts=2)
    records = write_parts(w, [table])
    first_shard = w.tasks()[1].shards[0]
    with pytest.raises(timef.PartRecordError) as e:
        timef.commit(w, records[:1])
    assert (e.value.problem, e.value.shard) == ("missing_shard", first_shard)
    assert listing(root / "d") == []
    # a record of another write
    other = plan(tmp_path / "other", [table], parts=2)
    foreign = write_parts(other, [table])
    other.abort()
    w = plan(root, [table], parts=2)
    records = write_parts(w, [table])
    with pytest.raises(timef.PartRecordError) as e:
        timef.commit(w, [records[0], foreign[1]])
    assert e.value.problem == "wrong_write"
    assert listing(root / "d") == []


def test_bad_rows_are_refused_naming_the_row_and_item(tmp_path: Path) -> None:
    table = gluonts_rows(4, seed=5)
    other = gluonts_rows(4, seed=6)
    values = other.column("target").to_pylist()
    values[2][7] = float("nan")
    bad = other.set_column(2, "target", pa.array(values, pa.list_(pa.float32())))
    with pytest.raises(timef.TimeFInputError) as e:
        timef.plan(tmp_path, [table, bad], label="<blocks>", dataset_name="d", dataset_version="v1", parts=2)
    assert e.value.path == "<blocks>"
    assert "row 6" in e.value.reason and "item-6-0002" in e.value.reason, e.value.reason
    # an item in two blocks
    with pytest.raises(timef.TimeFInputError, match="item-5-0001"):
        timef.plan(tmp_path, [table, table.slice(1, 1)], dataset_name="d", dataset_version="v1", parts=2)
    assert listing(tmp_path) == []
    # rows without item_id cannot be routed to parts (their ids would be global row numbers)
    w = plan(tmp_path, [table], parts=2)
    with pytest.raises(timef.TimeFInputError, match="item_id"):
        timef.split_parts(table.drop_columns(["item_id"]), w.router)
    w.abort()
    assert listing(tmp_path / "d") == []


def test_the_write_handle_stays_on_the_coordinator(tmp_path: Path) -> None:
    table = gluonts_rows(4, seed=6)
    with plan(tmp_path, [table], parts=1) as w:
        with pytest.raises(TypeError, match="coordinator"):
            pickle.dumps(w)
    assert listing(tmp_path / "d") == [], "leaving the block uncommitted aborts"


COORDINATOR = """
import sys
import pyarrow as pa
import timef
sys.path.insert(0, {tests!r})
from conftest import gluonts_rows
table = gluonts_rows(20, seed=7)
w = timef.plan({root!r}, [table], dataset_name="d", dataset_version="v1", parts=2,
               chunk_max_bytes=1024, row_group_target_bytes=2048, shard_target_bytes=4096)
by_part = timef.split_parts(table, w.router)
records = [timef.write_part(t, [by_part[t.part]]) for t in w.tasks()]
print("parts written", flush=True)
sys.stdin.read()
timef.commit(w, records)
"""


def test_a_coordinator_killed_before_commit_leaves_no_version_and_gc_reclaims(tmp_path: Path, cli: Path) -> None:
    root = tmp_path / "root"
    script = COORDINATOR.format(tests=str(REPO / "python" / "tests"), root=str(root))
    proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "parts written\n"
        staged = listing(root / "d")
        assert staged and all(p.startswith(".tmp-v1-") for p in staged), staged
        assert any(p.endswith(".parquet") for p in staged), "the parts are on disk"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert not (root / "d" / "v1").exists()
    with pytest.raises(FileNotFoundError):
        timef.open(root / "d" / "v1")
    run_cli(cli, "gc", str(root), "--older-than-s", "0")
    assert listing(root / "d") == []
    # the version can be written afterwards
    table = gluonts_rows(20, seed=7)
    w = plan(root, [table], parts=2)
    assert tree_sha256(timef.commit(w, write_parts(w, [table]))) == single_machine(tmp_path, table)


def test_two_coordinators_committing_the_same_version_one_wins(tmp_path: Path) -> None:
    table = gluonts_rows(20, seed=8)
    root = tmp_path / "root"
    writes = [plan(root, [table], parts=2), plan(root, [table], parts=2)]
    assert writes[0].write_id != writes[1].write_id
    records = [write_parts(w, [table]) for w in writes]
    barrier = threading.Barrier(2)
    outcomes: list[object] = [None, None]

    def coordinator(i: int) -> None:
        barrier.wait()
        try:
            outcomes[i] = timef.commit(writes[i], records[i])
        except Exception as e:  # the outcome is asserted below
            outcomes[i] = e

    threads = [threading.Thread(target=coordinator, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    won = [o for o in outcomes if isinstance(o, str)]
    lost = [o for o in outcomes if isinstance(o, FileExistsError)]
    assert (len(won), len(lost)) == (1, 1), outcomes
    assert won[0] == str(root / "d" / "v1")
    assert tree_sha256(won[0]) == single_machine(tmp_path, table)
    assert [p for p in listing(root / "d") if not p.startswith("v1")] == [], "the loser's parts are removed"


def s3_keys(client, bucket: str) -> list[str]:
    """Every key of `bucket`, sorted."""
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket)
    return sorted(o["Key"] for page in pages for o in page.get("Contents", []))


def uploading(client, bucket: str, prefix: str) -> str:
    """The key of a multipart upload in progress under `prefix` (waits up to 120 s for one)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        uploads = client.list_multipart_uploads(Bucket=bucket, Prefix=prefix).get("Uploads", [])
        if uploads:
            return uploads[0]["Key"]
        time.sleep(0.02)
    raise AssertionError(f"no upload started under {prefix}")


def in_thread(f, *args, **kwargs) -> tuple[threading.Thread, list[object]]:
    """`f(*args, **kwargs)` running in a thread; its result or exception lands in the list."""
    out: list[object] = []

    def run() -> None:
        try:
            out.append(f(*args, **kwargs))
        except Exception as e:  # asserted by the caller
            out.append(e)

    t = threading.Thread(target=run)
    t.start()
    return t, out


def test_s3_a_stale_worker_of_an_aborted_write_never_touches_the_next_one(cli: Path) -> None:
    """A worker of write A, still uploading after A was aborted, while write B of
    the same version commits: B's committed objects all keep their manifest's
    sha256, A's upload lands under A's parts' prefix only, and A's worker, finding
    its write over once the upload is done, deletes it (nothing is left for gc)."""
    import boto3

    endpoint = s3_endpoint()
    bucket = s3_bucket(endpoint)
    options = s3_options(endpoint)
    url = f"s3://{bucket}/data"
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    big = pa.table({"item_id": ["x"], "target": pa.array(
        [np.random.default_rng(1).standard_normal(8_000_000).astype(np.float32)], pa.list_(pa.float32()))})
    a = timef.plan(url, [big], dataset_name="d", dataset_version="v1", parts=1, compression_level=12,
                   shard_target_bytes=256 << 20, storage_options=options)
    a_prefix = f"data/d/.tmp-v1-{a.write_id}/"
    (task,) = a.tasks()
    worker, outcome = in_thread(timef.write_part, task, [timef.split_parts(big, a.router)[0]],
                                storage_options=options)
    late_key = uploading(client, bucket, a_prefix)
    assert late_key == a_prefix + "time_series/shard-00000.parquet"
    a.abort()
    small = gluonts_rows(6, seed=9)
    with timef.plan(url, [small], dataset_name="d", dataset_version="v1", parts=2, **SMALL,
                    storage_options=options) as b:
        pieces = rows_by_part([small], b.router)
        records = [timef.write_part(t, pieces[t.part], storage_options=options) for t in b.tasks()]
        vdir = timef.commit(b, records)
    worker.join()
    # its upload started before the abort: it completes, then the check after it fails
    assert isinstance(outcome[0], FileNotFoundError), outcome
    assert "claim does not hold this write's id" in str(outcome[0])
    assert vdir == f"{url}/d/v1"
    v = timef.open(vdir, storage_options=options)
    committed = {f"data/d/v1/{f['path']}": f["sha256"] for f in v.manifest["files"]}
    for key, sha in committed.items():
        assert hashlib.sha256(client.get_object(Bucket=bucket, Key=key)["Body"].read()).hexdigest() == sha, key
    assert v.verify()["findings"] == []
    version_keys = sorted([*committed, "data/d/v1/manifest.json"])
    assert s3_keys(client, bucket) == version_keys
    assert run_cli(cli, "gc", url, "--older-than-s", "0") == "0 leftover(s) cleared, 0 file(s) removed"
    assert s3_keys(client, bucket) == version_keys


def test_s3_abort_while_a_worker_uploads_leaves_nothing_in_the_way(cli: Path) -> None:
    """Abort while a worker uploads a shard: that upload lands under the write's
    parts' prefix and its worker, finding the write over, deletes it and stops; a
    new write of the same version plans and commits, and gc has nothing to clear."""
    import boto3

    endpoint = s3_endpoint()
    bucket = s3_bucket(endpoint)
    options = s3_options(endpoint)
    url = f"s3://{bucket}/data"
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    rng = np.random.default_rng(2)
    rows = pa.table({"item_id": [f"i{k:02d}" for k in range(12)], "target": pa.array(
        [rng.standard_normal(1_500_000).astype(np.float32) for _ in range(12)], pa.list_(pa.float32()))})
    a = timef.plan(url, [rows], dataset_name="d", dataset_version="v1", parts=1, compression_level=12,
                   shard_target_bytes=24 << 20, storage_options=options)
    a_prefix = f"data/d/.tmp-v1-{a.write_id}/"
    (task,) = a.tasks()
    assert len(task.shards) >= 3
    worker, outcome = in_thread(timef.write_part, task, [timef.split_parts(rows, a.router)[0]],
                                storage_options=options)
    late_key = uploading(client, bucket, a_prefix)
    a.abort()
    worker.join()
    assert isinstance(outcome[0], FileNotFoundError), outcome
    assert "claim does not hold this write's id" in str(outcome[0])
    # the upload in flight at the abort landed under the prefix, and its worker deleted it
    assert late_key.startswith(a_prefix + "time_series/shard-")
    assert s3_keys(client, bucket) == []
    # the version is not blocked
    small = gluonts_rows(6, seed=10)
    with timef.plan(url, [small], dataset_name="d", dataset_version="v1", parts=2, **SMALL,
                    storage_options=options) as b:
        pieces = rows_by_part([small], b.router)
        vdir = timef.commit(b, [timef.write_part(t, pieces[t.part], storage_options=options) for t in b.tasks()])
    assert timef.open(vdir, storage_options=options).verify()["findings"] == []
    version_keys = [k for k in s3_keys(client, bucket) if k.startswith("data/d/v1/")]
    assert version_keys == s3_keys(client, bucket)
    assert run_cli(cli, "gc", url, "--older-than-s", "0") == "0 leftover(s) cleared, 0 file(s) removed"
    assert s3_keys(client, bucket) == version_keys


def test_commit_refuses_forged_chunk_statistics(tmp_path: Path) -> None:
    """A record whose chunk min, max, mean or std is forged: PartRecordError
    `statistics_mismatch` naming the part, shard, chunk and field; nothing published."""
    table = gluonts_rows(20, seed=4)
    root = tmp_path / "dist"
    for field in ("min", "max", "mean", "std"):
        w = plan(root, [table], parts=2)
        records = write_parts(w, [table])
        honest: dict = {}

        def forge(doc: dict) -> None:
            row = doc["index"][0]
            honest.update(row)
            row[field] = row[field] * 2 + 1

        bad = tampered(records[1], forge)
        with pytest.raises(timef.PartRecordError) as e:
            timef.commit(w, [records[0], bad])
        assert (e.value.problem, e.value.part, e.value.shard) == ("statistics_mismatch", 1, honest["shard"])
        chunk = f"{honest['time_series_id']} chunk {honest['chunk_idx']}: {field} is "
        assert chunk in e.value.reason and e.value.reason.endswith(" in the staged shard"), e.value.reason
        assert listing(root / "d") == [], "no version, no staging left"
