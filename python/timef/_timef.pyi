"""Type stubs of the native module ``timef._timef`` (the Rust core's bindings)."""

import os
from collections.abc import Callable, Iterable, Sequence
from types import TracebackType
from typing import Any, Literal, Union

import numpy as np
import numpy.typing as npt
import pyarrow as pa

StrPath = Union[str, os.PathLike[str]]
SeriesValues = Any  # 1-D numbers numpy.require(x, float32, "CA") converts
"""Values of one series: a 1-D numpy array (float32 is viewed without a copy,
other dtypes are converted), a sequence of numbers, or a pyarrow/polars array.
Integers, floats and booleans are taken, and object arrays of real numbers
(``Decimal`` too; ``None`` is missing). Complex and ``datetime64``/``timedelta64``
values, text (``str``/``bytes`` dtypes) and objects that are not real numbers (the
``str`` of pandas and pyarrow strings, complex, dates, arrays) are refused: numpy would
convert them, losing the imaginary part or the unit, or parsing the text. The
values are those the Arrow connector takes: floats are rounded to the nearest
float32, a finite value beyond its range is refused, integers must be exact in
float32 (int64 above 2**24 often is not), and a ``numpy.ma`` masked array's
masked value and a null of a pyarrow array, a polars series or a pandas nullable
array or series (``Int64``, ``Float64``, ``boolean``, ``int64[pyarrow]``, ...) are
missing (refused; numpy would make a null NaN, or an object it cannot take)."""

__version__: str
FORMAT_VERSION: int
DEFAULT_SHARD_TARGET_BYTES: int
"""A shard closes after the row group that takes its uncompressed float32 value bytes past this (128 MiB)."""
DEFAULT_ROW_GROUP_TARGET_BYTES: int
"""Row-group target in uncompressed float32 value bytes (4 MiB)."""
DEFAULT_CHUNK_MAX_BYTES: int
"""Largest chunk of a series in float32 value bytes (1 MiB = 262144 values)."""
DEFAULT_COMPRESSION: str
"""The Parquet codec, always ``"zstd"``."""
DEFAULT_COMPRESSION_LEVEL: int
"""The pinned zstd level (3)."""
DEFAULT_SPEC_TYPE: str
"""Connectors' spec type when none is given (``"unknown"``)."""
DEFAULT_SAMPLING_RATE_HZ: float
"""Connectors' sampling rate in Hz when none is given or derivable (1.0)."""
DEFAULT_SHUFFLE_BUFFER_ROW_GROUPS: int
"""Blocks of row groups the window loader shuffles together (8)."""

class TimeFValidationError(ValueError):
    """A dataset entity or option breaks a rule of the format."""

    id: str | None
    """The entity (sample, series, annotation, task, source id or a path component); None for an option."""
    field: str
    """The offending field, or the option's name."""
    reason: str
    """The rule it breaks."""

class TimeFEditError(ValueError):
    """A copy-on-write edit was refused before any I/O.

    ``str(e)`` shows the first 10 blockers and counts the rest; ``blockers`` holds every one."""

    id: str
    """The first blocker's entity (sample, series, annotation, task or source id, or a channel)."""
    field: str
    """The first blocker's field: the argument naming an unknown id (``"remove_sample_ids"``, ...), or
    the entity's field at fault (``"target_sample_id"``, ``"series"``, ``"values"``, ``"sample_id"``, ...);
    an added id that exists with other content is on its id field, its reason naming the fields that differ."""
    reason: str
    """Every blocker, joined with ``"; "``."""
    blockers: list[str]
    """Every blocker's reason, one per blocker (ids in it as given)."""
    ids: list[str]
    """Each blocker's entity, in the order of ``blockers``."""
    fields: list[str]
    """Each blocker's field, in the order of ``blockers``."""

class TimeFInputError(ValueError):
    """A connector's input file is malformed."""

    path: str
    line: int | None
    """1-based line, for line-oriented formats."""
    reason: str

class NotAVersionError(ValueError):
    """The directory is not a committed TimeF version (no or foreign ``manifest.json``)."""

    path: str
    reason: str

class CorruptVersionError(ValueError):
    """Stored bytes do not match what the manifest or the format promises."""

    path: str
    reason: str

class PartRecordError(ValueError):
    """A distributed write's part, part record or task was refused by ``commit``
    or ``write_part``; nothing was published (after ``commit``, every part was removed)."""

    write_id: str
    part: int | None
    """The part, when known."""
    shard: int | None
    """The shard number, when known."""
    problem: Literal[
        "missing_shard", "duplicate_shard", "unknown_shard", "hash_mismatch", "size_mismatch", "index_mismatch",
        "unplanned_series", "missing_series", "wrong_write", "plan_mismatch", "stray_file", "wrong_staging",
        "statistics_mismatch", "other",
    ]
    reason: str
    """What is wrong, in words (expected and actual sha256 or size, the series, ...)."""

class TimeFDataset:
    """A dataset version before it is written.

    ``dataset_name`` and ``dataset_version`` are path components: 1-128 characters
    of ``[A-Za-z0-9._-]``, not starting with ``.``. Every ``add_*`` validates the
    entity (``TimeFValidationError`` naming id and field), refuses a second entity
    with the same id and different content, and returns the id (a new UUIDv7 when
    none is given). Cross-references are checked when the dataset is written. A
    dataset is written once: a writer takes it (its loaders run once).
    """

    def __init__(
        self,
        dataset_name: str,
        dataset_version: str,
        *,
        description: str | None = None,
        license: str | None = None,
        citation: str | None = None,
    ) -> None: ...
    @property
    def dataset_name(self) -> str: ...
    @property
    def dataset_version(self) -> str: ...
    @property
    def subjects(self) -> list[str]:
        """Subject ids of the samples, sorted, each once."""
    @property
    def sample_ids(self) -> list[str]: ...
    @property
    def time_series_ids(self) -> list[str]: ...
    @property
    def source_ids(self) -> list[str]: ...
    def add_source(
        self,
        *,
        source_id: str | None = None,
        name: str = "",
        url: str | None = None,
        license: str | None = None,
        citation: str | None = None,
    ) -> str:
        """Adds where samples come from; returns its id."""
    def add_series(
        self,
        *,
        time_series_id: str | None = None,
        spec_type: str,
        channel: str,
        sampling_rate_hz: float,
        values: SeriesValues | None = None,
        loader: Callable[[], SeriesValues] | None = None,
        units: str | None = None,
        t_start_s: float = 0.0,
        t_end_s: float | None = None,
    ) -> str:
        """Adds one time series: exactly one of ``values`` (viewed without a copy
        when float32 and contiguous: do not change it until the write ends) or
        ``loader`` (called once, lazily, while writing, with the GIL held, in the
        writer's ``(spec_type, channel, time_series_id)`` order). ``sampling_rate_hz``
        is finite and > 0; ``t_start_s``/``t_end_s`` in seconds; with ``t_end_s``,
        ``len(values) == round((t_end_s - t_start_s) * sampling_rate_hz)``. The same
        id with equal metadata is kept once (first values/loader win). Values must be
        one-dimensional numbers (``SeriesValues``; else ``TimeFValidationError`` with ``id`` the series
        and ``field`` ``"values"``, raised here for ``values``, by the write for what
        ``loader`` returns), non-empty and finite (checked while writing)."""
    def add_sample(
        self,
        *,
        sample_id: str | None = None,
        source_id: str,
        series: Iterable[str | tuple[str, str]],
        subject_id: str | None = None,
        t_start_s: float | None = None,
        t_end_s: float | None = None,
        metadata: dict[str, str] | None = None,
    ) -> str:
        """Adds a sample over one or more series: ids (view ``"main"``) or
        ``(time_series_id, view)`` pairs; window bounds in seconds on the series' axis."""
    def add_annotation(
        self,
        *,
        annotation_id: str | None = None,
        sample_ids: Sequence[str],
        annotation_type: str,
        key: str,
        value_str: str | None = None,
        value_num: float | None = None,
        t_start_s: float | None = None,
        t_end_s: float | None = None,
        channel: str | None = None,
    ) -> str:
        """Attaches an annotation to samples; the same id again attaches it to
        more samples (its fields must then be equal)."""
    def add_task(
        self,
        task_name: str,
        *,
        task_id: str | None = None,
        task_type: str,
        sample_ids: Sequence[str],
        split: str | None = None,
        target: str | None = None,
        target_sample_id: str | None = None,
        context_sample_ids: Sequence[str] | None = None,
        from_task: str | None = None,
        horizon: int | None = None,
        prompt: str | None = None,
        answer: str | None = None,
    ) -> str:
        """Adds a task under ``task_name`` (a path component). ``task_type``:
        ``classification``, ``regression``, ``forecasting`` (needs
        ``target_sample_id`` and ``context_sample_ids``), ``qa`` or any other name."""

class WriteProgressEvent:
    """One progress report of a write."""

    kind: Literal["started", "series_written", "file_written", "other"]
    series: int | None
    """``started``: unique series to write."""
    samples: int | None
    """``started``: samples."""
    done: int | None
    """``series_written``: series done so far."""
    total: int | None
    """``series_written``: series in all."""
    values: int | None
    """``series_written``: values of this series."""
    path: str | None
    """``file_written``: the file, relative to the version directory."""
    bytes: int | None
    """``file_written``: its size in bytes."""

class TimeFWriter:
    """Writes ``dataset`` as ``<root>/<dataset_name>/<dataset_version>/``.

    A context manager: ``write()`` inside the block stages the whole version; a
    clean exit commits it atomically, an exception aborts it (nothing is left).
    Entering raises ``FileExistsError`` when the version exists. Sizes are
    uncompressed float32 value bytes. ``progress_cb`` gets each
    :class:`WriteProgressEvent`; an exception it raises (or Ctrl-C, checked after
    every series) aborts the write and reaches the caller unchanged.
    ``root`` is a local path or an object-store URL (``s3://bucket/prefix``,
    ``gs://``, ``az://``, ``file://``, ``memory://``); credentials and endpoint
    come from the environment (``AWS_*``, ``GOOGLE_*``, ``AZURE_*``), overridden
    by ``storage_options`` (``object_store`` keys such as ``aws_region``); on a
    store the commit is a claim plus a conditional create of ``manifest.json``
    (``docs/format.md``). ``storage_options`` on a local path, ``file://`` or ``memory://``
    (which have no settings) raises ``ValueError``.
    """

    def __init__(
        self,
        root: StrPath,
        dataset: TimeFDataset,
        *,
        shard_target_bytes: int = 134217728,
        row_group_target_bytes: int = 4194304,
        chunk_max_bytes: int = 1048576,
        compression: str = "zstd",
        compression_level: int = 3,
        progress_cb: Callable[[WriteProgressEvent], Any] | None = None,
        storage_options: dict[str, str] | None = None,
    ) -> None: ...
    @property
    def version_dir(self) -> str:
        """Where the version is (or will be) committed."""
    @property
    def manifest(self) -> dict[str, Any] | None:
        """The manifest ``write()`` staged, as a dict."""
    @property
    def copied(self) -> dict[str, int] | None:
        """What ``write()`` took from the version the dataset was read from
        (``Version.to_dataset``): ``pages_copied`` (``values`` pages stored as
        its bytes), ``pages_encoded``, ``pages_decoded`` (its pages
        decompressed), ``shards_copied`` (its shard files copied whole), ``bytes_read``. None before ``write()``."""
    @property
    def committed(self) -> bool: ...
    def __enter__(self) -> "TimeFWriter": ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool: ...
    def write(self) -> None:
        """Validates (before any I/O), runs each loader once and writes every file
        into a staging directory. Raises ``TimeFValidationError``,
        ``FileExistsError``, ``OSError``, or a loader's / ``progress_cb``'s own exception."""
    def commit(self) -> str:
        """Publishes the staged version atomically; returns its directory."""
    def abort(self) -> None:
        """Removes the staged, uncommitted version."""

class Version:
    """A committed version opened for reading (:func:`open`). Tables are the
    stored Parquet tables unchanged: ids in their stored encoding (``binary(16)``
    where the manifest's ``id_encoding`` says ``uuid16``), categoricals as
    dictionaries."""

    @property
    def dir(self) -> str: ...
    @property
    def manifest(self) -> dict[str, Any]:
        """``manifest.json`` as a dict."""
    @property
    def manifest_sha256(self) -> str: ...
    def samples(self) -> pa.Table: ...
    def annotations(self) -> pa.Table:
        """One row per (sample, annotation)."""
    def index(self) -> pa.Table:
        """``time_series_index.parquet``: one row per chunk."""
    def task_names(self) -> list[str]: ...
    def task(self, task_name: str) -> pa.Table:
        """Raises ``TimeFValidationError`` for an unknown task name."""
    def read_series(self, time_series_id: str) -> npt.NDArray[np.float32]:
        """The series' values (reads only the rows it needs; no copy after decoding).
        Raises ``TimeFValidationError`` for an unknown id, ``CorruptVersionError``."""
    def read_sample(self, sample_id: str) -> dict[str, npt.NDArray[np.float32]]:
        """The sample's series cut to its window, by time_series_id, in the sample's order."""
    def scan(
        self,
        *,
        samples: list[str] | None = None,
        channels: list[str] | None = None,
        task: str | None = None,
        split: str | None = None,
        threads: int = 0,
    ) -> pa.RecordBatchReader:
        """Streams the selected series' chunks in index order (docs/format.md §9):
        one row per chunk, columns ``time_series_id`` (string), ``chunk_idx``
        (int32), ``value_offset`` (int64, the chunk's first value within its
        series) and ``values`` (list<float32>). Filters intersect; ``None``
        selects every series, an empty list none. ``task`` selects the samples its tasks reference (of
        ``split`` only, when given). Row groups are decoded on ``threads``
        threads (0: one per core), a bounded number ahead of the reader.
        Raises ``TimeFValidationError`` for an unknown sample, channel, task or
        split, or ``split`` without ``task`` (``field`` names it); a corrupt
        shard met while reading raises from the reader's ``read_next_batch`` /
        ``read_all`` (pyarrow's exception, carrying timef's message)."""
    def window_plan(
        self,
        context_length: int,
        prediction_length: int = 0,
        *,
        task: str | None = None,
        split: str | None = None,
        samples: list[str] | None = None,
        channels: list[str] | None = None,
        stride: int | None = None,
        pad: bool = False,
        stack_channels: bool = False,
        shuffle: bool = True,
        seed: int = 0,
        shuffle_buffer_row_groups: int = 8,
        threads: int = 0,
    ) -> WindowPlan:
        """The windows of ``context_length + prediction_length`` values at
        ``stride`` (default: the window length, no overlap) over the series
        ``scan`` would select (docs/format.md §10). ``pad``: a series shorter
        than a window gives one, zeros first (masked); without it, a plan of
        no window over series that hold values warns (``UserWarning``, the
        longest series' length). ``stack_channels``: each
        window stacks the selected series of one sample as ``[channels,
        length]`` rows, in the sample's series order (``channels`` selects,
        it does not reorder); every such sample must have the first one's
        channels in the same order, and its series one length, sampling rate
        and start, else ``TimeFValidationError`` (``id`` the sample,
        ``field`` ``stack_channels``). ``shuffle``: the epoch's
        order is a function of ``seed`` and the epoch only, with locality
        (blocks of row groups permuted, windows permuted within buffers of
        ``shuffle_buffer_row_groups`` blocks; memory about two buffers of
        decoded values); otherwise index order. Raises ``TimeFValidationError``
        (a ``ValueError``; ``field`` names the option) for a negative number,
        ``context_length`` 0, ``stride`` 0, ``shuffle_buffer_row_groups`` 0,
        and as ``scan``."""
    def windows(
        self,
        context_length: int,
        prediction_length: int = 0,
        *,
        epoch: int = 0,
        rank: int = 0,
        world_size: int = 1,
        batch_size: int = 256,
        **options: Any,
    ) -> Windows:
        """Rank ``rank`` of ``world_size``'s windows of
        ``window_plan(context_length, prediction_length, **options)`` (any
        keyword argument of :meth:`window_plan`) in ``epoch`` (a contiguous
        share of the epoch's one order), as dict batches of up to
        ``batch_size`` windows (see :class:`Windows`). Raises
        ``TimeFValidationError`` (``field`` the option) for a negative number, ``world_size`` 0,
        ``rank`` not below ``world_size``, ``batch_size`` 0, and as
        :meth:`window_plan`."""
    def verify(self) -> dict[str, Any]:
        """End-to-end check; ``findings`` (list of dicts with file, location, check,
        message) is empty for a conforming version."""
    def to_dataset(self, dataset_version: str) -> TimeFDataset:
        """This version as a :class:`TimeFDataset` named ``dataset_version`` (the
        dataset name unchanged) whose series load lazily from this version's
        shards: add samples to it and write it with :class:`TimeFWriter` to derive
        a new version (the bytes of a fresh write of the same content)."""

class WindowPlan:
    """The windows of a selection (:meth:`Version.window_plan`); ``len()`` is
    the windows per epoch. Not picklable: build one per process."""

    def __len__(self) -> int: ...
    @property
    def channels(self) -> list[str]:
        """The channels each window stacks, in row order (``stack_channels``); else empty."""
    @property
    def blocks(self) -> int:
        """Blocks: the series starting in one row group (``read_block``, ``block_windows``)."""
    @property
    def row_groups(self) -> int:
        """Row groups of the selection (``read_row_group``)."""
    def windows(
        self,
        *,
        epoch: int = 0,
        consumer: int = 0,
        consumers: int = 1,
        consumed: Sequence[tuple[int, int]] = (),
        taken: int = 0,
        batch_size: int = 256,
    ) -> Windows:
        """Consumer ``consumer`` of ``consumers``'s contiguous span of the
        epoch's windows not in ``consumed`` (global positions, half-open
        ranges), less its first ``taken``, as dict batches of up to
        ``batch_size`` windows. Raises ``TimeFValidationError`` (a
        ``ValueError``; ``field`` the option) for a negative number, a
        consumer outside ``consumers`` and for ``batch_size`` 0."""
    def order(
        self,
        *,
        epoch: int = 0,
        consumer: int = 0,
        consumers: int = 1,
        consumed: Sequence[tuple[int, int]] = (),
        taken: int = 0,
    ) -> list[tuple[str, int]]:
        """``(id, start)`` of the same windows, from the index alone: the
        ``time_series_id``, or the ``sample_id`` with ``stack_channels``."""
    def merge_consumed(self, consumed: list[tuple[int, int]], taken: list[int]) -> list[tuple[int, int]]:
        """The positions handed out once consumer ``c`` of ``len(taken)`` took
        ``taken[c]`` windows of its span: the ``consumed`` of any later split."""
    def drop_remainder(self, consumed: list[tuple[int, int]], ranks: int) -> list[tuple[int, int]]:
        """``consumed`` and the last ``n % ranks`` of the ``n`` windows not in
        it (the epoch order's last): with it, every rank of a split, of any
        number of consumers each, takes ``n // ranks`` windows (a loader's
        ``drop_last``). Raises ``TimeFValidationError`` (``field`` ``ranks``)
        for ``ranks`` below 1, or a ``consumed`` that is not sorted, disjoint
        ranges within the epoch."""
    def read_stats(self) -> dict[str, int] | None:
        """Requests and bytes of the reads through the opened version's store
        handle so far (every reader of that ``timef.open``): ``requests``,
        ``bytes``, ``read_ahead_requests``, ``read_ahead_bytes``,
        ``read_ahead_hits``; ``None`` for a local version."""
    def block_windows(self, block: int) -> dict[str, Any]:
        """Every window of one block in index order, as one batch."""
    def read_block(self, block: int) -> pa.Table:
        """The whole series of one block: time_series_id, sample_id, t_start_s,
        sampling_rate_hz, values (list<float32>)."""
    def read_row_group(self, i: int) -> pa.Table:
        """Row group ``i`` of the selection as chunk rows (``scan``'s columns)."""

class Windows:
    """An iterator of dict batches: ``time_series_id``, ``sample_id`` (lists of
    str), ``start`` (int64 ``[n]``, index of the first value; negative when
    padded), ``start_s`` (float64 ``[n]``, its time in seconds),
    ``past_values`` (float32 ``[n, context_length]``), ``future_values``
    (float32 ``[n, prediction_length]``), and with ``pad``
    ``past_observed_mask``/``future_observed_mask`` (bool). With
    ``stack_channels`` no ``time_series_id`` (``sample_id`` names the
    window) and the values and masks are ``[n, channels, length]``
    (:attr:`WindowPlan.channels`). Reads one buffer
    ahead on a thread of its own; a read error raises from ``next``, and so
    does ``MemoryError`` when a batch's values or masks cannot be allocated
    (a padded window is as long as the options say, whatever its series)."""

    def __iter__(self) -> Windows: ...
    def __next__(self) -> dict[str, Any]: ...

def new_id() -> str:
    """A new UUIDv7 (canonical lowercase hyphenated string), time ordered."""

def open(version_dir: StrPath, *, storage_options: dict[str, str] | None = None) -> Version:
    """Opens a committed version (a local directory or an object-store URL, as
    :class:`TimeFWriter`'s ``root``). Raises ``FileNotFoundError`` when nothing is
    there (no directory, bucket, container, or no object under the prefix),
    ``NotAVersionError`` for a place without ``manifest.json`` (or with another
    format's), ``CorruptVersionError`` for a TimeF ``manifest.json`` that does
    not parse, ``TimeFValidationError`` for an unknown storage option, ``OSError``.
    Safe in ``fork``- and ``spawn``-started children (each process uses its own
    object-store runtime and connections)."""

def verify(version_dir: StrPath, *, storage_options: dict[str, str] | None = None) -> dict[str, Any]:
    """End-to-end check of a version (see :meth:`Version.verify`)."""

def edit_version(
    base_dir: StrPath,
    out_root: StrPath,
    *,
    dataset_version: str,
    remove_sample_ids: Sequence[str] = (),
    remove_series_ids: Sequence[str] = (),
    remove_channels: Sequence[str] = (),
    remove_annotation_ids: Sequence[str] = (),
    remove_task_ids: Sequence[str] = (),
    add: Sequence[TimeFDataset] = (),
    set_annotations: Sequence[dict[str, Any]] = (),
    set_tasks: Sequence[dict[str, Any]] = (),
    set_sources: Sequence[dict[str, Any]] = (),
    description: str | None = None,
    license: str | None = None,
    citation: str | None = None,
    cascade: bool = False,
    dry_run: bool = False,
    storage_options: dict[str, str] | None = None,
) -> str | dict[str, Any]:
    """Writes ``<out_root>/<base name>/<dataset_version>``: the base with the
    edit applied (docs/format.md section 7), committed atomically with a
    ``derived_from`` lineage block; the base is untouched. The bytes are those
    of a fresh write of the resulting dataset.

    Removes samples, series, channels (every series of that channel name),
    annotations and tasks by id; adds the content of each ``add`` dataset (an
    id the base holds must come with identical content; the dataset is taken
    by the call once the other arguments are read and the edit names an
    operation, as by ``TimeFWriter.write``, and from there spent whatever the
    outcome, a dry run and a refused edit included:
    an added series the base holds has its values loaded to compare them, and
    loaders run once; a retry builds it again); sets
    annotations (dicts of one annotation row per sample: ``annotation_id``,
    ``sample_id``, ``annotation_type``, ``key``, optional ``value_str``,
    ``value_num``, ``t_start_s``, ``t_end_s``, ``channel``), tasks (``task_name``,
    ``task_id``, ``task_type``, ``sample_ids``, optional ``split``, ``target``,
    ``target_sample_id``, ``context_sample_ids``, ``from_task``, ``horizon``,
    ``prompt``, ``answer``) and sources (``source_id``, ``name``, optional
    ``url``, ``license``, ``citation``), each replacing the entity of its id or
    added; ``description``, ``license`` and ``citation`` replace the dataset's
    (None: unchanged). Refused before any write with ``TimeFEditError`` (every
    blocker listed, ``id`` and ``field`` of the first) for an unknown id, an
    added id with other content, or a sample left without series or a task
    losing a required reference unless ``cascade=True`` removes those,
    transitively, or a new source that is another spelled as its UUID or the
    reverse (read additions with the base's ``ids=``);
    ``TimeFInputError`` for a malformed row, ``TimeFValidationError``
    for an entity breaking a rule; ``ValueError`` for an edit that names no
    operation (as the CLI). Returns the new version's directory.

    ``dry_run=True`` makes every check (the target's absence included) and
    writes nothing, as ``timef edit --dry-run``: it returns what the edit
    would do, a dict of sorted lists: ``remove_samples``, ``remove_tasks`` and
    ``strip_samples_from_tasks`` (``[task_name, task_id]`` pairs),
    ``remove_annotations``, ``remove_series``, ``add_samples``, ``add_series``,
    ``add_annotations``, ``add_tasks``, ``add_sources``, and ``set`` (a dict of
    the ``set_annotations``, ``set_tasks`` and ``set_sources`` ids as given, and
    ``set_dataset``: the fields among ``description``, ``license`` and
    ``citation`` given)."""

def read_ucr(
    paths: StrPath | Sequence[StrPath],
    *,
    dataset_name: str,
    dataset_version: str,
    spec_type: str | None = None,
    sampling_rate_hz: float | None = None,
    ids: Literal["string", "uuid"] = "string",
    on_missing: Literal["error", "drop_case"] = "error",
    encoding: Literal["utf-8", "latin-1", "cp1252"] = "utf-8",
) -> TimeFDataset:
    """UCR/UEA ``.ts`` files (one path, or a sequence of them) as a dataset
    whose loaders read lazily. ``on_missing``
    ``"drop_case"`` leaves out cases with missing values; ``encoding`` is the
    files' text encoding.
    Raises ``FileNotFoundError`` for a file that does not exist, ``OSError`` for
    one that cannot be read, ``TimeFInputError`` (``path``, ``line``) for a
    malformed one."""

def read_tsf(
    path: StrPath,
    *,
    dataset_name: str,
    dataset_version: str,
    spec_type: str | None = None,
    ids: Literal["string", "uuid"] = "string",
    on_missing: Literal["error", "drop_case"] = "error",
    encoding: Literal["utf-8", "latin-1", "cp1252"] = "utf-8",
) -> TimeFDataset:
    """A Monash ``.tsf`` file as a dataset (with a forecasting task when the file
    has a horizon). ``on_missing`` ``"drop_case"`` leaves out series with missing
    values (``?``, ``NaN``).
    Raises ``FileNotFoundError`` for a file that does not exist, ``OSError`` for
    one that cannot be read, ``TimeFInputError`` (``path``, ``line``) for a
    malformed one."""

def read_arrow(
    source: Any,
    *,
    dataset_name: str,
    dataset_version: str,
    spec_type: str | None = None,
    sampling_rate_hz: float | None = None,
    ids: Literal["string", "uuid"] = "string",
    on_missing: Literal["error", "drop_case"] = "error",
) -> TimeFDataset:
    """GluonTS-style data (path, or an object with ``__arrow_c_stream__``) as a
    dataset. Every common typing of ``item_id``, ``start``, ``target`` and ``freq``
    is accepted (``docs/format.md``, "Connector inputs"); ``on_missing``
    ``"drop_case"`` leaves out rows whose target holds NaN or null.
    Raises ``FileNotFoundError`` for a file that does not exist, ``OSError`` for
    one that cannot be read, ``TimeFInputError`` (``path``; the row and item in
    its message) for a malformed one."""

class PartTask:
    """One part of a distributed write as a worker needs it: its whole shards,
    the series they hold, where to write, the byte-shaping and connector options.
    Picklable (as ``json``); ``PartTask(json)`` rebuilds it."""

    def __init__(self, json: str) -> None:
        """Raises ``ValueError`` for text that is not a task's ``json``."""
    @property
    def json(self) -> str: ...
    @property
    def part(self) -> int:
        """The part number (0-based)."""
    @property
    def write_id(self) -> str: ...
    @property
    def shards(self) -> list[int]:
        """The shard numbers it writes (consecutive)."""
    @property
    def time_series_ids(self) -> list[str]:
        """The series its shards hold, in write order."""

class PartRouter:
    """Which parts need each series of a write: what ``split_parts`` splits rows
    by. Picklable (as ``json``, one entry per series)."""

    def __init__(self, json: str) -> None: ...
    @property
    def json(self) -> str: ...

class PartRecord:
    """What a worker reports of a written part: its shard files and index rows
    with partial statistics (a few hundred bytes per shard, ~200 bytes per
    chunk). Picklable (as ``json``)."""

    def __init__(self, json: str) -> None:
        """Raises ``TimeFInputError`` for text that is not a record's ``json``."""
    @property
    def json(self) -> str: ...
    @property
    def part(self) -> int: ...
    @property
    def write_id(self) -> str: ...
    @property
    def files(self) -> list[dict[str, Any]]:
        """The shard files, in shard order: ``path``, ``bytes``, ``rows``, ``sha256``."""

class DistributedWrite:
    """A distributed write on its coordinator, from ``plan`` to ``commit``: owns
    the version's staging (local lock or object-store claim). ``abort()``,
    leaving its ``with`` block uncommitted, or dropping it removes the staging and
    every part. Not picklable (``TypeError``): ship ``tasks()`` and ``router``."""

    @property
    def write_id(self) -> str: ...
    @property
    def version_dir(self) -> str:
        """Where the version is committed (path or URL)."""
    @property
    def router(self) -> PartRouter: ...
    def tasks(self) -> list[PartTask]:
        """One task per part holding shards, in part order."""
    def commit(self, records: Sequence[PartRecord]) -> str:
        """Checks every planned shard against ``records`` (present once, sha256
        and size of the staged file, index rows), merges the partial statistics,
        writes the tables and manifest, publishes, returns the version's path or
        URL. Raises ``PartRecordError``, ``FileExistsError`` (committed first by
        another writer), ``OSError``; on any error the staging is removed."""
    def abort(self) -> None: ...
    def __enter__(self) -> DistributedWrite: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool: ...

def plan(
    root: StrPath,
    tables: Iterable[Any],
    *,
    label: str | None = None,
    dataset_name: str,
    dataset_version: str,
    parts: int,
    spec_type: str | None = None,
    sampling_rate_hz: float | None = None,
    ids: Literal["string", "uuid"] = "string",
    on_missing: Literal["error", "drop_case"] = "error",
    shard_target_bytes: int = 134217728,
    row_group_target_bytes: int = 4194304,
    chunk_max_bytes: int = 1048576,
    compression: str = "zstd",
    compression_level: int = 3,
    storage_options: dict[str, str] | None = None,
) -> DistributedWrite:
    """Plans the write of the GluonTS-style rows of ``tables`` (Arrow tables,
    any order and blocking, read one at a time: every value checked as ``timef
    ingest arrow`` checks it, none kept) in at most ``parts`` parts of whole
    shards, and claims the version. Errors name ``label`` (default
    ``"<tables>"``) and the row counted across all tables: ``TimeFInputError``
    (a bad value, a duplicate item), ``FileExistsError``, ``TimeFValidationError``
    (also ``shard_target_bytes`` over 4 GiB of values on an object store, whose
    commit copies each shard in one request of at most 5 GiB), ``OSError``."""

def split_parts(source: Any, router: PartRouter) -> dict[int, pa.Table]:
    """The rows of ``source`` by the parts that need them (a row whose series span
    two parts goes to both). Rows need ``item_id`` (``TimeFInputError`` otherwise)."""

def write_part(
    task: PartTask, sources: Iterable[Any], *, storage_options: dict[str, str] | None = None
) -> PartRecord:
    """Encodes the shards of ``task`` from the rows in ``sources`` (Arrow tables
    from ``split_parts``) into the write's staging,
    ``<dataset>/.tmp-<version>-<write_id>`` (on an object store a prefix beside
    the version; the commit copies the shards into it); returns the record for
    ``commit``. The same task written again gives the same bytes. Raises
    ``PartRecordError`` (a series missing or not in the part; problem
    ``wrong_staging`` for a task whose staging is not its write's),
    ``FileNotFoundError`` (the write is over: committed, aborted, its
    coordinator dead; checked before each shard on an object store),
    ``TimeFInputError``, ``TimeFValidationError``, ``OSError``; ``ValueError``
    for ``storage_options`` when the staging is local, ``file://`` or
    ``memory://`` (they configure cloud object stores only), before anything
    is written."""
