"""TimeF from Python: build, write, read and edit versions of time-series ML datasets.

A thin layer over the Rust core (the ``timef._timef`` extension): every format
rule, encoding and the atomic commit live there, so a version written from Python
is byte-identical to the one the ``timef`` command line writes.

Example::

    ds = timef.TimeFDataset("my-ecg", "v1")
    ds.add_source(source_id="ptb", name="PTB-XL")
    ds.add_series(time_series_id="rec-1/I", spec_type="ecg", channel="I",
                  sampling_rate_hz=500.0, values=np.zeros(5000, np.float32))
    ds.add_sample(sample_id="rec-1", source_id="ptb", series=["rec-1/I"])
    with timef.TimeFWriter("out", ds) as writer:
        writer.write()                               # committed at out/my-ecg/v1
    timef.open("out/my-ecg/v1").read_series("rec-1/I")   # float32 numpy array

Exceptions: ``FileExistsError`` (the version exists), ``FileNotFoundError``
(nothing at a path or URL: directory, bucket, container, prefix), ``TimeFValidationError``,
``TimeFEditError``, ``TimeFInputError``, ``NotAVersionError``,
``CorruptVersionError`` (all ``ValueError``), ``OSError`` with ``filename`` for
I/O (``errno`` the system's, else ``EIO`` for a store's or a codec's failure). An exception raised by a loader or ``progress_cb`` aborts the write (nothing
is left) and reaches the caller unchanged.

Distributed writes (Dask, Spark, a job queue; ``timef.ray.write`` for Ray) run
three steps: the coordinator plans (:func:`plan`: one pass over the rows, no
value kept; it claims the version), workers split rows by part
(:func:`split_parts`) and write parts (:func:`write_part`), the coordinator
commits (:func:`commit`). Tasks, routers and records pickle; the committed bytes
equal ``timef ingest arrow`` of the same rows on one machine.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Union

from ._timef import (
    DEFAULT_CHUNK_MAX_BYTES,
    DEFAULT_COMPRESSION,
    DEFAULT_COMPRESSION_LEVEL,
    DEFAULT_ROW_GROUP_TARGET_BYTES,
    DEFAULT_SAMPLING_RATE_HZ,
    DEFAULT_SHARD_TARGET_BYTES,
    DEFAULT_SHUFFLE_BUFFER_ROW_GROUPS,
    DEFAULT_SPEC_TYPE,
    FORMAT_VERSION,
    CorruptVersionError,
    DistributedWrite,
    NotAVersionError,
    PartRecord,
    PartRecordError,
    PartRouter,
    PartTask,
    TimeFDataset,
    TimeFEditError,
    TimeFInputError,
    TimeFValidationError,
    TimeFWriter,
    Version,
    WindowPlan,
    Windows,
    WriteProgressEvent,
    __version__,
    edit_version,
    new_id,
    open,
    plan,
    read_arrow,
    read_tsf,
    read_ucr,
    split_parts,
    verify,
    write_part,
)

__all__ = [
    "DEFAULT_CHUNK_MAX_BYTES",
    "DEFAULT_COMPRESSION",
    "DEFAULT_COMPRESSION_LEVEL",
    "DEFAULT_ROW_GROUP_TARGET_BYTES",
    "DEFAULT_SAMPLING_RATE_HZ",
    "DEFAULT_SHARD_TARGET_BYTES",
    "DEFAULT_SHUFFLE_BUFFER_ROW_GROUPS",
    "DEFAULT_SPEC_TYPE",
    "FORMAT_VERSION",
    "CorruptVersionError",
    "DistributedWrite",
    "NotAVersionError",
    "PartRecord",
    "PartRecordError",
    "PartRouter",
    "PartTask",
    "TimeFDataset",
    "TimeFEditError",
    "TimeFInputError",
    "TimeFValidationError",
    "TimeFWriter",
    "Version",
    "WindowPlan",
    "Windows",
    "WriteProgressEvent",
    "__version__",
    "commit",
    "edit_version",
    "ingest_arrow",
    "ingest_tsf",
    "ingest_ucr",
    "new_id",
    "open",
    "plan",
    "read_arrow",
    "read_tsf",
    "read_ucr",
    "split_parts",
    "verify",
    "write_part",
]

StrPath = Union[str, "os.PathLike[str]"]


def _write(
    dataset: TimeFDataset,
    root: StrPath,
    shard_target_bytes: int,
    row_group_target_bytes: int,
    chunk_max_bytes: int,
    compression: str,
    compression_level: int,
    progress_cb: Callable[[WriteProgressEvent], Any] | None,
    storage_options: Mapping[str, str] | None,
) -> str:
    with TimeFWriter(
        root,
        dataset,
        shard_target_bytes=shard_target_bytes,
        row_group_target_bytes=row_group_target_bytes,
        chunk_max_bytes=chunk_max_bytes,
        compression=compression,
        compression_level=compression_level,
        progress_cb=progress_cb,
        storage_options=dict(storage_options) if storage_options is not None else None,
    ) as writer:
        writer.write()
    return writer.version_dir


def ingest_ucr(
    paths: StrPath | Iterable[StrPath],
    root: StrPath,
    *,
    dataset_name: str,
    dataset_version: str,
    spec_type: str | None = None,
    sampling_rate_hz: float | None = None,
    ids: str = "string",
    on_missing: str = "error",
    encoding: str = "utf-8",
    shard_target_bytes: int = DEFAULT_SHARD_TARGET_BYTES,
    row_group_target_bytes: int = DEFAULT_ROW_GROUP_TARGET_BYTES,
    chunk_max_bytes: int = DEFAULT_CHUNK_MAX_BYTES,
    compression: str = DEFAULT_COMPRESSION,
    compression_level: int = DEFAULT_COMPRESSION_LEVEL,
    progress_cb: Callable[[WriteProgressEvent], Any] | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> str:
    """Writes UCR/UEA ``.ts`` files (e.g. ``X_TRAIN.ts``, ``X_TEST.ts``; one
    path, or a sequence of them) as the
    version ``<root>/<dataset_name>/<dataset_version>`` and returns its directory;
    the same bytes as ``timef ingest ucr``. ``ids`` is ``"string"`` or ``"uuid"``,
    ``on_missing`` ``"error"`` or ``"drop_case"`` (cases with missing values left
    out), ``encoding`` ``"utf-8"``, ``"latin-1"`` or ``"cp1252"``. ``root`` may be
    an object-store URL (``s3://bucket/prefix``...) configured from the
    environment and ``storage_options``.

    Raises ``TimeFInputError`` (file, line, case), ``FileExistsError``,
    ``TimeFValidationError``, ``OSError``."""
    ds = read_ucr(
        os.fspath(paths) if isinstance(paths, (str, os.PathLike)) else [os.fspath(p) for p in paths],
        dataset_name=dataset_name,
        dataset_version=dataset_version,
        spec_type=spec_type,
        sampling_rate_hz=sampling_rate_hz,
        ids=ids,
        on_missing=on_missing,
        encoding=encoding,
    )
    return _write(ds, root, shard_target_bytes, row_group_target_bytes, chunk_max_bytes, compression,
                  compression_level, progress_cb, storage_options)


def ingest_tsf(
    path: StrPath,
    root: StrPath,
    *,
    dataset_name: str,
    dataset_version: str,
    spec_type: str | None = None,
    ids: str = "string",
    on_missing: str = "error",
    encoding: str = "utf-8",
    shard_target_bytes: int = DEFAULT_SHARD_TARGET_BYTES,
    row_group_target_bytes: int = DEFAULT_ROW_GROUP_TARGET_BYTES,
    chunk_max_bytes: int = DEFAULT_CHUNK_MAX_BYTES,
    compression: str = DEFAULT_COMPRESSION,
    compression_level: int = DEFAULT_COMPRESSION_LEVEL,
    progress_cb: Callable[[WriteProgressEvent], Any] | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> str:
    """Writes a Monash forecasting ``.tsf`` file as a version (with its
    forecasting task when the file has a horizon) and returns its directory;
    the same bytes as ``timef ingest tsf``. Raises as :func:`ingest_ucr`."""
    ds = read_tsf(path, dataset_name=dataset_name, dataset_version=dataset_version, spec_type=spec_type, ids=ids,
                  on_missing=on_missing, encoding=encoding)
    return _write(ds, root, shard_target_bytes, row_group_target_bytes, chunk_max_bytes, compression,
                  compression_level, progress_cb, storage_options)


def ingest_arrow(
    source: Any,
    root: StrPath,
    *,
    dataset_name: str,
    dataset_version: str,
    spec_type: str | None = None,
    sampling_rate_hz: float | None = None,
    ids: str = "string",
    on_missing: str = "error",
    shard_target_bytes: int = DEFAULT_SHARD_TARGET_BYTES,
    row_group_target_bytes: int = DEFAULT_ROW_GROUP_TARGET_BYTES,
    chunk_max_bytes: int = DEFAULT_CHUNK_MAX_BYTES,
    compression: str = DEFAULT_COMPRESSION,
    compression_level: int = DEFAULT_COMPRESSION_LEVEL,
    progress_cb: Callable[[WriteProgressEvent], Any] | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> str:
    """Writes GluonTS-style data (columns ``item_id``, ``start``, ``target``:
    ``list<float32|float64>`` or a list of those per dimension) as a version and
    returns its directory. ``source`` is a path to an Arrow IPC or Parquet file,
    or any object exporting an Arrow stream (``__arrow_c_stream__``: a
    ``pyarrow.Table``, a ``polars.DataFrame``, ...). The same bytes as
    ``timef ingest arrow`` on that data. Raises as :func:`ingest_ucr`."""
    ds = read_arrow(source, dataset_name=dataset_name, dataset_version=dataset_version, spec_type=spec_type,
                    sampling_rate_hz=sampling_rate_hz, ids=ids, on_missing=on_missing)
    return _write(ds, root, shard_target_bytes, row_group_target_bytes, chunk_max_bytes, compression,
                  compression_level, progress_cb, storage_options)


def commit(write: DistributedWrite, records: Iterable[PartRecord]) -> str:
    """Commits a distributed write from its parts' records (any order) and
    returns the version's directory or URL: every planned shard must be in
    exactly one record with the staged file's sha256 and size, its index rows as
    planned. Raises ``PartRecordError`` (``problem`` says what), ``FileExistsError``
    when another writer committed the version first, ``OSError``; on any error
    the staging and every part are removed and no version is visible."""
    return write.commit(list(records))
