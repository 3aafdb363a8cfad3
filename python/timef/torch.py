"""Training windows of a TimeF version as a PyTorch ``IterableDataset``.

``WindowDataset`` yields the windows of :meth:`timef.Version.window_plan` (the
Rust core cuts, orders and reads them; ``docs/format.md`` §10): every window of
``context_length + prediction_length`` values, in an elastic deterministic
shuffle. The order of an epoch is a function of (version, selection, window
parameters, seed, epoch) only; rank ``r`` of ``W`` and DataLoader worker ``k``
of ``K`` take consumer ``r * K + k``'s contiguous share of it, so together they
take every window exactly once, whatever ``W`` and ``K``.

Resume: ``state_dict()`` / ``load_state_dict()`` continue an epoch exactly
after the last window handed out, in one process and through torchdata's
``StatefulDataLoader`` (each worker saves and restores its own share). When the
number of workers or ranks changes, pass the old states (a ``StatefulDataLoader``
state dict, or a list of every rank's) to ``load_state_dict`` of the dataset
before building the new loader: the windows already handed out are skipped and
the rest is split among the new consumers.

Errors: a DataLoader worker's ``CorruptVersionError``, ``NotAVersionError``
or other timef error, or Python's own ``OSError`` or one of its subclasses
(``FileNotFoundError`` ...), raised while it iterates or in ``state_dict`` /
``load_state_dict``, reaches the main process as a subclass of its class with
its attributes (``path``, ``reason``, ``errno``, ``filename`` ...), where torch
alone keeps only the class; its message is torch's ("Caught ... in
DataLoader worker process N" and the worker's traceback). Not so for an
error of a thread torch re-raises the same way that is no DataLoader worker
(torchdata.nodes' prefetching and mapping threads): it keeps only its class.

``import timef`` does not import torch; ``import timef.torch`` does.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import json
import numbers
import os
import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Callable, TypeVar, Union, cast

import numpy as np
import torch
import torch.distributed
import torch.utils.data

import timef
from timef._windows import check_int, invalid_option, window_plan_args

__all__ = ["STATE_KEY", "WindowDataset"]

STATE_KEY = "timef_window_state"
"""Key marking a ``WindowDataset`` state dict (its value is the format number, 1)."""

StrPath = Union[str, "os.PathLike[str]"]


_ATTRIBUTES_LINE = "[timef attributes] "
"""Start of the line a DataLoader worker's exception carries its attributes in (JSON)."""


class _Carrier(Exception):
    """Base of the exceptions a DataLoader worker raises in place of a timef
    error or an ``OSError``, each a subclass of the class it stands for (so
    ``except CorruptVersionError`` still catches it) whose attributes
    (``path``, ``reason``, ``errno``, ``filename`` ...) survive the worker.
    torch raises a worker's exception again in the main process as
    ``type(message)``, the message being the worker's formatted traceback
    (``torch.utils.data``'s ``ExceptionWrapper.reraise``), which keeps no
    attribute: the worker's ``str`` of it ends with them as one JSON line (a
    line of :data:`_ATTRIBUTES_LINE`), read back here from the traceback of
    the error raised last (:func:`_attributes_in`). Its ``str`` is its
    message (torch's, in the main process: "Caught ... in DataLoader worker
    process N", then the worker's traceback), followed by its attributes'
    line when the message holds none (one built in the worker by code that
    caught another: ``type(e)(errno, strerror, filename)``, which is built as
    the class it stands for, or ``type(e)(message)``)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        if len(args) == 1 and isinstance(args[0], str):
            for name, value in (_attributes_in(args[0]) or {}).items():
                setattr(self, name, value)

    def __str__(self) -> str:
        if len(self.args) == 1 and isinstance(self.args[0], str):
            if _attributes_in(self.args[0]) is not None:
                return self.args[0]
            return f"{self.args[0]}\n{_attributes_line(self)}"
        return f"{super().__str__()}\n{_attributes_line(self)}"


_TRACEBACK_HEADER = "Traceback (most recent call last):"
"""How Python's formatted traceback of each error of a chain starts."""


def _attributes_in(message: str) -> dict[str, Any] | None:
    """The attributes' line of the error ``message`` ends with, read back:
    the first line of :data:`_ATTRIBUTES_LINE` after the last line that is a
    traceback header (an error chained before it is not read; the error's own
    line comes before its notes, so a note quoting another error's line is
    passed over); None when there is none, or it is no JSON object. A note
    that holds a whole formatted traceback hides the line."""
    at = message.rfind("\n" + _TRACEBACK_HEADER)
    block = message[at + 1:] if at >= 0 else message
    line = next((x for x in block.splitlines() if x.startswith(_ATTRIBUTES_LINE)), None)
    if line is None:
        return None
    try:
        attributes = json.loads(line[len(_ATTRIBUTES_LINE):])
    except ValueError:  # a line not ours (a crafted message): nothing to restore
        return None
    return attributes if isinstance(attributes, dict) else None


# timef's exceptions and Python's OSError family, each with its carrier: a
# class of this module (torch pickles a worker's exception type by its name),
# `_InWorker.<name>`, named as the class it stands for
_CARRIED: tuple[type[BaseException], ...] = tuple(dict.fromkeys(
    [timef.TimeFValidationError, timef.TimeFEditError, timef.TimeFInputError, timef.NotAVersionError,
     timef.CorruptVersionError, timef.PartRecordError]
    + [c for c in vars(builtins).values() if isinstance(c, type) and issubclass(c, OSError)]))


class _InWorker:
    """The carriers of :data:`_CARRIED`, by their classes' names."""


for _base in _CARRIED:
    setattr(_InWorker, _base.__name__, type(_base.__name__, (_Carrier, _base), {
        "__module__": __name__, "__qualname__": f"_InWorker.{_base.__name__}", "__doc__": _Carrier.__doc__}))
del _base


def _carrier(e: BaseException) -> BaseException:
    """``e`` (of a class of :data:`_CARRIED`) as its carrier: its message,
    then its attributes' line."""
    return getattr(_InWorker, type(e).__name__)(f"{e}\n{_attributes_line(e)}")


def _attributes_line(e: BaseException) -> str:
    """The line of ``e``'s attributes that JSON holds as they are."""
    names = [n for n in vars(e) if not n.startswith("_")]
    if isinstance(e, OSError):
        names += ["errno", "strerror", "filename", "filename2"]
    attributes = {n: getattr(e, n) for n in names if _json_as_is(getattr(e, n))}
    return f"{_ATTRIBUTES_LINE}{json.dumps(attributes)}"


def _json_as_is(value: Any) -> bool:
    """Whether JSON gives ``value`` back as it is (no bytes, no tuple, no dict
    with keys other than str)."""
    try:
        return json.loads(json.dumps(value)) == value
    except (TypeError, ValueError):
        return False


@contextlib.contextmanager
def _worker_errors() -> Iterator[None]:
    """In a DataLoader worker, raises an error whose class is one of
    :data:`_CARRIED` (exactly: a subclass from elsewhere, ``ssl.SSLError``
    say, goes as torch sends it) as its carrier; elsewhere, as it is."""
    if torch.utils.data.get_worker_info() is None:
        yield
        return
    try:
        yield
    except Exception as e:
        # `_CARRIED` is None once the interpreter is shutting down
        if not _CARRIED or type(e) not in _CARRIED:
            raise
        raise _carrier(e) from e


_F = TypeVar("_F", bound=Callable[..., Any])


def _carried_from_workers(method: _F) -> _F:
    """``method`` run in :func:`_worker_errors`: a ``StatefulDataLoader``
    worker calls ``state_dict`` / ``load_state_dict`` before it iterates."""
    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with _worker_errors():
            return method(*args, **kwargs)
    return cast(_F, wrapper)


class WindowDataset(torch.utils.data.IterableDataset):
    """The windows of the version at ``version_dir`` (a path or an object-store
    URL with ``storage_options``), as dicts of ``time_series_id`` (str),
    ``sample_id`` (str: the first sample listing the series), ``start`` (int:
    index of the first value in the series), ``start_s`` (float: its time in
    seconds), ``past_values`` (float32 tensor ``[context_length]``) and
    ``future_values`` (float32 tensor ``[prediction_length]``), plus
    ``past_observed_mask`` / ``future_observed_mask`` (bool) with ``pad``.

    With ``batch_size`` set, each item is a batch of up to ``batch_size``
    windows: tensors with a leading window dimension, and the ids as numpy
    object arrays of str (a DataLoader passes them on as they are; it walks a
    list item by item, on every batch). Use it with
    ``DataLoader(batch_size=None)``; it avoids a collate per window.

    ``task``/``split``, ``samples`` and ``channels`` select series as
    ``Version.scan`` does; ``stride`` defaults to the window length (no
    overlap); ``pad`` gives a series shorter than one window one window padded
    at the front with zeros. ``stack_channels`` makes each item one window
    of a sample's selected series stacked (``past_values`` ``[channels,
    context_length]``, rows in the sample's series order, no
    ``time_series_id``; see :meth:`timef.Version.window_plan`). ``shuffle`` orders by ``seed`` and the epoch
    (:meth:`set_epoch`) in buffers of ``shuffle_buffer_row_groups`` blocks of
    row groups (memory: two buffers of decoded values); otherwise index order.
    ``drop_last`` leaves out the epoch order's last ``total_windows %
    world_size`` windows, so that every rank yields the same number of
    windows (and of batches, with the same workers): data-parallel training
    in lock step (``DistributedDataParallel``) needs it, as one rank with a
    step more waits for the others forever. Without it (the default) every
    window is taken once and ranks differ by at most one window. As with
    torch's ``DistributedSampler(drop_last=True)``, the windows left out
    change with the epoch's order. A resume counts the windows left out as
    handed out: the same ranks leave out no more, and another number of ranks
    leaves out the last ``n % world_size`` of the ``n`` windows still to come
    as well (at most ``world_size - 1`` more that epoch).
    ``rank`` and ``world_size`` (given together, or neither) default to
    ``torch.distributed``'s when it is initialized in the process that builds
    the dataset, pickles it for spawned DataLoader workers or calls
    ``set_epoch``, ``len``, ``state_dict`` or ``load_state_dict`` (a worker
    has no process group: it uses those), else to the environment's ``RANK`` and ``WORLD_SIZE`` (set by
    ``torchrun``), else 0 and 1. ``threads`` decode row groups in parallel per
    process (0: the cores divided among the DataLoader workers, at least one
    each; one per core without workers). ``worker_sharing_strategy`` is the
    ``torch.multiprocessing`` sharing strategy set in each DataLoader worker
    that iterates this dataset (that process only) before its first batch;
    ``None`` (default) leaves the worker's as torch set it (``"file_descriptor"``
    on Linux). ``"file_system"`` hands a batch's shared memory to the main
    process by name, where ``"file_descriptor"`` makes the main process fetch a
    descriptor from the worker on every batch, a round trip that waits for the
    worker's interpreter (1.2 against 1.9 ms of the main process a batch of
    256 windows). Its cost: the batches in flight when an iteration stops
    early (a ``break``, a step budget per epoch) stay in ``/dev/shm`` until
    the main process exits (about 1 MiB per early stop with two workers, where
    Docker gives ``/dev/shm`` 64 MiB). A strategy the worker cannot use
    (``file_system`` needs torch_shm_manager and a writable temporary
    directory) leaves the worker's as it is, with a ``RuntimeWarning``.

    Raises (when iterated, or at the first ``state_dict``/``len``) those of
    :func:`timef.open` and :meth:`timef.Version.window_plan`.
    """

    def __init__(
        self,
        version_dir: StrPath,
        context_length: int,
        prediction_length: int = 0,
        *,
        task: str | None = None,
        split: str | None = None,
        samples: Sequence[str] | None = None,
        channels: Sequence[str] | None = None,
        stride: int | None = None,
        pad: bool = False,
        stack_channels: bool = False,
        shuffle: bool = True,
        seed: int = 0,
        rank: int | None = None,
        world_size: int | None = None,
        drop_last: bool = False,
        batch_size: int | None = None,
        shuffle_buffer_row_groups: int = timef.DEFAULT_SHUFFLE_BUFFER_ROW_GROUPS,
        threads: int = 0,
        storage_options: Mapping[str, str] | None = None,
        worker_sharing_strategy: str | None = None,
    ) -> None:
        super().__init__()
        if (rank is None) != (world_size is None):
            raise invalid_option("world_size" if world_size is None else "rank",
                                 "rank and world_size are given together (or neither: torch.distributed's)")
        check_int("context_length", context_length, 1)
        world_size = check_int("world_size", world_size, 1, none=True)
        rank = check_int("rank", rank, 0, none=True)
        if rank is not None and rank >= world_size:
            # as Version.windows words it (review 148)
            raise invalid_option("rank", f"{rank} is not below world_size {world_size}")
        batch_size = check_int("batch_size", batch_size, 1, none=True)
        if not isinstance(drop_last, (bool, np.bool_)):
            raise invalid_option("drop_last", f"{drop_last!r} is not a bool")
        self.drop_last = bool(drop_last)
        if worker_sharing_strategy is not None and worker_sharing_strategy not in (
                torch.multiprocessing.get_all_sharing_strategies()):
            raise ValueError(f"worker_sharing_strategy {worker_sharing_strategy!r} is not one of "
                             f"{sorted(torch.multiprocessing.get_all_sharing_strategies())} or None")
        self.worker_sharing_strategy = worker_sharing_strategy
        self.plan_args: dict[str, Any] = window_plan_args(locals())
        self.version_dir = os.fspath(version_dir)
        if storage_options is not None and not (isinstance(storage_options, Mapping) and all(
                isinstance(k, str) and isinstance(v, str) for k, v in storage_options.items())):
            raise invalid_option("storage_options", "a mapping of str to str, or None")
        self.storage_options = dict(storage_options) if storage_options is not None else None
        self.rank = rank
        self.world_size = world_size
        self.batch_size = batch_size
        # the epoch in shared memory (one descriptor): a persistent DataLoader
        # worker (forked or spawned) reads what set_epoch gave after it started
        self._epoch = torch.zeros((), dtype=torch.int64).share_memory_()
        # torch.distributed's (rank, world size) as the last process that had it saw it
        self._distributed: tuple[int, int] | None = None
        self._pin_distributed()
        self._plan_of: tuple[int, Any] | None = None
        self._manifest_sha256: str | None = None
        # the resume the next iteration starts from (None: the epoch's start)
        self._resume: dict[str, Any] | None = None
        self._state: dict[str, Any] | None = None

    def __getstate__(self) -> dict[str, Any]:
        self._pin_distributed()  # the parent pickles the dataset for spawned workers
        state = self.__dict__.copy()
        state["_plan_of"] = None  # built again in each process (never shared across a fork)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        # a copy made by plain pickle or deepcopy (not a worker's): shared again,
        # so workers forked from it see its set_epoch
        if not self._epoch.is_shared():
            self._epoch.share_memory_()

    def _plan(self) -> Any:
        if self._plan_of is None or self._plan_of[0] != os.getpid():
            version = timef.open(self.version_dir, storage_options=self.storage_options)
            self._manifest_sha256 = version.manifest_sha256
            args = dict(self.plan_args)
            info = torch.utils.data.get_worker_info()
            if args["threads"] == 0 and info is not None:
                # the cores shared among the workers, not one thread per core in each
                args["threads"] = max(1, (os.cpu_count() or 1) // info.num_workers)
            self._plan_of = (os.getpid(), version.window_plan(**args))
        return self._plan_of[1]

    @property
    def epoch(self) -> int:
        """The epoch the next iteration reads (``set_epoch``)."""
        return int(self._epoch.item())

    @property
    def total_windows(self) -> int:
        """Windows per epoch, over every rank and worker."""
        return len(self._plan())

    def __len__(self) -> int:
        """Items this rank yields per epoch, as ``DataLoader`` counts them:
        the windows of its share (``total_windows`` split among the ranks;
        with ``drop_last``, ``total_windows // world_size``),
        or with ``batch_size`` its batches (exact without workers; ``K``
        workers each cut their own part into batches, up to ``K - 1`` more)."""
        self._pin_distributed()
        rank, world = self._rank_and_world()
        total = self.total_windows
        share = total // world if self.drop_last else total * (rank + 1) // world - total * rank // world
        return share if self.batch_size is None else -(-share // self.batch_size)

    def set_epoch(self, epoch: int) -> None:
        """The epoch the next iteration reads (its order with ``shuffle``),
        also in DataLoader workers started before (``persistent_workers``).
        A resume loaded for another epoch is dropped."""
        epoch = check_int("epoch", epoch, 0, 2**63 - 1)
        self._pin_distributed()
        if self._resume is not None and self._resume["epoch"] != epoch:
            self._resume = None
        self._epoch.fill_(epoch)

    def _pin_distributed(self) -> None:
        """Records torch.distributed's rank and world size when its process
        group is initialized in this process, for the DataLoader workers this
        process starts (they have none)."""
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            self._distributed = (torch.distributed.get_rank(), torch.distributed.get_world_size())

    def _rank_and_world(self) -> tuple[int, int]:
        """This process's rank and world size (see the class)."""
        if self.rank is not None and self.world_size is not None:
            return self.rank, self.world_size
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            return torch.distributed.get_rank(), torch.distributed.get_world_size()
        if self._distributed is not None:
            return self._distributed
        env = os.environ.get("RANK"), os.environ.get("WORLD_SIZE")
        if env[0] is not None and env[1] is not None:
            try:
                rank, world = int(env[0]), int(env[1])
            except ValueError:
                raise invalid_option("rank", f"RANK={env[0]!r} and WORLD_SIZE={env[1]!r} are not integers") from None
            if not 0 <= rank < world:
                raise invalid_option("rank", f"RANK={rank} is not a rank of WORLD_SIZE={world}")
            return rank, world
        return 0, 1

    def _consumer(self) -> tuple[int, int]:
        rank, world = self._rank_and_world()
        info = torch.utils.data.get_worker_info()
        worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
        return rank * workers + worker, world * workers

    def _start(self) -> dict[str, Any]:
        """The state of an iteration of this consumer starting now: from the
        loaded resume when it is of the current epoch (a persistent worker
        that loaded one keeps it while set_epoch moves on)."""
        consumer, consumers = self._consumer()
        consumed: list[list[int]] = []
        taken = 0
        resume = self._resume if self._resume is not None and self._resume["epoch"] == self.epoch else None
        if resume is not None:
            consumed = [list(r) for r in resume["consumed"]]
            if resume["consumers"] is not None:
                if resume["consumers"] == consumers:
                    # the same split: the state's consumer goes on after what it took,
                    # every other from the start of its span (a state not given took nothing)
                    taken = resume["taken"] if resume["consumer"] == consumer else 0
                else:
                    # another split: the one share's windows are skipped, the rest re-split
                    counts = [0] * resume["consumers"]
                    counts[resume["consumer"]] = resume["taken"]
                    merged = self._plan().merge_consumed([tuple(r) for r in consumed], counts)
                    consumed = [list(r) for r in merged]
        if self.drop_last:
            # what every rank leaves out, the same in each (none more for a
            # resume of the same ranks, whose consumed holds it)
            ranks = self._rank_and_world()[1]
            consumed = [list(r) for r in self._plan().drop_remainder([tuple(r) for r in consumed], ranks)]
        return self._describe(consumed, consumer, consumers, taken)

    def _describe(self, consumed: list[list[int]], consumer: int | None, consumers: int | None, taken: int) -> dict[str, Any]:
        plan = self._plan()
        return {
            STATE_KEY: 1,
            "manifest_sha256": self._manifest_sha256,
            "windows": len(plan),
            "seed": self.plan_args["seed"],
            "plan": _order_args(self.plan_args),
            "drop_last": self.drop_last,
            "epoch": self.epoch,
            "consumed": consumed,
            "consumer": consumer,
            "consumers": consumers,
            "taken": taken,
        }

    def __iter__(self) -> Iterator[dict[str, Any]]:
        with _worker_errors():
            state = self._start()
            self._state = state
            plan = self._plan()
            batches = plan.windows(
                epoch=self.epoch,
                consumer=state["consumer"],
                consumers=state["consumers"],
                consumed=[tuple(r) for r in state["consumed"]],
                taken=state["taken"],
                batch_size=self.batch_size or 256,
            )
            in_worker = torch.utils.data.get_worker_info() is not None
            if in_worker and self.worker_sharing_strategy is not None:
                _use_sharing_strategy(self.worker_sharing_strategy)
            # a worker hands a batch over in shared memory; windows one by one are
            # first collated by the DataLoader (into shared memory of its own)
            shared = in_worker and self.batch_size is not None
            for batch in batches:
                tensors = _one_storage(batch) if shared else _tensors(batch)
                n = len(batch["start"])
                if self.batch_size is not None:
                    state["taken"] += n  # counted before the yield: a snapshot taken after it includes it
                    yield tensors
                    continue
                for i in range(n):
                    state["taken"] += 1
                    # a number as a Python scalar, a row of values as a tensor, an id as its str
                    yield {k: (v[i].item() if isinstance(v, torch.Tensor) and v.dim() == 1 else v[i])
                           for k, v in tensors.items()}

    @_carried_from_workers
    def state_dict(self) -> dict[str, Any]:
        """Where the epoch stands: the windows handed out by this consumer
        (``consumer`` of ``consumers``) after those in ``consumed`` (global
        positions), with the version's ``manifest_sha256``, ``windows``,
        ``seed``, ``epoch`` and the arguments that fix the order (``plan``)
        it applies to. Before this process iterated (a DataLoader worker
        before its first batch), where its iteration will start: from the
        loaded resume, in the form this consumer's iteration gives it. So in
        the training process of a plain ``DataLoader`` with workers, which
        iterate copies of this dataset and report nothing back, it is the
        epoch's start: checkpoint a ``StatefulDataLoader``'s ``state_dict()``
        instead (each worker's position at the last batch handed out)."""
        self._pin_distributed()
        # the progress of an iteration of the current epoch (a persistent
        # worker's of an earlier epoch is not where it stands after set_epoch)
        if self._state is not None and self._state["epoch"] == self.epoch:
            return {**self._state, "consumed": [list(r) for r in self._state["consumed"]]}
        return self._start()

    @_carried_from_workers
    def load_state_dict(self, state: Any) -> None:
        """Resumes the next iteration from ``state``: one ``state_dict()`` (the
        same consumer continues exactly; another split skips what it took), a
        list of the states of every rank and worker, or a ``StatefulDataLoader``
        state dict (every worker's state in it). Several states are merged:
        the next iteration, with any number of ranks and workers, takes every
        window not handed out yet. A consumer whose state is not given counts
        as having taken nothing.

        A loaded state is where its epoch starts: each iteration of that
        epoch starts there (in this process, and in DataLoader workers, which
        start from a copy of this dataset each pass), until ``set_epoch``
        gives another epoch or another state is loaded. So a training loop
        that calls ``set_epoch`` every epoch resumes once; iterating the same
        epoch twice resumes twice, as its order is the same twice. A state
        that handed out every window of its epoch resumes it with nothing
        left; loaded after ``set_epoch`` gave a later epoch (a
        StatefulDataLoader loads its state when an iteration starts), it is
        over and changes nothing. In a DataLoader worker (StatefulDataLoader
        loads each worker's state there) the epoch stays the one
        ``set_epoch`` gave.
        Load it before building the loader (``persistent_workers`` keep what
        they had).

        Raises ``ValueError`` for a state of another version, seed, window
        count, epoch, order (``plan``: the selection, window and shuffle
        arguments) or ``drop_last``, or a state with none of a ``WindowDataset``."""
        self._pin_distributed()
        states = _find_states(state)
        if not states:
            raise ValueError("no WindowDataset state in the state given")
        for s in states:
            _check_state(s)
        # a state saved before drop_last was recorded had none (review 129:
        # taken into drop_last=True, its spans moved: windows twice, others never)
        states = [{"drop_last": False, **s} for s in states]
        current = self._describe([], None, None, 0)
        for s in states:
            for key in ("manifest_sha256", "windows", "seed", "epoch", "plan", "drop_last"):
                if key == "plan" and key not in s:
                    continue  # a state saved before the plan was recorded
                if s[key] != states[0].get(key):
                    raise ValueError(f"states of different {key}s: {states[0].get(key)!r} and {s[key]!r}")
                if key != "epoch" and s[key] != current[key]:
                    raise ValueError(f"state of another {key}: {s[key]!r}, this dataset has {current[key]!r}")
            if [list(r) for r in s["consumed"]] != [list(r) for r in states[0]["consumed"]]:
                raise ValueError("states of different resumes: their consumed positions differ")
        self._state = None
        epoch, before = states[0]["epoch"], self.epoch
        if len(states) == 1:
            resume = dict(states[0])
            over = _complete(resume)
        else:
            split = [s for s in states if s["consumers"] is not None]
            consumed = [list(r) for r in states[0]["consumed"]]
            if split:
                consumers = split[0]["consumers"]
                if any(s["consumers"] != consumers for s in split):
                    raise ValueError("states of different splits: their consumers differ")
                counts = [0] * consumers
                for s in split:
                    counts[s["consumer"]] = max(counts[s["consumer"]], s["taken"])
                consumed = [list(r) for r in self._plan().merge_consumed([tuple(r) for r in consumed], counts)]
            resume = {**current, "epoch": epoch, "consumed": consumed}
            over = sum(b - a for a, b in consumed) == current["windows"]
        if torch.utils.data.get_worker_info() is None:
            if over and epoch < before:
                # its epoch is over and set_epoch moved on (a StatefulDataLoader
                # loads a state saved at an epoch's end after the loop's set_epoch)
                self._resume = None
                return
            # the main process's epoch; a worker's (StatefulDataLoader loads
            # each worker's state in it) is the one set_epoch gave
            self._epoch.fill_(epoch)
        self._resume = resume


def _order_args(plan_args: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments of ``window_plan`` that fix an epoch's order (all but ``threads``)."""
    return {k: v for k, v in plan_args.items() if k != "threads"}


def _use_sharing_strategy(strategy: str) -> None:
    """Sets ``strategy`` in this DataLoader worker if shared memory can be
    made with it; otherwise keeps the worker's own, with a ``RuntimeWarning``
    (``file_system`` needs torch_shm_manager, which needs a writable temporary
    directory: not so under a read-only ``/tmp``)."""
    previous = torch.multiprocessing.get_sharing_strategy()
    if strategy == previous:
        return
    torch.multiprocessing.set_sharing_strategy(strategy)
    try:
        torch.UntypedStorage._new_shared(8)
    except RuntimeError as e:
        torch.multiprocessing.set_sharing_strategy(previous)
        reason = (str(e).splitlines() or [type(e).__name__])[0]  # torch's message goes on with a C++ backtrace
        warnings.warn(f"worker_sharing_strategy {strategy!r} is not usable in this DataLoader worker ({reason}); "
                      f"using {previous!r}", RuntimeWarning, stacklevel=3)


def _ids(ids: list[str]) -> np.ndarray:
    """A batch's ids as a numpy object array of str: DataLoader's
    ``default_convert`` (run on every batch, in the worker or the main process)
    passes it on as it is, where it walks a list of 256 ids item by item
    (about 1.5 ms a batch, a third of a worker's time)."""
    out = np.empty(len(ids), dtype=object)
    out[:] = ids
    return out


def _tensors(batch: Mapping[str, Any]) -> dict[str, Any]:
    """The batch's arrays as tensors sharing their memory; its id lists as
    ``_ids``."""
    return {k: (torch.from_numpy(v) if hasattr(v, "dtype") else _ids(v)) for k, v in batch.items()}


def _one_storage(batch: Mapping[str, Any]) -> dict[str, Any]:
    """``_tensors`` with every array copied into views of one storage: a
    DataLoader worker hands a batch to the main process through shared memory,
    one segment per storage (with the ``file_descriptor`` strategy, one round
    trip for its descriptor too), which costs more than the copy (a batch of
    256 windows of 576 values: 7.7 ms a batch through one worker with four
    storages, 6.0 ms with one). One storage per batch, not blocks of several:
    a block is reserved whole in /dev/shm (Docker's default is 64 MiB), a lost
    or kept batch pins all of it, and a main process that shares one batch on
    under another sharing strategy moves the block to a copy that the block's
    later batches would then be rebuilt on (review 7)."""
    arrays = {k: v for k, v in batch.items() if hasattr(v, "dtype")}
    # 8-byte aligned offsets: every dtype here (int64, float64, float32, bool) views them
    offsets, total = {}, 0
    for k, a in arrays.items():
        offsets[k] = total
        total += -(-a.nbytes // 8) * 8
    # made in shared memory here (as DataLoader's own default_collate does in a
    # worker): handed over, it is not copied there again; `share_memory_()` on
    # a fresh tensor would copy it once more
    storage = torch.empty(0, dtype=torch.uint8).set_(torch.UntypedStorage._new_shared(total))
    out = {}
    for k, v in batch.items():
        if k not in arrays:
            out[k] = _ids(v)
            continue
        t = torch.from_numpy(arrays[k])
        view = storage[offsets[k] : offsets[k] + t.nbytes].view(t.dtype).view(t.shape)
        view.copy_(t)
        out[k] = view
    return out


def _complete(s: Mapping[str, Any]) -> bool:
    """A state of one consumer of all, that took every window not consumed before it."""
    return s["consumers"] == 1 and s["taken"] == s["windows"] - sum(b - a for a, b in s["consumed"])


def _check_state(s: Mapping[str, Any]) -> None:
    """Refuses (``ValueError``) a state whose fields are missing or out of range."""
    def integer(value: Any, lo: int, hi: int = 2**63 - 1) -> bool:
        return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)) and lo <= value <= hi

    missing = [k for k in ("manifest_sha256", "windows", "seed", "epoch", "consumed", "consumer", "consumers", "taken")
               if k not in s]
    if missing:
        raise ValueError(f"a WindowDataset state without {', '.join(missing)}")
    if not integer(s["windows"], 0) or not integer(s["epoch"], 0) or not integer(s["taken"], 0, s["windows"]):
        raise ValueError(f"a WindowDataset state with epoch {s['epoch']!r}, taken {s['taken']!r}, windows "
                         f"{s['windows']!r} (integers from 0, epoch below 2^63)")
    if (s["consumer"] is None) != (s["consumers"] is None) or (
            s["consumers"] is not None and not (integer(s["consumers"], 1) and integer(s["consumer"], 0, s["consumers"] - 1))):
        raise ValueError(f"a WindowDataset state of consumer {s['consumer']!r} of {s['consumers']!r}")
    if s["consumers"] is None and s["taken"] != 0:
        raise ValueError(f"a WindowDataset state that took {s['taken']!r} windows without a consumer")
    pairs = s["consumed"] if isinstance(s["consumed"], (list, tuple)) else None
    if pairs is None or not all(isinstance(p, (list, tuple)) and len(p) == 2 and all(integer(v, 0) for v in p)
                                for p in pairs):
        raise ValueError(f"a WindowDataset state with consumed {s['consumed']!r} (pairs of integers)")
    end = 0
    for a, b in pairs:
        if not end <= a < b <= s["windows"]:
            raise ValueError(f"a WindowDataset state with consumed {s['consumed']!r} "
                             "(sorted, disjoint ranges within its windows)")
        end = b


def _find_states(obj: Any) -> list[dict[str, Any]]:
    """Every ``WindowDataset`` state inside ``obj`` (dicts, lists, tuples), in order."""
    if isinstance(obj, Mapping):
        if STATE_KEY in obj:
            return [dict(obj)]
        return [s for v in obj.values() for s in _find_states(v)]
    if isinstance(obj, (list, tuple)):
        return [s for v in obj for s in _find_states(v)]
    return []
