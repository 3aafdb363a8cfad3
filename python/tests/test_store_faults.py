"""Stores that misbehave (issue 24 items 2 and 6): conditional writes ignored, files
changed under a writer, missing buckets and prefixes, a server that never answers, a
failed multipart upload, an unknown storage option. Exact messages and exit codes.

The faulty stores are `store_faults.py`'s, on 127.0.0.1, started by each test in
front of the S3 server `.ci/run` starts (moto).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

import timef
from conftest import gluonts_rows, s3_bucket, s3_endpoint, s3_options, write_ipc
from store_faults import MuteServer, Proxy

GUARD_S = 120


def s3_client(endpoint: str):
    """A boto3 client of the S3 server under test (boto3 comes with moto)."""
    import boto3

    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing", aws_secret_access_key="testing",
                        region_name="us-east-1")


def s3_keys(endpoint: str, bucket: str, prefix: str) -> list[str]:
    """Every key under `prefix`, sorted."""
    listed = s3_client(endpoint).list_objects_v2(Bucket=bucket, Prefix=prefix)
    return sorted(o["Key"] for o in listed.get("Contents", []))


def storage_args(options: dict[str, str]) -> list[str]:
    return [a for k, v in options.items() for a in ("--storage-option", f"{k}={v}")]


def run(cli: Path, *args: str, env: dict[str, str] | None = None, timeout: float = GUARD_S):
    return subprocess.run([str(cli), "--quiet", *args], capture_output=True, text=True, timeout=timeout, env=env)


def ingest(cli: Path, tmp_path: Path, root: str, options: dict[str, str], **popen) -> subprocess.Popen:
    """Starts `timef ingest arrow` of a small dataset into ROOT/ds/v1."""
    data = write_ipc(gluonts_rows(6, seed=3), tmp_path / "rows.arrow")
    args = [str(cli), "--quiet", "ingest", "arrow", "--root", root, "--name", "ds", "--version", "v1",
            "--sampling-rate-hz", "1", *storage_args(options), str(data)]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)


def paused_env(point: str, resume: Path) -> dict[str, str]:
    import os

    return {**os.environ, "TIMEF_TEST_PAUSE_AT": point, "TIMEF_TEST_RESUME_ON": str(resume)}


def wait_paused(proc: subprocess.Popen, point: str) -> None:
    assert proc.stderr is not None
    line = proc.stderr.readline()
    assert line == f"timef: paused at {point}\n", line + proc.stderr.read()


def finish(proc: subprocess.Popen) -> tuple[int, str]:
    _, err = proc.communicate(timeout=GUARD_S)
    return proc.returncode, err


def unsafe_message(bucket: str) -> str:
    return (f"timef: error: object store s3://{bucket} cannot take a TimeF write: it lacks conditional writes: a "
            f"second create of s3://{bucket}/root/ds/v1/_timef_claim.json with If-None-Match: * was accepted, so two "
            "writers of one version could overwrite each other's files (a proxy that drops the header, or a server "
            "without the feature); no data file was written\n")


# -- item 2: stores that ignore conditional writes --------------------------------------------

def test_a_store_ignoring_conditional_writes_is_refused_before_any_data(cli: Path, tmp_path: Path) -> None:
    endpoint = s3_endpoint()
    bucket = s3_bucket(endpoint)
    with Proxy(endpoint, strip_conditions=True) as proxy:
        # the writer A: it would pause once its staging is created; it never gets there
        a = ingest(cli, tmp_path, f"s3://{bucket}/root", s3_options(proxy.url),
                   env=paused_env("staging-created", tmp_path / "never"))
        code, err = finish(a)
        assert proxy.stripped >= 2
    assert (code, err) == (3, unsafe_message(bucket))
    assert s3_keys(endpoint, bucket, "root/") == []


def test_a_claim_taken_over_through_such_a_store_publishes_nothing(cli: Path, tmp_path: Path) -> None:
    """A claims through the real store and pauses; B claims over it through the stripping proxy."""
    endpoint = s3_endpoint()
    bucket = s3_bucket(endpoint)
    resume = tmp_path / "resume"
    a = ingest(cli, tmp_path, f"s3://{bucket}/root", s3_options(endpoint), env=paused_env("staging-created", resume))
    wait_paused(a, "staging-created")
    with Proxy(endpoint, strip_conditions=True) as proxy:
        b = ingest(cli, tmp_path, f"s3://{bucket}/root", s3_options(proxy.url))
        assert finish(b) == (3, unsafe_message(bucket))
    resume.touch()
    code, err = finish(a)
    assert code == 3
    assert err == (f"timef: error: I/O on s3://{bucket}/root/ds/v1/_timef_claim.json: the claim is no longer this "
                   "writer's (cleared by gc?); nothing was committed\n")
    assert f"root/ds/v1/manifest.json" not in s3_keys(endpoint, bucket, "root/")


def test_gc_through_such_a_store_fences_and_deletes_nothing(cli: Path, tmp_path: Path) -> None:
    """Review 40: gc puts its fence at a dead writer's manifest key with If-None-Match: *; through a store that
    ignores the header the fence could replace a manifest committed a moment ago. gc now checks the store as a
    writer does (a second create of its claim must fail) and, refused, deletes nothing of that version."""
    endpoint = s3_endpoint()
    bucket = s3_bucket(endpoint)
    client = s3_client(endpoint)
    claim = b'{"writer_id":"0123456789abcdef0123456789abcdef","created_at_unix_s":0,"created_by":"test"}'
    client.put_object(Bucket=bucket, Key="root/ds/v1/_timef_claim.json", Body=claim)
    client.put_object(Bucket=bucket, Key="root/ds/v1/time_series/shard-00000.parquet", Body=b"partial")
    with Proxy(endpoint, strip_conditions=True) as proxy:
        out = run(cli, "gc", f"s3://{bucket}/root", "--older-than-s", "0", *storage_args(s3_options(proxy.url)))
        assert proxy.stripped >= 1
    assert out.returncode == 3, out.stderr
    assert out.stderr == (
        f"timef: error: could not remove s3://{bucket}/root/ds/v1/_timef_claim.json: object store s3://{bucket} "
        f"cannot take a TimeF write: it lacks conditional writes: a second create of "
        f"s3://{bucket}/root/ds/v1/_timef_claim.json with If-None-Match: * was accepted, so gc's fence could "
        "replace a manifest committed a moment ago; gc holds the version's claim and stopped there: it put no "
        "fence and deleted nothing of that version\n"), \
        out.stderr
    assert s3_keys(endpoint, bucket, "root/") == ["root/ds/v1/_timef_claim.json",
                                                  "root/ds/v1/time_series/shard-00000.parquet"]


def test_a_file_changed_under_the_writer_stops_the_commit(cli: Path, tmp_path: Path) -> None:
    """Whatever the interleaving, a version with a manifest verifies: bytes another writer put at one of
    this writer's keys (same size) are found before the manifest is written."""
    endpoint = s3_endpoint()
    bucket = s3_bucket(endpoint)
    resume = tmp_path / "resume"
    a = ingest(cli, tmp_path, f"s3://{bucket}/root", s3_options(endpoint), env=paused_env("manifest-staged", resume))
    wait_paused(a, "manifest-staged")
    s3 = s3_client(endpoint)
    key = "root/ds/v1/samples.parquet"
    head = s3.head_object(Bucket=bucket, Key=key)
    size, written_tag = head["ContentLength"], head["ETag"]
    other_tag = s3.put_object(Bucket=bucket, Key=key, Body=b"x" * size)["ETag"]
    resume.touch()
    code, err = finish(a)
    assert code == 3
    assert err == (f"timef: error: I/O on s3://{bucket}/root/ds/v1/samples.parquet: changed since this writer put it "
                   f"(written: {size} bytes, ETag {written_tag}; found: {size} bytes, ETag {other_tag}); another "
                   "writer wrote the version; nothing was committed\n")
    assert "root/ds/v1/manifest.json" not in s3_keys(endpoint, bucket, "root/")


# -- item 6: failures named truthfully ---------------------------------------------------------

def test_missing_bucket_prefix_and_directory_are_one_rule(cli: Path, tmp_path: Path) -> None:
    endpoint = s3_endpoint()
    bucket = s3_bucket(endpoint)
    opts = s3_options(endpoint)
    args = storage_args(opts)
    missing = [
        (f"s3://no-such-bucket-timef/root/ds/v1", "not found: s3://no-such-bucket-timef: no such bucket"),
        (f"s3://{bucket}/nothing/ds/v1", f"not found: s3://{bucket}/nothing/ds/v1: no object under this prefix"),
        (str(tmp_path / "none" / "ds" / "v1"), f"not found: {tmp_path}/none/ds/v1: no such directory"),
        (f"file://{tmp_path}/none/ds/v1", f"not found: file://{tmp_path}/none/ds/v1: no object under this prefix"),
    ]
    for url, message in missing:
        for verb in (["info", url], ["verify", url], ["cat", url, "s0"], ["export", url, "--count"],
                     ["dedup", url, url], ["edit", url, "--out-root", str(tmp_path / "o"), "--version", "v2",
                                           "--remove-sample", "x"]):
            out = run(cli, *verb, *args)
            assert (out.returncode, out.stderr) == (2, f"timef: error: {message}\n"), verb
        with pytest.raises(FileNotFoundError) as e:
            timef.open(url, storage_options=opts if url.startswith("s3://") else None)
        # the path is printed once, as Python prints an OSError's filename
        strerror = message.replace(f"{e.value.filename}: ", "", 1)
        assert str(e.value) == f"[Errno 2] {strerror}: '{e.value.filename}'"
        assert e.value.filename in message and str(e.value).count(e.value.filename) == 1
    out = run(cli, "ls", str(tmp_path / "none"))
    assert (out.returncode, out.stderr) == (2, f"timef: error: not found: {tmp_path}/none: no such directory\n")
    out = run(cli, "ls", "s3://no-such-bucket-timef/root", *args)
    assert (out.returncode, out.stderr) == (2, "timef: error: not found: s3://no-such-bucket-timef: no such bucket\n")
    # ingest into a missing bucket: the same error, before any data
    code, err = finish(ingest(cli, tmp_path, "s3://no-such-bucket-timef/root", opts))
    assert (code, err) == (2, "timef: error: not found: s3://no-such-bucket-timef: no such bucket\n")
    # a place that exists without a manifest is "not a version"
    s3_client(endpoint).put_object(Bucket=bucket, Key="some/ds/v1/notes.txt", Body=b"x")
    out = run(cli, "info", f"s3://{bucket}/some/ds/v1", *args)
    assert (out.returncode, out.stderr) == (
        2, f"timef: error: not a TimeF version: s3://{bucket}/some/ds/v1: no manifest.json\n")
    with pytest.raises(timef.NotAVersionError):
        timef.open(f"s3://{bucket}/some/ds/v1", storage_options=opts)


def test_a_server_that_never_answers_fails_within_the_default_timeouts(cli: Path) -> None:
    """The default timeouts fail `ls` on a mute server in about 20 s (a run past the 45 s guard fails the
    test: before them it took 181 s); `timeout` overrides them."""
    opts = s3_options("http://unused")
    with MuteServer() as mute:
        opts["aws_endpoint"] = mute.url
        start = time.monotonic()
        out = run(cli, "ls", "s3://bucket/root", *storage_args(opts), timeout=45)
        took_default = time.monotonic() - start
        short = run(cli, "ls", "s3://bucket/root", *storage_args({**opts, "timeout": "1s", "retry_timeout_s": "0"}),
                    timeout=45)
    print(f"mute server: `timef ls` failed after {took_default:.1f} s with the default timeouts")
    pattern = (r"timef: error: object store s3://bucket/root: Generic S3 error: Error performing list request: Error "
               r"performing GET http://127\.0\.0\.1:\d+/bucket\?delimiter=%2F&list-type=2&prefix=root%2F in "
               r"(\d+)\.\d+s - HTTP error: error sending request: operation timed out\n")
    for o, seconds in ((out, "20"), (short, "1")):
        assert o.returncode == 3, o.stderr
        m = re.fullmatch(pattern, o.stderr)
        assert m is not None, o.stderr
        # the client's own measure of the request: its timeout, not a test clock
        assert m.group(1) == seconds, o.stderr


def interrupted_verify(cli: Path, tmp_path: Path, mute: str) -> tuple[int, str, str, str, list[str]]:
    """Ingests a small version on the S3 server, verifies it through a `Proxy` that goes mute (`mute`: "gets",
    once the verify copied its first object; "lists", from the start), sends SIGINT once a request is held,
    and returns the exit code, stdout, stderr, the version's URL and what its TMPDIR holds. A verify still
    running 10 s after the signal (well inside the 20 s a store's timeout takes) fails the test."""
    import os
    import signal

    endpoint = s3_endpoint()
    opts = s3_options(endpoint)
    root = f"s3://{s3_bucket(endpoint)}/mute-{mute}"
    code, err = finish(ingest(cli, tmp_path, root, opts))
    assert code == 0, err
    temp, resume = tmp_path / "tmp", tmp_path / "resume"
    temp.mkdir()
    with Proxy(endpoint) as proxy:
        env = {**os.environ, "TMPDIR": str(temp)}
        if mute == "gets":
            env.update(paused_env("verify-copying", resume))
        else:
            proxy.mute_lists = True
        args = [str(cli), "verify", f"{root}/ds/v1", *storage_args({**opts, "aws_endpoint": proxy.url})]
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        if mute == "gets":
            wait_paused(proc, "verify-copying")
            proxy.mute = True
            resume.touch()
        deadline = time.monotonic() + GUARD_S
        while proxy.muted == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert proxy.muted == 1
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
    return proc.returncode, out, err, f"{root}/ds/v1", os.listdir(temp)


def test_ctrl_c_of_a_verify_waiting_on_a_mute_server_stops_it_at_once_and_removes_its_copy(
        cli: Path, tmp_path: Path) -> None:
    """Review 122: `verify` of an object-store version copies it into TMPDIR; a Ctrl-C while a GET waited
    on a server gone mute waited for the store's timeouts (about 20 s) and then failed with the timeout.
    The request is dropped now: exit 130 with the interrupt, the copy removed, well before any timeout."""
    code, out, err, url, left = interrupted_verify(cli, tmp_path, "gets")
    assert (code, out, left) == (130, "", [])
    assert err == ("timef: interrupted, stopping and removing what this run wrote (Ctrl-C again to exit now)\n"
                   f"timef: error: I/O on {url}: interrupted (Ctrl-C)\n"), err


def test_ctrl_c_of_a_verify_whose_listing_waits_on_a_mute_server_ends_it_at_once(cli: Path, tmp_path: Path) -> None:
    """Review 123: verify listed the version's objects after its temporary copy was made, so a Ctrl-C while
    that listing waited on a mute server waited for the store's timeouts (about 20 s) too. It lists first now:
    nothing is made yet, and the Ctrl-C ends it at once (exit 130, no notice, TMPDIR empty)."""
    code, out, err, _, left = interrupted_verify(cli, tmp_path, "lists")
    assert (code, out, err, left) == (130, "", "", [])


def test_a_write_to_a_mute_server_fails_at_its_first_request_whatever_the_depth_of_its_root(
        cli: Path, tmp_path: Path) -> None:
    """Review 38: a write's check that its root is outside every committed version read each ancestor's
    manifest and passed over any failure, so a mute server cost one timeout per level of the root (80 s and
    120 s with the defaults). A failure other than a denial now fails the write at the first ancestor."""
    opts = {**s3_options("http://unused"), "timeout": "1s", "retry_timeout_s": "0"}
    with MuteServer() as mute:
        opts["aws_endpoint"] = mute.url
        proc = ingest(cli, tmp_path, "s3://bucket/a/b/c", opts)
        code, err = finish(proc)
    pattern = (r"timef: error: object store s3://bucket/a/b/c/ds/manifest\.json: Generic S3 error: Error performing "
               r"GET http://127\.0\.0\.1:\d+/bucket/a/b/c/ds/manifest\.json in (\d+)\.\d+s - HTTP error: error "
               r"sending request: operation timed out\n")
    assert code == 3, err
    m = re.fullmatch(pattern, err)
    assert m is not None, err
    assert m.group(1) == "1", err


def test_a_failed_multipart_upload_reports_its_own_error(tmp_path: Path) -> None:
    endpoint = s3_endpoint()
    bucket = s3_bucket(endpoint)
    ds = timef.TimeFDataset("big", "v1")
    ds.add_source(source_id="src", name="src")
    # incompressible: the one shard passes 10 MiB, so it goes out as a multipart upload
    ds.add_series(time_series_id="noise", spec_type="ecg", channel="I", sampling_rate_hz=1.0,
                  values=np.random.default_rng(0).standard_normal(3_500_000).astype(np.float32))
    ds.add_sample(sample_id="a", source_id="src", series=["noise"])
    with Proxy(endpoint, fail_parts=True) as proxy:
        with pytest.raises(OSError) as e:
            with timef.TimeFWriter(f"s3://{bucket}/root", ds, storage_options=s3_options(proxy.url)) as w:
                w.write()
    text = str(e.value)
    assert "InvalidPart: injected part failure" in text, text
    assert "NoSuchUpload" not in text and "<?xml" not in text, text
    shard = f"s3://{bucket}/root/big/v1/time_series/shard-00000.parquet"
    # errno EIO (the store gave none), the URL printed once, as Python prints an OSError's filename
    assert re.fullmatch(r"\[Errno 5\] object store: "
                        r".* - Server returned non-2xx status code: 400 Bad Request: InvalidPart: injected part "
                        rf"failure: '{re.escape(shard)}'", text), text
    assert (e.value.errno, e.value.filename) == (5, shard)
    assert s3_keys(endpoint, bucket, "root/") == []


def test_an_unknown_storage_option_is_named_with_close_matches(cli: Path) -> None:
    out = run(cli, "ls", "s3://bucket/root", "--storage-option", "bogus_key=1")
    assert (out.returncode, out.stderr) == (2, "timef: error: unknown storage option `bogus_key` for s3://bucket/root\n")
    out = run(cli, "ls", "s3://bucket/root", "--storage-option", "aws_endpont=http://x", "--storage-option",
              "timout=5s")
    assert (out.returncode, out.stderr) == (
        2, "timef: error: unknown storage option `aws_endpont` for s3://bucket/root (did you mean `aws_endpoint`?)\n")
    out = run(cli, "ls", "s3://bucket/root", "--storage-option", "timout=5s")
    assert (out.returncode, out.stderr) == (
        2, "timef: error: unknown storage option `timout` for s3://bucket/root (did you mean `timeout`?)\n")
    with pytest.raises(timef.TimeFValidationError) as e:
        timef.open("s3://bucket/root/ds/v1", storage_options={"aws_secret_acess_key": "x"})
    assert str(e.value) == ("unknown storage option `aws_secret_acess_key` for s3://bucket/root/ds/v1 "
                            "(did you mean `aws_secret_access_key`?)")
    assert (e.value.id, e.value.field) == ("aws_secret_acess_key", "storage_options")
    # file:// takes no key (review 62: it dropped them), as a local path does
    for url in ["file:///nonexistent/ds/v1", "/nonexistent/ds/v1"]:
        with pytest.raises(ValueError) as v:
            timef.open(url, storage_options={"region": "x", "aws_region": "y"})
        assert str(v.value) == ("storage_options[\"aws_region\"]: storage options apply to cloud object-store URLs "
                                f"(s3://, gs://, az://), not {url!r}".replace("'", '"'))


def test_an_endpoint_that_is_not_an_http_url_is_a_validation_error_not_a_panic(cli: Path) -> None:
    reason = ("the endpoint (option aws_endpoint, or its environment variable) is not an http:// or https:// URL "
              "with a host")
    for endpoint in ["notaurl", "http://[::1"]:
        out = run(cli, "ls", "s3://bucket/root", "--storage-option", f"aws_endpoint={endpoint}")
        assert (out.returncode, out.stderr) == (2, f"timef: error: invalid URL s3://bucket/root: {reason}\n")
        with pytest.raises(timef.TimeFValidationError) as e:
            timef.open("s3://bucket/root/ds/v1", storage_options={"aws_endpoint": endpoint})
        assert str(e.value) == f"invalid URL s3://bucket/root/ds/v1: {reason}"
        assert (e.value.id, e.value.field, e.value.reason) == ("s3://bucket/root/ds/v1", "root", reason)


# -- an edit's failed reads of its base ---------------------------------------------------------

def test_a_failed_read_of_an_edits_base_is_an_os_error_exit_3(cli: Path, tmp_path: Path) -> None:
    """The base's shard reads fail (500 through a proxy, no retries): the edit fails as a read of that
    version fails, I/O (exit 3, OSError), not as a user's loader (once exit 2, TimeFValidationError)."""
    endpoint = s3_endpoint()
    bucket = s3_bucket(endpoint)
    assert finish(ingest(cli, tmp_path, f"s3://{bucket}/root", s3_options(endpoint)))[0] == 0
    base = f"s3://{bucket}/root/ds/v1"
    with Proxy(endpoint, fail_ranged_gets_of="/time_series/shard-") as proxy:
        options = {**s3_options(proxy.url), "max_retries": "0"}
        done = run(cli, *storage_args(options), "edit", base, "--out-root", str(tmp_path / "out"), "--version", "v2",
                   "--remove-sample", "item-3-0001")
        assert done.returncode == 3, done.stderr
        assert done.stderr.startswith("timef: error: ") and "injected read failure" in done.stderr, done.stderr
        with pytest.raises(OSError, match="injected read failure") as e:
            timef.edit_version(base, tmp_path / "out", dataset_version="v2", remove_sample_ids=["item-3-0001"],
                               storage_options=options)
    # EIO (the store gave no errno), the shard's URL printed once, as Python prints an OSError's filename
    assert e.value.errno == 5 and e.value.filename.startswith(f"{base}/time_series/shard-"), e.value
    assert str(e.value).count(e.value.filename) == 1, str(e.value)
    assert not (tmp_path / "out").exists()


def test_an_edit_between_file_urls_and_s3_takes_the_options_for_the_s3_side(tmp_path: Path) -> None:
    """Review 72: storage_options went to the file:// side too, which refused them."""
    endpoint = s3_endpoint()
    bucket = s3_bucket(endpoint)
    data = write_ipc(gluonts_rows(6, seed=3), tmp_path / "rows.arrow")
    local = timef.ingest_arrow(data, tmp_path / "r", dataset_name="ds", dataset_version="v1", sampling_rate_hz=1.0)
    options = s3_options(endpoint)
    on_s3 = timef.edit_version(f"file://{local}", f"s3://{bucket}/edited", dataset_version="v2",
                               remove_sample_ids=["item-3-0001"], storage_options=options)
    assert on_s3 == f"s3://{bucket}/edited/ds/v2"
    back = timef.edit_version(on_s3, f"file://{tmp_path / 'back'}", dataset_version="v3",
                              remove_sample_ids=["item-3-0002"], storage_options=options)
    assert back == f"file://{tmp_path / 'back'}/ds/v3"
    assert timef.open(back).samples().column("sample_id").to_pylist() == [
        "item-3-0000", "item-3-0003", "item-3-0004", "item-3-0005"]
    with pytest.raises(ValueError, match="neither base_dir nor out_root is one"):
        timef.edit_version(local, f"file://{tmp_path / 'x'}", dataset_version="v4",
                           remove_sample_ids=["item-3-0003"], storage_options=options)


def test_a_damaged_base_shard_is_a_corrupt_version_in_an_edit(tmp_path: Path) -> None:
    """A truncated shard of the base: the edit raises CorruptVersionError, as a read of the base does."""
    data = write_ipc(gluonts_rows(6, seed=3), tmp_path / "rows.arrow")
    base = timef.ingest_arrow(data, tmp_path / "r", dataset_name="ds", dataset_version="v1", sampling_rate_hz=1.0)
    shard = Path(base) / "time_series" / "shard-00000.parquet"
    with open(shard, "r+b") as f:
        f.truncate(shard.stat().st_size // 2)
    with pytest.raises(timef.CorruptVersionError, match="shard-00000.parquet"):
        timef.edit_version(base, tmp_path / "out", dataset_version="v2", description="x")
    with pytest.raises(timef.CorruptVersionError, match="shard-00000.parquet"):
        timef.edit_version(base, tmp_path / "out", dataset_version="v2", remove_sample_ids=["item-3-0001"])
    assert not (tmp_path / "out").exists()


def small_s3_version(tmp_path: Path) -> tuple[str, str, str]:
    """(endpoint, bucket, version URL): 40 series in many small row groups and shards, on the test's S3 server."""
    endpoint = s3_endpoint()
    bucket = s3_bucket(endpoint)
    data = write_ipc(gluonts_rows(40, seed=3), tmp_path / "rows.arrow")
    small = dict(chunk_max_bytes=1024, row_group_target_bytes=4096, shard_target_bytes=16384)
    version = timef.ingest_arrow(data, f"s3://{bucket}/root", dataset_name="ds", dataset_version="v1",
                                 storage_options=s3_options(endpoint), **small)
    return endpoint, bucket, version


def test_a_server_gone_mute_mid_iteration_fails_the_windows_within_one_timeout(cli: Path, tmp_path: Path) -> None:
    """Review 24: the window loader's read-ahead met a mute server, then its decode read the same bytes again,
    request after request (60-100 s with the default 20 s timeout). A failed fetch now fails the iteration: with
    a 1 s timeout, within about one timeout of the server going mute, whatever the buffer."""
    endpoint, bucket, version = small_s3_version(tmp_path)
    with Proxy(endpoint) as proxy:
        options = {**s3_options(proxy.url), "timeout": "1s", "retry_timeout_s": "0"}
        plan = timef.open(version, storage_options=options).window_plan(32, shuffle_buffer_row_groups=1)
        batches = plan.windows(batch_size=4)
        next(batches)
        proxy.mute = True
        start = time.monotonic()
        with pytest.raises(OSError, match="timed out"):
            for _ in batches:
                pass
        took = time.monotonic() - start
        muted = proxy.muted
    print(f"mute mid-iteration: failed {took:.2f} s after the server went mute, {muted} requests unanswered")
    assert took < 2.5, f"{took:.2f} s, {muted} requests"


def test_a_listed_file_that_is_gone_is_a_corrupt_version_on_every_backend(cli: Path, tmp_path: Path) -> None:
    """A shard the manifest lists, deleted after the commit (review 24: mid-iteration on
    S3 it raised a bare OSError): every verb that reads it, and the Python reads, report
    one corrupt version on a local path, a file:// URL and S3 alike, where `cat`,
    `export`, `edit` and `dedup` said I/O (exit 3 on S3, a local "No such file")."""
    endpoint, bucket, on_s3 = small_s3_version(tmp_path)
    opts = s3_options(endpoint)
    small = dict(chunk_max_bytes=1024, row_group_target_bytes=4096, shard_target_bytes=16384)
    data = write_ipc(gluonts_rows(40, seed=3), tmp_path / "rows.arrow")
    local = timef.ingest_arrow(data, str(tmp_path / "root"), dataset_name="ds", dataset_version="v1", **small)
    index = timef.open(local).index().to_pylist()
    gone = "time_series/shard-00001.parquet"
    series = next(r["time_series_id"] for r in index if r["shard_path"] == gone)
    sample = timef.open(local).samples().column("sample_id")[0].as_py()
    # opened, and samples.parquet read once, before the deletes (review 133: a
    # later read's GET, past the size then known, said I/O on file:// and S3)
    warm = {}
    for version in (local, f"file://{local}", on_s3):
        warm[version] = timef.open(version, storage_options=opts if version.startswith("s3://") else None)
        warm[version].samples()
    s3_client(endpoint).delete_object(Bucket=bucket, Key=f"root/ds/v1/{gone}")
    (Path(local) / gone).unlink()
    for version in (local, f"file://{local}", on_s3):
        storage = opts if version.startswith("s3://") else None
        args = storage_args(opts) if storage else []
        file = f"{version}/{gone}"
        want = f"timef: error: corrupt version: {file}: listed in manifest.json but missing\n"
        out_root = f"s3://{bucket}/edits" if storage else str(tmp_path / "edits")
        for verb in (["info", version], ["cat", version, series], ["export", version, "--out", str(tmp_path / "x.arrow")],
                     ["dedup", version, version],
                     ["edit", version, "--out-root", out_root, "--version", "v2", "--remove-sample", sample],
                     ["edit", version, "--out-root", out_root, "--version", "v2", "--remove-sample", sample,
                      "--dry-run"]):
            out = run(cli, *verb, *args)
            assert (out.returncode, out.stdout, out.stderr) == (2, "", want), (version, verb)
        out = run(cli, "verify", version, *args)
        assert out.returncode == 1, out.stderr
        assert f"FAIL [listing] {gone} manifest files[" in out.stdout, out.stdout
        assert not (tmp_path / "x.arrow").exists() and not (tmp_path / "edits").exists()
        v = timef.open(version, storage_options=storage)
        with pytest.raises(timef.CorruptVersionError) as e:
            v.read_series(series)
        assert (e.value.path, e.value.reason) == (file, "listed in manifest.json but missing")
        with pytest.raises(timef.CorruptVersionError) as e:
            for _ in v.window_plan(32).windows(batch_size=8):
                pass
        assert (e.value.path, e.value.reason) == (file, "listed in manifest.json but missing")
    assert s3_keys(endpoint, bucket, "edits/") == []
    s3_client(endpoint).delete_object(Bucket=bucket, Key="root/ds/v1/samples.parquet")
    (Path(local) / "samples.parquet").unlink()
    for version, v in warm.items():
        with pytest.raises(timef.CorruptVersionError) as e:
            v.samples()
        assert (e.value.path, e.value.reason) == (f"{version}/samples.parquet", "listed in manifest.json but missing")
    # the bucket gone since the version was opened is missing, not a corrupt version (review 133)
    s3 = s3_client(endpoint)
    s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in s3_keys(endpoint, bucket, "")]})
    s3.delete_bucket(Bucket=bucket)
    for read in (lambda v: v.samples(), lambda v: v.read_series(series), lambda v: v.annotations()):
        with pytest.raises(FileNotFoundError) as e:
            read(warm[on_s3])
        assert str(e.value) == f"[Errno 2] not found: no such bucket: 's3://{bucket}'"
    # the whole version gone since the open is missing too, as at open, whether
    # read before (review 136) or not (review 135: file:// said corrupt)
    other = next(r["time_series_id"] for r in index if r["shard_path"] != gone)
    for version, what in [(tmp_path / "whole" / "v1", "the directory was removed since it was opened"),
                          (f"file://{tmp_path}/whole/v1", "no object under this prefix")]:
        for warm_first in (False, True):
            shutil.copytree(local, tmp_path / "whole" / "v1")
            v = timef.open(str(version))
            if warm_first:
                v.index(), v.annotations()
            shutil.rmtree(tmp_path / "whole")
            for read in (lambda: v.read_series(other), lambda: v.annotations()):
                with pytest.raises(FileNotFoundError) as e:
                    read()
                assert str(e.value) == f"[Errno 2] not found: {what}: '{version}'", (version, warm_first)
    # a local version read through its handle: its path leading elsewhere
    # (a folder above renamed) is not its removal (review 136)
    shutil.copytree(local, tmp_path / "here" / "v1")
    v = timef.open(str(tmp_path / "here" / "v1"))
    v.index()
    (tmp_path / "here").rename(tmp_path / "moved")
    (tmp_path / "moved" / "v1" / "time_series" / "shard-00000.parquet").unlink()
    first = next(r["time_series_id"] for r in index if r["shard_path"] == "time_series/shard-00000.parquet")
    with pytest.raises(timef.CorruptVersionError) as e:
        v.read_series(first)
    assert (e.value.path, e.value.reason) == (f"{tmp_path}/here/v1/time_series/shard-00000.parquet",
                                              "listed in manifest.json but missing")
    # verify's copy of a file:// version, the version or its manifest gone
    # while it copies: named by the URL, never by its copy (review 136)
    for removed, want in [("whole", "not found: {v}: no object under this prefix"),
                          ("manifest", "not a TimeF version: {v}: no manifest.json")]:
        on_disk = tmp_path / "copied" / "v1"
        shutil.copytree(local, on_disk)
        url = f"file://{on_disk}"
        resume = tmp_path / f"resume-{removed}"
        proc = subprocess.Popen([str(cli), "verify", url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=paused_env("verify-copying", resume))
        wait_paused(proc, "verify-copying")
        if removed == "whole":
            shutil.rmtree(on_disk)
        else:
            (on_disk / "manifest.json").unlink()
        resume.touch()
        assert finish(proc) == (2, "timef: error: " + want.format(v=url) + "\n"), removed
        shutil.rmtree(tmp_path / "copied", ignore_errors=True)
