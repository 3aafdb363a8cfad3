"""Writing from Python: exact round trip, loaders, aborts, errors, progress, object stores."""

from __future__ import annotations

import numbers
import signal
import threading
import uuid
import warnings
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

import timef
from conftest import REPO, check_conforming, listing, s3_bucket, s3_endpoint, s3_options, tree_bytes, wave

SMALL = dict(chunk_max_bytes=1024, row_group_target_bytes=2048, shard_target_bytes=4096)


def build(calls: dict[str, int] | None = None) -> tuple[timef.TimeFDataset, dict[str, np.ndarray]]:
    """A dataset using every entity kind: loaders and values, a series shared by
    two samples, a windowed sample, subjects, a shared annotation, two tasks."""
    ds = timef.TimeFDataset("py-ecg", "v1", description="built from Python", license="CC-BY-4.0")
    ds.add_source(source_id="ptb", name="PTB-XL", url="https://example.org/ptb")
    values = {
        "rec-1/I": wave(1, 700),
        "rec-1/II": wave(2, 700),
        "rec-2/I": wave(3, 1300),
        "shared/acc": wave(4, 300),
    }

    def loader(sid: str):
        def load() -> np.ndarray:
            if calls is not None:
                calls[sid] = calls.get(sid, 0) + 1
            return values[sid]

        return load

    ds.add_series(time_series_id="rec-1/I", spec_type="ecg", channel="I", sampling_rate_hz=500.0, units="mV",
                  loader=loader("rec-1/I"), t_start_s=10.0, t_end_s=11.4)
    ds.add_series(time_series_id="rec-1/II", spec_type="ecg", channel="II", sampling_rate_hz=500.0,
                  values=values["rec-1/II"])
    ds.add_series(time_series_id="rec-2/I", spec_type="ecg", channel="I", sampling_rate_hz=500.0,
                  loader=loader("rec-2/I"))
    ds.add_series(time_series_id="shared/acc", spec_type="accelerometer", channel="x", sampling_rate_hz=50.0,
                  loader=loader("shared/acc"))
    ds.add_sample(sample_id="rec-1", source_id="ptb", subject_id="patient-7",
                  series=["rec-1/I", ("rec-1/II", "main"), ("shared/acc", "context")], metadata={"site": "a"})
    ds.add_sample(sample_id="rec-2", source_id="ptb", subject_id="patient-8", t_start_s=0.5, t_end_s=1.5,
                  series=["rec-2/I", ("shared/acc", "context")])
    ds.add_sample(sample_id="rec-3", source_id="ptb", series=["shared/acc"])
    ds.add_annotation(annotation_id="lbl-norm", sample_ids=["rec-1", "rec-2"], annotation_type="label", key="class",
                      value_str="NORM")
    ds.add_annotation(annotation_id="lbl-norm", sample_ids=["rec-3"], annotation_type="label", key="class",
                      value_str="NORM")
    ds.add_annotation(annotation_id="hr-1", sample_ids=["rec-1"], annotation_type="number", key="heart_rate",
                      value_num=72.5, t_start_s=10.0, t_end_s=11.0, channel="I")
    ds.add_task("diagnosis", task_id="t-train", task_type="classification", sample_ids=["rec-1", "rec-2"],
                split="train", target="class")
    ds.add_task("diagnosis", task_id="t-test", task_type="classification", sample_ids=["rec-3"], split="test",
                target="class", from_task="t-train")
    ds.add_task("forecast", task_id="f-1", task_type="forecasting", sample_ids=["rec-2"], target_sample_id="rec-2",
                context_sample_ids=["rec-1"], horizon=24)
    return ds, values


def write(root: Path, ds: timef.TimeFDataset, **kw) -> str:
    with timef.TimeFWriter(root, ds, **kw) as w:
        w.write()
    assert w.committed
    return w.version_dir


def test_round_trip_is_exact_and_conforming(tmp_path: Path) -> None:
    ds, values = build()
    assert ds.subjects == ["patient-7", "patient-8"]
    vdir = write(tmp_path, ds, **SMALL)
    assert vdir == str(tmp_path / "py-ecg" / "v1")
    v = timef.open(vdir)
    for sid, expected in values.items():
        got = v.read_series(sid)
        assert got.dtype == np.float32
        assert np.array_equal(got.view(np.uint32), expected.view(np.uint32)), sid
    m = v.manifest
    assert m["dataset"]["name"] == "py-ecg" and m["dataset"]["description"] == "built from Python"
    assert m["counts"]["samples"] == 3 and m["counts"]["time_series"] == 4
    assert m["writer"]["chunk_max_bytes"] == 1024
    assert len([f for f in m["files"] if f["path"].startswith("time_series/")]) > 1
    samples = v.samples().to_pylist()
    assert [s["sample_id"] for s in samples] == ["rec-1", "rec-2", "rec-3"]
    assert samples[0]["subject_id"] == "patient-7" and samples[2]["subject_id"] is None
    assert [(r["time_series_id"], r["view"]) for r in samples[0]["series"]] == [
        ("rec-1/I", "main"), ("rec-1/II", "main"), ("shared/acc", "context")]
    assert (samples[1]["t_start_s"], samples[1]["t_end_s"]) == (0.5, 1.5)
    ann = sorted((r["sample_id"], r["annotation_id"], r["value_str"], r["value_num"]) for r in v.annotations().to_pylist())
    assert ann == [("rec-1", "hr-1", None, 72.5), ("rec-1", "lbl-norm", "NORM", None),
                   ("rec-2", "lbl-norm", "NORM", None), ("rec-3", "lbl-norm", "NORM", None)]
    assert v.task_names() == ["diagnosis", "forecast"]
    diag = v.task("diagnosis").to_pylist()
    assert [(t["task_id"], t["split"], t["sample_ids"], t["from_task"]) for t in diag] == [
        ("t-test", "test", ["rec-3"], "t-train"), ("t-train", "train", ["rec-1", "rec-2"], None)]
    fc = v.task("forecast").to_pylist()[0]
    assert (fc["target_sample_id"], fc["context_sample_ids"], fc["horizon"]) == ("rec-2", ["rec-1"], 24)
    window = v.read_sample("rec-2")
    assert list(window) == ["rec-2/I", "shared/acc"]
    assert np.array_equal(window["rec-2/I"], values["rec-2/I"][250:750])
    assert np.array_equal(window["shared/acc"], values["shared/acc"][25:75])
    assert v.verify()["findings"] == []
    check_conforming(vdir)


def test_ingest_ucr_takes_one_path_as_one_file(tmp_path: Path) -> None:
    # a str was iterated as one-letter paths ("i: maps to split 'i' like i")
    train = REPO / "examples/data/BasicMotions_TRAIN.ts"
    dirs = [
        timef.ingest_ucr(paths, tmp_path / name, dataset_name="bm", dataset_version="v1")
        for name, paths in [("str", str(train)), ("path", train), ("list", [train])]
    ]
    assert tree_bytes(dirs[0]) == tree_bytes(dirs[1]) == tree_bytes(dirs[2])
    assert len(timef.open(dirs[0]).samples()) == 40
    assert len(timef.read_ucr(str(train), dataset_name="bm", dataset_version="v1").sample_ids) == 40
    with pytest.raises(TypeError, match=r"^expected a path \(str or os.PathLike\) or a sequence of paths: "):
        timef.read_ucr(3, dataset_name="bm", dataset_version="v1")


def test_each_loader_runs_once_even_when_shared(tmp_path: Path) -> None:
    calls: dict[str, int] = {}
    ds, _ = build(calls)
    # the same series added again with equal metadata is one series, loaded once
    ds.add_series(time_series_id="shared/acc", spec_type="accelerometer", channel="x", sampling_rate_hz=50.0,
                  loader=lambda: pytest.fail("a second loader of the same series ran"))
    assert calls == {}
    write(tmp_path, ds)
    assert calls == {"rec-1/I": 1, "rec-2/I": 1, "shared/acc": 1}


class LoaderFailed(Exception):
    pass


def test_raising_loader_leaves_nothing_and_reraises_its_exception(tmp_path: Path) -> None:
    ds, _ = build()

    def broken_loader() -> np.ndarray:
        raise LoaderFailed("disk on fire")

    ds.add_series(time_series_id="zz", spec_type="zz", channel="z", sampling_rate_hz=1.0, loader=broken_loader)
    ds.add_sample(sample_id="rec-zz", source_id="ptb", series=["zz"])
    with pytest.raises(LoaderFailed, match="disk on fire") as info:
        with timef.TimeFWriter(tmp_path, ds) as w:
            w.write()
    assert any(entry.name == "broken_loader" for entry in info.traceback)
    assert listing(tmp_path) == []


def test_raising_progress_callback_aborts(tmp_path: Path) -> None:
    ds, _ = build()

    def cb(e: timef.WriteProgressEvent) -> None:
        if e.kind == "series_written" and e.done == 2:
            raise KeyError("stop here")

    with pytest.raises(KeyError, match="stop here"):
        with timef.TimeFWriter(tmp_path, ds, progress_cb=cb) as w:
            w.write()
    assert listing(tmp_path) == []


@pytest.fixture
def ctrl_c_raises():
    """SIGINT raises KeyboardInterrupt during the test, however the runner was
    started: a shell's background job starts with SIGINT ignored, and Python
    then installs no handler, so the signal would be lost."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.usefixtures("ctrl_c_raises")
def test_ctrl_c_in_a_loader_aborts_cleanly(tmp_path: Path) -> None:
    ds, _ = build()

    def interrupted() -> np.ndarray:
        signal.raise_signal(signal.SIGINT)
        return np.ones(3, np.float32)

    ds.add_series(time_series_id="a", spec_type="a", channel="a", sampling_rate_hz=1.0, loader=interrupted)
    ds.add_sample(sample_id="rec-a", source_id="ptb", series=["a"])
    with pytest.raises(KeyboardInterrupt):
        with timef.TimeFWriter(tmp_path, ds) as w:
            w.write()
    assert listing(tmp_path) == []


@pytest.mark.usefixtures("ctrl_c_raises")
def test_ctrl_c_while_the_core_encodes_aborts_cleanly(tmp_path: Path) -> None:
    """SIGINT arrives while the GIL is released: the check after the next series raises it."""
    ds = timef.TimeFDataset("big", "v1")
    ds.add_source(source_id="s", name="s")
    started = threading.Event()

    def first() -> np.ndarray:
        started.set()
        return np.ones(10, np.float32)

    ds.add_series(time_series_id="a-first", spec_type="a", channel="a", sampling_rate_hz=1.0, loader=first)
    ds.add_sample(sample_id="first", source_id="s", series=["a-first"])
    block = wave(5, 50_000)
    for i in range(400):
        ds.add_series(time_series_id=f"b-{i:04}", spec_type="b", channel="b", sampling_rate_hz=1.0, values=block + i)
        ds.add_sample(sample_id=f"s-{i:04}", source_id="s", series=[f"b-{i:04}"])
    killer = threading.Thread(target=lambda: started.wait(30) and signal.pthread_kill(threading.main_thread().ident,
                                                                                        signal.SIGINT))
    killer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            with timef.TimeFWriter(tmp_path, ds) as w:
                w.write()
    finally:
        killer.join()
    assert listing(tmp_path) == []


def test_existing_version_raises_file_exists_and_leaves_root_untouched(tmp_path: Path) -> None:
    write(tmp_path, build()[0])
    before = tree_bytes(tmp_path)
    ds, _ = build()
    with pytest.raises(FileExistsError) as info:
        with timef.TimeFWriter(tmp_path, ds) as w:
            w.write()
    assert info.value.filename == str(tmp_path / "py-ecg" / "v1")
    # the path is printed once, as Python prints an OSError's filename
    assert str(info.value) == f"[Errno 17] version already exists: '{tmp_path / 'py-ecg' / 'v1'}'"
    assert tree_bytes(tmp_path) == before


class Integral:
    """An integer type of another library (sympy's, gmpy2's): a registered ``numbers.Integral``."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value

    def __int__(self) -> int:
        return self.value

    def __float__(self) -> float:
        return float(self.value)


numbers.Integral.register(Integral)


class IndexRaises(Integral):
    """An Integral whose ``__index__`` fails: it is taken by ``int()``."""

    def __index__(self) -> int:
        raise ValueError("no __index__")


def test_a_loader_returning_none_or_2d_values_is_named_by_its_series(tmp_path: Path) -> None:
    from decimal import Decimal

    import pandas as pd
    import polars as pl
    import pyarrow as pa

    class Labelled(pa.ExtensionType):
        def __init__(self, storage: pa.DataType) -> None:
            super().__init__(storage, "test.labelled")

        def __arrow_ext_serialize__(self) -> bytes:
            return b""

        @classmethod
        def __arrow_ext_deserialize__(cls, storage_type: pa.DataType, serialized: bytes) -> Labelled:
            return cls(storage_type)

    dictionary = pa.DictionaryArray.from_arrays(pa.array([0, 1, 0], pa.int32()), pa.array([1.0, None]))
    for returned, reason in [
        (None, "the loader returned None, not its values"),
        (np.zeros((2, 2), dtype=np.float32), "must be one-dimensional, got 2 dimensions"),
        (["a"], "text values (<U1) are not taken: numbers only"),
        (np.array(["1.5", "2"]), "text values (<U3) are not taken: numbers only"),
        ([b"1.5"], "text values (|S3) are not taken: numbers only"),
        (np.array([1 + 2j, 3 + 0j]), "complex values are not taken (their imaginary part would be lost)"),
        ([1 + 2j], "complex values are not taken (their imaginary part would be lost)"),
        (np.array(["2020-01-01"], dtype="datetime64[s]"),
         "datetime64[s] values are not taken (their unit would be lost): convert them to numbers"),
        (np.array([1, 2], dtype="timedelta64[ms]"),
         "timedelta64[ms] values are not taken (their unit would be lost): convert them to numbers"),
        (np.array([1.0, "1.5"], dtype=object), "value 1 is not a number (str)"),
        (np.array([b"2"], dtype=object), "value 0 is not a number (bytes)"),
        (pa.array(["1.5", "2"]), "value 0 is not a number (str)"),
        (pa.array([b"1"], pa.binary()), "value 0 is not a number (bytes)"),
        (np.array(["1.5"], dtype=np.dtypes.StringDType()), "text values (StringDType()) are not taken: numbers only"),
        (np.array([bytearray(b"1.5"), 2.0], dtype=object),
         "value 0 is not a number (bytearray)"),
        (np.array([2.0, np.complex128(1 + 2j)], dtype=object), "value 1 is not a number (complex128)"),
        ([np.timedelta64(5, "ms"), 2.0], "value 0 is not a number (timedelta64)"),
        (np.array([np.datetime64("2020-01-01"), 2.0], dtype=object), "value 0 is not a number (datetime64)"),
        (np.array([np.array("1.5"), 2.0], dtype=object), "value 0 is not a number (ndarray)"),
        (np.array([([1.5, 9.0],)], dtype=[("a", "<f4", (2,))]),
         "structured values ([('a', '<f4', (2,))]) of several values a row are not taken"),
        (np.array([("1.5",)], dtype=[("a", "<U3")]), "text values (<U3) are not taken: numbers only"),
        (np.array([((1 + 2j,),)], dtype=[("a", [("b", "<c8")])]),
         "complex values are not taken (their imaginary part would be lost)"),
        (np.array(1.5, dtype=object), "must be one-dimensional, got 0 dimensions"),
        (np.array([object()]), "value 0 is not a number (object)"),
        ([10**400], "int too large to convert to float"),
        (np.ma.array([1.0, 2.0, 3.0], mask=[False, True, False]), "value 1 is masked (missing)"),
        (np.ma.array([[1.0]], mask=[[True]]), "must be one-dimensional, got 2 dimensions"),
        (np.array([1 << 24, (1 << 24) + 1], dtype=np.int64),
         "value 1 = 16777217 is not exactly representable as float32"),
        (np.array([(1 << 64) - 1], dtype=np.uint64),
         "value 0 = 18446744073709551615 is not exactly representable as float32"),
        (np.array([(1 << 31) - 1], dtype=">i4"), "value 0 = 2147483647 is not exactly representable as float32"),
        ([1, (1 << 24) + 1], "value 1 = 16777217 is not exactly representable as float32"),
        (np.array([1.5, (1 << 24) + 1], dtype=object), "value 1 = 16777217 is not exactly representable as float32"),
        (np.array([1.5, np.uint64((1 << 64) - 1)], dtype=object),
         "value 1 = 18446744073709551615 is not exactly representable as float32"),
        (np.array([1.5, 10**39], dtype=object), f"value 1 = {10**39} is outside the float32 range"),
        (np.array([1.0, -1e39]), "value 1 = -1e39 is outside the float32 range"),
        (np.array([1.5, Decimal("1e39")], dtype=object), "value 1 = 1e39 is outside the float32 range"),
        (np.array([((1 << 24) + 1,)], dtype=[("a", "<i8")]),
         "value 0 = 16777217 is not exactly representable as float32"),
        (np.ma.array(np.array([(1.5,), (2.0,)], dtype=[("a", "<f8")]), mask=[(False,), (True,)]),
         "value 1 is masked (missing)"),
        (np.array([Decimal("1e400"), 1], dtype=object), "value 0 = 1E+400 is outside the float32 range"),
        (np.array([1.0, 1e39, (1 << 24) + 1], dtype=object), "value 1 = 1e39 is outside the float32 range"),
        (np.array([1.0, (1 << 24) + 1, 1e39], dtype=object),
         "value 1 = 16777217 is not exactly representable as float32"),
        (np.array([1.5, Integral((1 << 24) + 1)], dtype=object),
         "value 1 = 16777217 is not exactly representable as float32"),
        (np.array([None, (1 << 24) + 1], dtype=object), "value 0 is None (missing)"),
        (np.array([1e39, None], dtype=object), "value 1 is None (missing)"),
        ([2.0, float("nan"), None], "value 2 is None (missing)"),
        (np.array([1.5, Integral(None)], dtype=object), "value 1 is not a number (Integral)"),
        (np.array(["a", 2**24 + 1, None], dtype=object), "value 2 is None (missing)"),
        ([None, 10**400], "value 0 is None (missing)"),
        # past the first blocks of 4096 integers checked together
        (np.where(np.arange(10_000) == 9000, (1 << 24) + 1, np.arange(10_000) << 20),
         "value 9000 = 16777217 is not exactly representable as float32"),
        (np.ma.array(np.array((1.5,), [("a", "<f8")]), mask=(True,)), "must be one-dimensional, got 0 dimensions"),
        # a null of Arrow-backed data, before numpy makes it NaN (or a value), and before an inexact integer
        (pa.array([(1 << 24) + 1, None, 3]), "value 1 is null (missing)"),
        (pa.chunked_array([[1.5], [2.0, None]]), "value 2 is null (missing)"),
        (pl.Series([1.0, None]), "value 1 is null (missing)"),
        (pd.Series([1, None, 3], dtype="Int64"), "value 1 is null (missing)"),
        (pd.array([True, None], dtype="boolean"), "value 1 is null (missing)"),
        (pd.Series([2.5, None], dtype="float64[pyarrow]"), "value 1 is null (missing)"),
        (pd.Index([7, None], dtype="Int64"), "value 1 is null (missing)"),
        # nulls null_count leaves out: in a dictionary, in run-end-encoded values
        (pa.DictionaryArray.from_arrays(pa.array([0, 1, 0], pa.int32()), pa.array([1.0, None])),
         "value 1 is null (missing)"),
        (pa.chunked_array([pa.RunEndEncodedArray.from_arrays(pa.array([2, 4], pa.int32()), pa.array([1.0, None]))]),
         "value 2 is null (missing)"),
        (pa.chunked_array([dictionary.slice(1, 0), dictionary.slice(2), dictionary.slice(0, 2)]),
         "value 2 is null (missing)"),
        (pa.DictionaryArray.from_arrays(pa.array([1, None], pa.int32()), pa.array([0.5, 2.0])),
         "value 1 is null (missing)"),
        (pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int32()), pa.DictionaryArray.from_arrays(
            pa.array([1, 0], pa.int32()), pa.array([None, 2.0]))), "value 1 is null (missing)"),
        # subclasses, made outside the libraries
        (type("MySeries", (pd.Series,), {})([1, None, 3], dtype="Int64"), "value 1 is null (missing)"),
        (type("MyPolars", (pl.Series,), {})([1.0, None]), "value 1 is null (missing)"),
        (pd.MultiIndex.from_tuples([(1, 2)]), "value 0 is not a number (tuple)"),
        # pyarrow cannot decode a run-end-encoded dictionary; from 26 its is_null tells
        *([(pa.RunEndEncodedArray.from_arrays(pa.array([1, 2], pa.int32()), pa.DictionaryArray.from_arrays(
            pa.array([0, None], pa.int32()), pa.array([1.0, 2.0]))), "value 1 is null (missing)")]
          if int(pa.__version__.split(".")[0]) >= 26 else []),
        # a dictionary behind an extension type or a pandas Arrow-backed array
        (pa.chunked_array([pa.ExtensionArray.from_storage(Labelled(dictionary.type), dictionary)]),
         "value 1 is null (missing)"),
        (pd.Series(pd.arrays.ArrowExtensionArray(dictionary)), "value 1 is null (missing)"),
        # numpy-backed pandas data is numpy's to judge
        (pd.Series(pd.date_range("2020-01-01", periods=2)),
         "datetime64[us] values are not taken (their unit would be lost): convert them to numbers"),
        (pd.to_timedelta(pd.Index([1, 2]), unit="s"),
         "timedelta64[us] values are not taken (their unit would be lost): convert them to numbers"),
        (pd.DataFrame({"array": pd.array([1.0, None], dtype="Float64")}), "must be one-dimensional, got 2 dimensions"),
        # a NaN is not a null: refused as not finite, when written
        (pa.array([1.0, float("nan")]), "value 1 is NaN, not finite"),
        (pd.Series([1.0, None]), "value 1 is NaN, not finite"),
    ]:
        ds, _ = build()
        ds.add_series(time_series_id="zz", spec_type="zz", channel="z", sampling_rate_hz=1.0, loader=lambda: returned)
        ds.add_sample(sample_id="rec-zz", source_id="ptb", series=["zz"])
        with pytest.raises(timef.TimeFValidationError) as info:
            with timef.TimeFWriter(tmp_path, ds) as w:
                w.write()
        assert (str(info.value), info.value.id, info.value.field, info.value.reason) == (
            f"invalid values of zz: {reason}", "zz", "values", reason)
        assert listing(tmp_path) == []
    ds, _ = build()
    with pytest.raises(timef.TimeFValidationError) as info:
        ds.add_series(time_series_id="yy", spec_type="zz", channel="z", sampling_rate_hz=1.0, values=[[1.0]])
    assert (str(info.value), info.value.id, info.value.field) == (
        "invalid values of yy: must be one-dimensional, got 2 dimensions", "yy", "values")
    # a null is refused where the values are given, not at the write
    with pytest.raises(timef.TimeFValidationError) as info:
        ds.add_series(time_series_id="xx", spec_type="zz", channel="z", sampling_rate_hz=1.0,
                      values=pd.Series([1.5, None], dtype="Float64"))
    assert (str(info.value), info.value.id, info.value.field) == (
        "invalid values of xx: value 1 is null (missing)", "xx", "values")
    assert "xx" not in ds.time_series_ids


def test_values_of_every_number_kind_are_taken_as_float32(tmp_path: Path) -> None:
    from decimal import Decimal
    from fractions import Fraction

    import pandas as pd
    import polars as pl
    import pyarrow as pa

    given = {
        "bool": (np.array([True, False, True]), [1.0, 0.0, 1.0]),
        "int8": (np.array([-128, 0, 127], dtype=np.int8), [-128.0, 0.0, 127.0]),
        "uint64": (np.array([0, 1 << 24, 7], dtype=np.uint64), [0.0, 16777216.0, 7.0]),
        "float16": (np.array([0.5, -2.0, 65504.0], dtype=np.float16), [0.5, -2.0, 65504.0]),
        "list": ([0.1, 2, -3.5], [np.float32(0.1), 2.0, -3.5]),
        "object": (np.array([1.5, 2, np.float32(-0.25), np.bool_(True), Decimal("0.5"), Fraction(3, 4)],
                            dtype=object), [1.5, 2.0, -0.25, 1.0, 0.5, 0.75]),
        "one field": (np.array([(1.5,), (-2.0,)], dtype=[("a", "<f4")]), [1.5, -2.0]),
        "int64": (np.array([-(1 << 24), 1 << 40, 7], dtype=">i8"), [-16777216.0, 2.0**40, 7.0]),
        "masked, none masked": (np.ma.array([0.5, 2.0], mask=[False, False]), [0.5, 2.0]),
        "masked one field": (np.ma.array(np.array([(1.5,), (2.0,)], dtype=[("a", "<f8")]), mask=[(False,), (False,)]),
                             [1.5, 2.0]),
        "big int objects": (np.array([1 << 100, -3, Integral(1 << 40), IndexRaises(5)], dtype=object),
                            [2.0**100, -3.0, 2.0**40, 5.0]),
        "float64 near the range": (np.array([3.0e38, -1e-50]), [3.0e38, -0.0]),
        "pyarrow": (pa.array([1.0, 2.5, -1.0], pa.float32()), [1.0, 2.5, -1.0]),
        "pyarrow int64 without nulls": (pa.chunked_array([[1 << 24], [-3]]), [16777216.0, -3.0]),
        "polars": (pl.Series([0.5, -2.0]), [0.5, -2.0]),
        "pandas Int64 without NA": (pd.Series([1 << 24, 5], dtype="Int64"), [16777216.0, 5.0]),
        "pandas boolean": (pd.array([True, False], dtype="boolean"), [1.0, 0.0]),
        # a null in the dictionary that no value uses is not a null of the values
        "pyarrow dictionary": (pa.DictionaryArray.from_arrays(pa.array([2, 0, 2], pa.int32()), pa.array([0.5, None, 2.0])),
                               [2.0, 0.5, 2.0]),
        "pyarrow run-end-encoded": (pa.RunEndEncodedArray.from_arrays(pa.array([2, 3], pa.int32()), pa.array([1.5, -1.0])),
                                    [1.5, 1.5, -1.0]),
    }
    ds = timef.TimeFDataset("kinds", "v1")
    ds.add_source(source_id="s", name="S")
    # numpy's overflow and underflow are its to ignore in a conversion (an
    # underflow rounds to zero, as the Arrow connector rounds it)
    with np.errstate(all="raise"), warnings.catch_warnings():
        warnings.simplefilter("error")
        for sid, (values, _) in given.items():
            ds.add_series(time_series_id=sid, spec_type="x", channel="0", sampling_rate_hz=1.0, values=values)
    ds.add_sample(sample_id="all", source_id="s", series=list(given))
    v = timef.open(write(tmp_path, ds))
    for sid, (_, expected) in given.items():
        got = v.read_series(sid)
        assert got.dtype == np.float32
        assert got.tolist() == np.array(expected, dtype=np.float32).tolist(), sid


def test_help_shows_the_writers_real_defaults() -> None:
    import inspect

    params = inspect.signature(timef.TimeFWriter).parameters
    defaults = {name: p.default for name, p in params.items() if p.default is not inspect.Parameter.empty}
    assert defaults == {
        "shard_target_bytes": 128 << 20,
        "row_group_target_bytes": 4 << 20,
        "chunk_max_bytes": 1 << 20,
        "compression": "zstd",
        "compression_level": 3,
        "progress_cb": None,
        "storage_options": None,
    }
    assert "Ellipsis" not in timef.TimeFWriter.__text_signature__


def test_help_shows_every_real_default() -> None:
    """Review 24: help() showed `...` (Ellipsis) for the defaults that are Rust constants or empty lists."""
    import inspect

    shown = {}
    for name in timef.__all__:
        obj = getattr(timef, name)
        members = [getattr(obj, m) for m in dir(obj) if not m.startswith("_")] if inspect.isclass(obj) else []
        for f in [obj, *members]:
            try:
                params = inspect.signature(f).parameters
            except (TypeError, ValueError):
                continue
            for p in params.values():
                assert p.default is not Ellipsis, f"{name}: {f.__name__}({p.name}=...)"
                shown[(getattr(f, "__qualname__", name), p.name)] = p.default
    assert shown[("plan", "shard_target_bytes")] == timef.DEFAULT_SHARD_TARGET_BYTES
    assert shown[("plan", "row_group_target_bytes")] == timef.DEFAULT_ROW_GROUP_TARGET_BYTES
    assert shown[("plan", "chunk_max_bytes")] == timef.DEFAULT_CHUNK_MAX_BYTES
    assert shown[("plan", "compression_level")] == timef.DEFAULT_COMPRESSION_LEVEL
    assert shown[("Version.window_plan", "shuffle_buffer_row_groups")] == timef.DEFAULT_SHUFFLE_BUFFER_ROW_GROUPS
    assert shown[("edit_version", "remove_sample_ids")] == ()
    assert shown[("WindowPlan.windows", "consumed")] == ()
    assert shown[("TimeFDataset.add_source", "name")] == ""


def test_help_shows_a_docstring_for_every_public_name() -> None:
    """A break-it review found help() bare for the add_* methods, two getters and the
    progress event's fields (their text was in the stubs only)."""
    import inspect

    bare = []
    for name in timef.__all__:
        obj = getattr(timef, name)
        if callable(obj) and not (obj.__doc__ or "").strip():
            bare.append(name)
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if not attr.startswith("_") and not (getattr(member, "__doc__", None) or "").strip():
                    bare.append(f"{name}.{attr}")
    assert bare == []
    assert "sampling_rate_hz` in Hz" in timef.TimeFDataset.add_series.__doc__
    assert timef.WriteProgressEvent.bytes.__doc__ == "`file_written`: its size in bytes."


def test_validation_errors_carry_their_fields(tmp_path: Path) -> None:
    with pytest.raises(timef.TimeFValidationError) as e:
        timef.TimeFDataset("bad/name", "v1")
    assert (e.value.id, e.value.field) == ("bad/name", "dataset_name")
    assert isinstance(e.value, ValueError)

    ds = timef.TimeFDataset("d", "v1")
    with pytest.raises(timef.TimeFValidationError) as e:
        ds.add_series(time_series_id="x", spec_type="ecg", channel="I", sampling_rate_hz=0.0, values=[1.0])
    assert (e.value.id, e.value.field) == ("x", "sampling_rate_hz")
    assert "must be finite and > 0" in e.value.reason

    ds.add_source(source_id="src", name="s")
    ds.add_series(time_series_id="nan", spec_type="ecg", channel="I", sampling_rate_hz=1.0,
                  values=np.array([1.0, np.nan], np.float32))
    ds.add_sample(sample_id="s1", source_id="src", series=["nan"])
    with pytest.raises(timef.TimeFValidationError) as e:
        with timef.TimeFWriter(tmp_path, ds) as w:
            w.write()
    assert (e.value.id, e.value.field) == ("nan", "values")
    assert listing(tmp_path) == []

    ds = timef.TimeFDataset("d", "v1")
    ds.add_source(source_id="src", name="s")
    ds.add_series(time_series_id="t", spec_type="ecg", channel="I", sampling_rate_hz=1.0, values=[1.0])
    ds.add_sample(sample_id="s1", source_id="nope", series=["t"])
    with pytest.raises(timef.TimeFValidationError) as e:
        with timef.TimeFWriter(tmp_path, ds) as w:
            w.write()
    assert (e.value.id, e.value.field) == ("s1", "source_id")

    for option, value in [("chunk_max_bytes", 3), ("compression_level", 0), ("compression", "snappy")]:
        with pytest.raises(timef.TimeFValidationError) as e:
            timef.TimeFWriter(tmp_path, timef.TimeFDataset("d", "v2"), **{option: value})
        assert (e.value.id, e.value.field) == (None, option)


def test_a_missing_input_file_is_file_not_found_and_a_directory_an_os_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.ts"
    for read in [lambda p: timef.read_ucr([p], dataset_name="d", dataset_version="v1"),
                 lambda p: timef.read_tsf(p, dataset_name="d", dataset_version="v1"),
                 lambda p: timef.read_arrow(str(p), dataset_name="d", dataset_version="v1")]:
        with pytest.raises(FileNotFoundError) as e:
            read(missing)
        assert (e.value.errno, e.value.filename) == (2, str(missing))
        assert str(e.value) == f"[Errno 2] not found: no such input file: '{missing}'"
        with pytest.raises(IsADirectoryError) as d:
            read(tmp_path)
        assert (d.value.errno, d.value.filename) == (21, str(tmp_path))
    assert listing(tmp_path) == []


def test_storage_options_need_an_object_store_url(tmp_path: Path) -> None:
    ds = timef.TimeFDataset("d", "v1")
    with pytest.raises(ValueError, match=r"storage_options\[\"region\"\]"):
        timef.TimeFWriter(tmp_path, ds, storage_options={"region": "eu-west-1"})
    with pytest.raises(ValueError, match="ftp://bucket/root"):
        timef.TimeFWriter("ftp://bucket/root", ds)
    assert timef.TimeFWriter(tmp_path, ds, storage_options={}).version_dir == str(tmp_path / "d" / "v1")


def test_progress_cb_sees_every_series(tmp_path: Path) -> None:
    ds, values = build()
    events: list[timef.WriteProgressEvent] = []
    write(tmp_path, ds, progress_cb=events.append, **SMALL)
    assert (events[0].kind, events[0].series, events[0].samples) == ("started", 4, 3)
    series = [e for e in events if e.kind == "series_written"]
    assert [(e.done, e.total) for e in series] == [(i, 4) for i in range(1, 5)]
    # writer order: (spec_type, channel, time_series_id)
    assert [e.values for e in series] == [300, 700, 1300, 700]
    files = [e.path for e in events if e.kind == "file_written"]
    assert {"samples.parquet", "annotations.parquet", "time_series_index.parquet"} <= set(files)
    assert all(e.bytes and e.bytes > 0 for e in events if e.kind == "file_written")


def test_a_dataset_is_written_once(tmp_path: Path) -> None:
    ds, _ = build()
    write(tmp_path, ds)
    with pytest.raises(ValueError) as e:
        ds.add_source(source_id="x", name="x")
    assert str(e.value) == (f"dataset {ds.dataset_name}/{ds.dataset_version} was already handed to TimeFWriter.write "
                            "(its loaders run once): build it again")


def test_default_ids_are_uuid7_and_stored_as_uuid16(tmp_path: Path) -> None:
    ds = timef.TimeFDataset("ids", "v1")
    src = ds.add_source(name="s")
    ts = ds.add_series(spec_type="ecg", channel="I", sampling_rate_hz=1.0, values=np.arange(4, dtype=np.float32))
    sample = ds.add_sample(source_id=src, series=[ts])
    assert sample[14] == "7" and len(sample) == 36
    v = timef.open(write(tmp_path, ds))
    assert v.manifest["id_encoding"]["sample_id"] == "uuid16"
    assert np.array_equal(v.read_series(ts), np.arange(4, dtype=np.float32))
    stored = pq.read_table(Path(v.dir) / "samples.parquet")
    stored_id = stored.column("sample_id").to_pylist()[0]  # 16 bytes (a uuid.UUID where pyarrow maps it)
    assert (stored_id if isinstance(stored_id, bytes) else stored_id.bytes) == uuid.UUID(sample).bytes
    assert v.verify()["findings"] == []


def test_object_store_roots_write_read_edit_and_refuse_an_existing_version(tmp_path: Path) -> None:
    endpoint = s3_endpoint()
    bucket = s3_bucket(endpoint)
    options = s3_options(endpoint)

    def dataset(root_kind: str) -> timef.TimeFDataset:
        ds = timef.TimeFDataset("d", "v1")
        ds.add_source(source_id="src", name="test")
        for i in range(3):
            ds.add_series(time_series_id=f"s{i}", spec_type="ecg", channel="I", sampling_rate_hz=250.0,
                          values=np.arange(1000, dtype=np.float32) * (i + 1))
            ds.add_sample(sample_id=f"x{i}", source_id="src", series=[f"s{i}"])
        return ds

    url = f"s3://{bucket}/data"
    with timef.TimeFWriter(url, dataset("s3"), storage_options=options) as w:
        w.write()
    assert w.version_dir == f"{url}/d/v1"
    with timef.TimeFWriter(tmp_path, dataset("local")) as local:
        local.write()
    v = timef.open(f"{url}/d/v1", storage_options=options)
    np.testing.assert_array_equal(v.read_series("s2"), np.arange(1000, dtype=np.float32) * 3)
    assert v.verify()["findings"] == []
    assert v.manifest["files"] == timef.open(tmp_path / "d" / "v1").manifest["files"], "same bytes as the local write"
    with pytest.raises(FileExistsError):
        with timef.TimeFWriter(url, dataset("s3"), storage_options=options) as again:
            again.write()
    new_dir = timef.edit_version(f"{url}/d/v1", url, dataset_version="v2", remove_sample_ids=["x1"],
                                 storage_options=options)
    assert new_dir == f"{url}/d/v2"
    assert [s.as_py() for s in timef.open(new_dir, storage_options=options).samples().column("sample_id")] == ["x0", "x2"]
    with pytest.raises(ValueError, match=r"storage_options\[\"aws_region\"\]"):
        timef.TimeFWriter(tmp_path, dataset("local"), storage_options={"aws_region": "us-east-1"})
