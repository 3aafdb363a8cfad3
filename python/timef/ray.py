"""Writing one TimeF version from a Ray Dataset, on every worker of a Ray cluster.

``write(ds, root, name, version)`` runs the core's three steps (``docs/format.md``,
"One write pipeline: plan, parts, commit") over the blocks of ``ds``:

1. plan, on the driver: one pass over the blocks, fetched one at a time from
   the object store, checks every row as ``timef ingest arrow`` does and counts
   the values (none is kept); then the sorted series and the full layout, split
   into parts of whole shards; the staging is created and owned by the driver;
2. parts: each block is split by part (:func:`timef.split_parts`, one Ray task per
   block) and one Ray task per part encodes its shards from the rows it is given
   (:func:`timef.write_part`), returning a small :class:`timef.PartRecord`;
3. commit, on the driver: every planned shard checked against its record, the
   tables and manifest written, the version published atomically.

The layout is a function of the sorted series and their sizes only, so the
committed bytes equal ``timef ingest arrow`` of the same rows on one machine,
whatever the number of workers, the blocks of ``ds`` or the order parts finish.
A part task whose worker process dies is rerun by Ray (``max_retries``): writing
a part again gives the same bytes. Any other failure cancels the part tasks still
running, removes every part, and raises the original exception (never a
``RayTaskError`` wrapper), so no version is visible.

Only Arrow tables move between Ray tasks; the values are read, checked and
encoded by the Rust core with the GIL released.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, Union

import numpy as np
import pyarrow as pa
import ray

import timef
from timef._windows import window_plan_args

__all__ = ["DEFAULT_MAX_RETRIES", "read", "write"]

DEFAULT_MAX_RETRIES = 3
"""Times Ray reruns a split or part task whose worker process died (a
count of reruns, not seconds). Exceptions raised by the core are never retried:
bad input stays bad."""

StrPath = Union[str, "os.PathLike[str]"]


@ray.remote
def _split_block(block: pa.Table, router: timef.PartRouter, parts: Sequence[int]) -> Any:
    by_part = timef.split_parts(block, router)
    empty = block.schema.empty_table()
    out = tuple(by_part.get(p, empty) for p in parts)
    # a Ray task with num_returns=1 returns its value, not a 1-tuple
    return out if len(out) > 1 else out[0]


@ray.remote
def _write_part(task: timef.PartTask, storage_options: Mapping[str, str] | None, *tables: pa.Table) -> timef.PartRecord:
    return timef.write_part(task, [t for t in tables if t.num_rows], storage_options=storage_options)


def _gather(refs: Sequence[ray.ObjectRef]) -> list[Any]:
    """The results of `refs`; on any failure every task still running is
    cancelled and waited for (so none writes after the abort that follows), and
    the task's own exception is raised."""
    try:
        pending = list(refs)
        while pending:  # fail fast: the first failure, whichever task it is
            done, pending = ray.wait(pending, num_returns=1)
            ray.get(done)
        return ray.get(list(refs))
    except BaseException as e:
        for r in refs:
            ray.cancel(r, force=True)
        for r in refs:
            try:
                ray.get(r)
            except BaseException:  # cancelled, crashed or failed: the first failure is reported
                pass
        if isinstance(e, ray.exceptions.RayTaskError) and isinstance(e.cause, Exception):
            raise e.cause from None
        raise


def write(
    ds: ray.data.Dataset,
    root: StrPath,
    name: str,
    version: str,
    *,
    parts: int | None = None,
    max_retries: int = DEFAULT_MAX_RETRIES,
    spec_type: str | None = None,
    sampling_rate_hz: float | None = None,
    ids: str = "string",
    on_missing: str = "error",
    shard_target_bytes: int = timef.DEFAULT_SHARD_TARGET_BYTES,
    row_group_target_bytes: int = timef.DEFAULT_ROW_GROUP_TARGET_BYTES,
    chunk_max_bytes: int = timef.DEFAULT_CHUNK_MAX_BYTES,
    compression: str = timef.DEFAULT_COMPRESSION,
    compression_level: int = timef.DEFAULT_COMPRESSION_LEVEL,
    storage_options: Mapping[str, str] | None = None,
) -> str:
    """Writes the GluonTS-style rows of ``ds`` (columns ``item_id``, ``start``,
    ``target``, optional ``freq``, typed as :func:`timef.ingest_arrow` accepts
    them; ``item_id`` is required here) as the version
    ``<root>/<name>/<version>`` and returns its directory or URL.

    ``root`` is a directory every worker sees (a shared file system) or an
    object-store URL (``s3://bucket/prefix``...), configured on every worker
    from its environment and ``storage_options``. ``parts`` is the number of
    part tasks (default: the cluster's CPUs; at most one per shard is used);
    it changes which task writes which shard, never the bytes. The connector
    options (``spec_type``, ``sampling_rate_hz``, ``ids``, ``on_missing``) and
    the writer options are those of :func:`timef.ingest_arrow`.

    ``ds`` is executed once (its blocks are held in the Ray object store while
    the write runs).

    Raises ``FileExistsError`` (the version exists, or another writer committed
    it first), ``TimeFInputError`` (file label ``<ray dataset>``, the row counted
    over the blocks in dataset order, the item), ``TimeFValidationError``, ``PartRecordError``, ``OSError``;
    after any of them no version is visible and every part is removed."""
    if parts is None:
        parts = max(1, int(ray.cluster_resources().get("CPU", 1)))
    blocks = ds.to_arrow_refs()
    retry = dict(max_retries=max_retries, retry_exceptions=False)
    with timef.plan(
        root,
        (ray.get(b) for b in blocks),
        label="<ray dataset>",
        dataset_name=name,
        dataset_version=version,
        parts=parts,
        ids=ids,
        shard_target_bytes=shard_target_bytes,
        row_group_target_bytes=row_group_target_bytes,
        chunk_max_bytes=chunk_max_bytes,
        compression=compression,
        compression_level=compression_level,
        storage_options=storage_options,
        spec_type=spec_type,
        sampling_rate_hz=sampling_rate_hz,
        on_missing=on_missing,
    ) as plan:
        tasks = plan.tasks()
        numbers = [t.part for t in tasks]
        router = ray.put(plan.router)
        splits = [
            _split_block.options(num_returns=len(tasks), **retry).remote(b, router, numbers) for b in blocks
        ]
        if len(tasks) == 1:
            splits = [[s] for s in splits]
        options = dict(storage_options) if storage_options is not None else None
        records = _gather(
            [
                _write_part.options(**retry).remote(task, options, *(s[i] for s in splits))
                for i, task in enumerate(tasks)
            ]
        )
        return plan.commit(records)


_READ_WHAT = ("chunks", "series", "windows")


def read(
    version_dir: StrPath,
    *,
    what: str = "series",
    context_length: int | None = None,
    prediction_length: int = 0,
    task: str | None = None,
    split: str | None = None,
    samples: Sequence[str] | None = None,
    channels: Sequence[str] | None = None,
    stride: int | None = None,
    pad: bool = False,
    stack_channels: bool = False,
    threads: int = 1,
    storage_options: Mapping[str, str] | None = None,
) -> ray.data.Dataset:
    """The selected series of the version at ``version_dir`` as a Ray Dataset,
    read in parallel by row group (one read task per unit, on any worker that
    sees ``version_dir`` or the object store):

    - ``what="chunks"``: one row per chunk (the columns of ``Version.scan``),
      one task per row group;
    - ``what="series"`` (default): one row per whole series (time_series_id,
      sample_id, t_start_s, sampling_rate_hz, values), one task per block (the
      series starting in one row group, read with the row groups they span);
    - ``what="windows"``: one row per window of ``context_length +
      prediction_length`` values at ``stride`` (the fields of
      ``Version.windows``: past_values and future_values as fixed-shape
      tensors), one task per block, each block's windows in index order;
      with ``stack_channels`` one row per sample's stacked window
      (``[channels, length]`` tensors, see ``Version.window_plan``).

    ``task``/``split``, ``samples`` and ``channels`` select as ``Version.scan``
    does; ``threads`` decode row groups in parallel within a task. Rows come in
    index order when the dataset preserves order.

    Raises ``ValueError`` for an unknown ``what`` or ``what="windows"`` without
    ``context_length``; those of :func:`timef.open` and
    :meth:`timef.Version.window_plan` on the driver."""
    if what not in _READ_WHAT:
        raise ValueError(f"what={what!r} is not one of {', '.join(_READ_WHAT)}")
    if what == "windows" and context_length is None:
        raise ValueError("what='windows' needs context_length")
    plan_args = {**window_plan_args(locals()), "shuffle": False}
    if what != "windows":
        # chunks and series do not cut windows: any window length plans their units, one series each
        plan_args.update(context_length=1, prediction_length=0, stack_channels=False)
    options = dict(storage_options) if storage_options is not None else None
    source = os.fspath(version_dir)
    plan = timef.open(source, storage_options=options).window_plan(**plan_args)
    units = plan.row_groups if what == "chunks" else plan.blocks
    if units == 0:
        return ray.data.from_items([])

    def read_units(batch: dict[str, np.ndarray]) -> Any:
        p = _plan_in_worker(source, options, plan_args)
        out = []
        for unit in batch["unit"]:
            if what == "chunks":
                out.append(p.read_row_group(int(unit)))
            elif what == "series":
                out.append(p.read_block(int(unit)))
            else:
                out.append(_window_table(p.block_windows(int(unit))))
        return pa.concat_tables(out)

    ds = ray.data.range(units, override_num_blocks=units).rename_columns({"id": "unit"})
    return ds.map_batches(read_units, batch_size=1, batch_format="numpy")


_PLANS: dict[tuple[Any, ...], Any] = {}


def _plan_in_worker(source: str, options: Mapping[str, str] | None, plan_args: Mapping[str, Any]) -> Any:
    """The window plan of a read task, built once per worker process."""
    key = (os.getpid(), source, repr(sorted((options or {}).items())), repr(sorted(plan_args.items())))
    if key not in _PLANS:
        _PLANS[key] = timef.open(source, storage_options=options).window_plan(**plan_args)
    return _PLANS[key]


def _window_table(batch: Mapping[str, Any]) -> pa.Table:
    """A ``Version.windows`` batch as a table, arrays of 2 or 3 dimensions as fixed-shape tensors."""
    columns = {}
    for key, value in batch.items():
        if isinstance(value, np.ndarray) and value.ndim >= 2:
            columns[key] = pa.FixedShapeTensorArray.from_numpy_ndarray(np.ascontiguousarray(value))
        else:
            columns[key] = pa.array(value)
    return pa.table(columns)
