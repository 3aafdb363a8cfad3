"""Training windows from Python: `Version.windows` (numpy batches) and
`timef.torch.WindowDataset` (DataLoader workers and ranks, resume through
torchdata's StatefulDataLoader, fork and spawn on local and S3 versions), on a
version of 60 GluonTS-style series of 40 to 2400 values in 1 KiB chunks and
4 KiB row groups (series span row groups)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import timef
from conftest import REPO, _skip_or_fail, gluonts_rows, s3_bucket, s3_endpoint, s3_options

try:
    import torch
    from torch.utils.data import DataLoader
    from torchdata.stateful_dataloader import StatefulDataLoader

    import timef.torch
except ImportError as e:  # visible skip on a dev machine; under CI a failure (see `needs_torch`)
    torch = None
    TORCH_MISSING = str(e)

SMALL = dict(chunk_max_bytes=1024, row_group_target_bytes=4096, shard_target_bytes=16384)
CONTEXT, HORIZON = 48, 16
CHILD_TIMEOUT_S = 120


@pytest.fixture(scope="module")
def needs_torch() -> None:
    if torch is None:
        _skip_or_fail(f"torch/torchdata are not installed ({TORCH_MISSING}); .ci/run installs them")


@pytest.fixture(scope="module")
def vdir(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("win")
    return timef.ingest_arrow(gluonts_rows(60, seed=5), root, dataset_name="w", dataset_version="v1", **SMALL)


def expected(vdir: str, length: int, stride: int) -> list[tuple[str, int]]:
    """Every window (id, start) in index order, from the series lengths alone."""
    v = timef.open(vdir)
    out = []
    for sid in dict.fromkeys(v.index().column("time_series_id").to_pylist()):
        n = len(v.read_series(sid))
        out.extend((sid, s) for s in range(0, n - length + 1, stride))
    return out


def keys(batch: dict[str, Any]) -> list[tuple[str, int]]:
    return list(zip(batch["time_series_id"], (int(s) for s in batch["start"])))


def test_windows_equal_read_series_slices_and_are_exactly_the_expected_set(vdir: str) -> None:
    v = timef.open(vdir)
    want = expected(vdir, CONTEXT + HORIZON, CONTEXT + HORIZON)
    assert len(want) == 390
    series = {sid: v.read_series(sid) for sid, _ in want}
    got: list[tuple[str, int]] = []
    for batch in v.windows(CONTEXT, HORIZON, shuffle=False, batch_size=100):
        assert batch["past_values"].shape == (len(batch["start"]), CONTEXT)
        assert batch["past_values"].dtype == np.float32 and batch["future_values"].shape[1] == HORIZON
        for i, (sid, s) in enumerate(keys(batch)):
            np.testing.assert_array_equal(batch["past_values"][i], series[sid][s : s + CONTEXT])
            np.testing.assert_array_equal(batch["future_values"][i], series[sid][s + CONTEXT : s + CONTEXT + HORIZON])
            assert batch["start_s"][i] == 1_600_000_000 + 3600 * int(sid.split("-")[-1]) + s * 1.0
        got.extend(keys(batch))
    assert got == want
    shuffled = [k for b in v.windows(CONTEXT, HORIZON, seed=3) for k in keys(b)]
    assert shuffled != want and sorted(shuffled) == sorted(want)
    assert [k for b in v.windows(CONTEXT, HORIZON, seed=3) for k in keys(b)] == shuffled
    assert [k for b in v.windows(CONTEXT, HORIZON, seed=4) for k in keys(b)] != shuffled
    assert [k for b in v.windows(CONTEXT, HORIZON, seed=3, epoch=1) for k in keys(b)] != shuffled
    # rank shares are contiguous spans of the one order
    ranks = [[k for b in v.windows(CONTEXT, HORIZON, seed=3, rank=r, world_size=3) for k in keys(b)] for r in range(3)]
    assert ranks[0] + ranks[1] + ranks[2] == shuffled
    with pytest.raises(ValueError, match="invalid option stride: must be at least 1"):
        v.windows(CONTEXT, stride=0)
    # the share and batch options are refused naming the option as given
    refused = [
        (dict(rank=2, world_size=2), "rank", "2 is not below world_size 2"),
        (dict(world_size=0), "world_size", "must be at least 1"),
        (dict(batch_size=0), "batch_size", "must be at least 1"),
    ]
    for kwargs, field, reason in refused:
        with pytest.raises(timef.TimeFValidationError) as e:
            v.windows(CONTEXT, **kwargs)
        assert (str(e.value), e.value.field, e.value.id) == (f"invalid option {field}: {reason}", field, None)
    with pytest.raises(timef.TimeFValidationError) as e:
        v.window_plan(CONTEXT).windows(batch_size=0)
    assert (str(e.value), e.value.field) == ("invalid option batch_size: must be at least 1", "batch_size")
    # a negative number is refused naming its option (it raised a bare
    # OverflowError, "can't convert negative int to unsigned")
    negative = [
        (lambda **k: v.window_plan(CONTEXT, **k), ["prediction_length", "stride", "seed",
                                                  "shuffle_buffer_row_groups", "threads"]),
        (lambda **k: v.windows(CONTEXT, **k), ["epoch", "rank", "world_size", "batch_size"]),
        (lambda **k: v.window_plan(CONTEXT).windows(**k), ["epoch", "consumer", "consumers", "taken", "batch_size"]),
        (lambda **k: v.window_plan(CONTEXT).order(**k), ["epoch", "consumer", "consumers", "taken"]),
    ]
    for call, fields in negative:
        for field in fields:
            with pytest.raises(timef.TimeFValidationError) as e:
                call(**{field: -1})
            assert (str(e.value), e.value.field) == (f"invalid option {field}: -1 is negative", field)
    with pytest.raises(timef.TimeFValidationError) as e:
        v.window_plan(-CONTEXT)
    assert (str(e.value), e.value.field) == (f"invalid option context_length: -{CONTEXT} is negative",
                                             "context_length")
    with pytest.raises(timef.TimeFValidationError) as e:
        v.window_plan(0)
    assert (str(e.value), e.value.field) == ("invalid option context_length: must be at least 1", "context_length")
    with pytest.raises(timef.TimeFValidationError) as e:
        v.window_plan(CONTEXT, seed=2**64)
    assert (str(e.value), e.value.field) == (f"invalid option seed: {2**64} is too large", "seed")
    # past i128, a negative thread count, no consumer at all, drop_remainder's world size: each named (review 148)
    for call, field, why in [(lambda: v.window_plan(CONTEXT, seed=2**200), "seed", "the value is too large"),
                             (lambda: v.window_plan(CONTEXT, seed=-2**200), "seed", "the value is negative"),
                             (lambda: v.scan(threads=-1), "threads", "-1 is negative"),
                             (lambda: v.window_plan(CONTEXT).windows(consumers=0), "consumers", "must be at least 1"),
                             (lambda: v.window_plan(CONTEXT).drop_remainder([], 0), "ranks", "must be at least 1"),
                             (lambda: v.window_plan(2**127 - 1), "context_length", f"{2**127 - 1} is too large")]:
        with pytest.raises(timef.TimeFValidationError) as e:
            call()
        assert (str(e.value), e.value.field) == (f"invalid option {field}: {why}", field)
    assert len(v.window_plan(CONTEXT, seed=2**64 - 1)) == len(v.window_plan(CONTEXT))
    with pytest.raises(TypeError, match="'float' object cannot be interpreted as an integer"):
        v.window_plan(CONTEXT, stride=2.5)


def test_padding_masks_short_series(vdir: str) -> None:
    v = timef.open(vdir)
    # without pad, no window at all: said (review 146: a len 0 without a word)
    with pytest.warns(UserWarning) as caught:
        assert len(v.window_plan(3000, shuffle=False)) == 0
    assert [str(w.message) for w in caught] == [
        "no series of the selection holds one window of 3000 values (the longest holds 2400); pad=True gives each "
        "shorter one a window, padded"]
    plan = v.window_plan(1000, 500, pad=True, shuffle=False)
    (batch,) = list(plan.windows(batch_size=len(plan)))
    padded = [i for i, s in enumerate(batch["start"]) if s < 0]
    assert len(padded) == 56 and len(plan) == 56 + 4  # the 4 series of 2400 values give one window each
    for i in padded:
        sid, start = keys(batch)[i]
        n = len(v.read_series(sid))
        assert start == n - 1500
        past, future = batch["past_observed_mask"][i], batch["future_observed_mask"][i]
        assert past.sum() + future.sum() == n and not past[0] and future[-1] and past[1500 - n:].all()
        window = np.concatenate([batch["past_values"][i], batch["future_values"][i]])
        np.testing.assert_array_equal(window[1500 - n:], v.read_series(sid))
        assert not window[: 1500 - n].any()


def test_a_window_the_allocator_refuses_is_a_memory_error_not_an_abort(vdir: str) -> None:
    """Review 100: `windows(10**9, pad=True)` (below the 2^31 limit) asked
    for a 4 GB padded window; under an address-space limit the allocation
    failed and aborted Python (SIGABRT). It is now a MemoryError naming the
    window, for the values and for the observed masks alike, and the
    process goes on. A child process with a limit set 600 MiB above its own
    size once its threads run: the values of a window of 2^27 fit there,
    their mask does not; a window of 10^9 does not fit at all."""
    script = textwrap.dedent(f"""
        import resource, timef
        v = timef.open({vdir!r})
        next(iter(v.windows(8, pad=True, shuffle=False)))  # its threads and buffers, before the limit
        size = int(next(l for l in open("/proc/self/status") if l.startswith("VmSize:")).split()[1]) * 1024
        resource.setrlimit(resource.RLIMIT_AS, (size + (600 << 20), resource.RLIM_INFINITY))
        for context in (10**9, 2**27):
            try:
                next(iter(v.windows(context, pad=True, shuffle=False, batch_size=1)))
                print("no error")
            except MemoryError as e:
                print(type(e).__name__, e)
        print(sum(len(b["start"]) for b in v.windows(64, shuffle=False)))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=CHILD_TIMEOUT_S,
                         env={**os.environ, "MALLOC_ARENA_MAX": "1"})
    assert out.returncode == 0, out.stderr
    windows = len(expected(vdir, 64, 64))
    assert out.stdout.splitlines() == [
        "MemoryError cannot allocate 4000000000 bytes for a window of 1 x 1000000000 values "
        "(context_length 1000000000, prediction_length 0)",
        "MemoryError cannot allocate 134217728 bytes for the observed mask of 1 windows of 1 x 134217728 values",
        str(windows),
    ]


def test_a_window_order_the_allocator_refuses_is_a_memory_error_not_an_abort(tmp_path: Path) -> None:
    """Review 101: the order of a buffer's windows (16 bytes a window) was
    allocated unchecked on the reader thread: a series of 8 million values
    cut in windows of 1 aborted the process under an address-space limit
    (and a crafted index claiming 2^31 values would at any limit). It is a
    MemoryError from the iterator, and from ``order``, and the process goes
    on (a limit 100 MiB above the child's size: the order needs 128 MB)."""
    import pyarrow as pa

    values = pa.array([np.arange(8_000_000, dtype=np.float32)], pa.list_(pa.float32()))
    vdir = timef.ingest_arrow(pa.table({"item_id": ["long"], "target": values}), tmp_path,
                              dataset_name="l", dataset_version="v1")
    script = textwrap.dedent(f"""
        import resource, timef
        v = timef.open({vdir!r})
        next(iter(v.windows(1_000_000, shuffle=False)))  # its threads and buffers, before the limit
        size = int(next(l for l in open("/proc/self/status") if l.startswith("VmSize:")).split()[1]) * 1024
        resource.setrlimit(resource.RLIMIT_AS, (size + (100 << 20), resource.RLIM_INFINITY))
        for take in (lambda: next(iter(v.windows(1, shuffle=False))), lambda: v.window_plan(1).order(epoch=0)):
            try:
                take()
                print("no error")
            except MemoryError as e:
                print(type(e).__name__, e)
        print(len(v.window_plan(1_000_000)))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=CHILD_TIMEOUT_S,
                         env={**os.environ, "MALLOC_ARENA_MAX": "1"})
    assert out.returncode == 0, out.stderr
    refused = "MemoryError cannot allocate 128000000 bytes for the order of 8000000 windows"
    assert out.stdout.splitlines() == [refused, refused, "8"]  # and the process goes on


def test_import_timef_does_not_import_torch() -> None:
    out = subprocess.run([sys.executable, "-c", "import sys, timef; print('torch' in sys.modules)"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def dataset(vdir: str, **kw: Any) -> "timef.torch.WindowDataset":
    return timef.torch.WindowDataset(vdir, CONTEXT, HORIZON, **{"seed": 7, **kw})


def loader_keys(loader: Any) -> list[tuple[str, int]]:
    return [k for batch in loader for k in keys(batch)]


def test_ranks_and_workers_take_every_window_exactly_once(needs_torch: None, vdir: str) -> None:
    plan = timef.open(vdir).window_plan(CONTEXT, HORIZON, seed=7)
    whole = plan.order(epoch=2)
    assert sorted(whole) == sorted(expected(vdir, CONTEXT + HORIZON, CONTEXT + HORIZON))
    for ranks, workers in [(1, 1), (1, 2), (2, 1), (2, 2), (3, 2)]:
        seen: list[tuple[str, int]] = []
        for rank in range(ranks):
            ds = dataset(vdir, rank=rank, world_size=ranks)
            ds.set_epoch(2)
            got = loader_keys(DataLoader(ds, batch_size=10, num_workers=workers,
                                         multiprocessing_context="fork" if workers else None))
            shares = [plan.order(epoch=2, consumer=rank * workers + k, consumers=ranks * workers)
                      for k in range(workers)]
            assert Counter(got) == Counter(k for s in shares for k in s), (ranks, workers, rank)
            if workers == 1:
                assert got == shares[0]
            seen.extend(got)
        assert Counter(seen) == Counter(whole) and len(seen) == len(whole), (ranks, workers)


def test_drop_last_gives_every_rank_as_many_windows_and_batches(needs_torch: None, vdir: str) -> None:
    """Review 127: ranks took floor-split shares (a DDP loop in lock step hangs
    on the rank with a step more). With drop_last each rank yields
    total // world_size windows, the same batches per worker, and the ranks
    together the epoch order less its last total % world_size."""
    plan = timef.open(vdir).window_plan(CONTEXT, HORIZON, seed=7)
    whole = plan.order(epoch=2)
    for ranks, workers in [(4, 0), (4, 2), (7, 2), (9, 1)]:
        assert len(whole) % ranks, (len(whole), ranks)  # a remainder to leave out
        even = len(whole) // ranks
        seen: list[tuple[str, int]] = []
        batches = []
        for rank in range(ranks):
            ds = dataset(vdir, rank=rank, world_size=ranks, drop_last=True)
            ds.set_epoch(2)
            assert len(ds) == even
            loader = DataLoader(ds, batch_size=10, num_workers=workers,
                                multiprocessing_context="fork" if workers else None)
            got = [keys(b) for b in loader]
            batches.append([len(b) for b in got])
            got_keys = [k for b in got for k in b]
            assert len(got_keys) == even, (ranks, workers, rank)
            seen.extend(got_keys)
        assert all(b == batches[0] for b in batches), batches
        assert sorted(seen) == sorted(whole[: even * ranks]), (ranks, workers)
    # without it, every window once, ranks differing by one
    sizes = [len(dataset(vdir, rank=r, world_size=7)) for r in range(7)]
    assert sum(sizes) == len(whole) and max(sizes) - min(sizes) == 1
    # a resume by another world size: the rest once each, evenly again
    a = dataset(vdir, rank=0, world_size=4, drop_last=True)
    a.set_epoch(2)
    it = iter(a)
    head = [(w["time_series_id"], w["start"]) for _, w in zip(range(11), it)]
    rest = []
    for rank in range(3):
        b = dataset(vdir, rank=rank, world_size=3, drop_last=True)
        b.load_state_dict(a.state_dict())
        rest.append([(w["time_series_id"], w["start"]) for w in b])
    left = len(whole) - len(whole) % 4 - 11  # 377: 125 each, 2 more left out
    assert [len(r) for r in rest] == [left // 3] * 3
    assert len(set(head + rest[0] + rest[1] + rest[2])) == len(head) + 3 * (left // 3)
    # a state without drop_last is not resumed with it
    c = dataset(vdir, rank=0, world_size=4)
    c.set_epoch(2)
    with pytest.raises(ValueError, match="state of another drop_last: True, this dataset has False"):
        c.load_state_dict(a.state_dict())
    # nor one saved before states recorded it (review 129: its spans moved)
    old = {k: v for k, v in c.state_dict().items() if k != "drop_last"}
    with pytest.raises(ValueError, match="state of another drop_last: False, this dataset has True"):
        a.load_state_dict(old)
    c.load_state_dict(old)
    with pytest.raises(timef.TimeFValidationError, match="invalid option drop_last: 1 is not a bool"):
        dataset(vdir, drop_last=1)


@pytest.mark.parametrize("workers", [0, 2])
def test_batches_through_a_dataloader_hold_ids_as_object_arrays_and_the_plans_values(
        needs_torch: None, vdir: str, workers: int) -> None:
    """``batch_size`` set, ``DataLoader(batch_size=None)``: each batch is the
    plan's batch, tensors for the numbers and numpy object arrays of str for
    the ids (which DataLoader's default_convert passes on untouched)."""
    want = list(timef.open(vdir).window_plan(CONTEXT, HORIZON, seed=7).windows(batch_size=32))
    ds = dataset(vdir, batch_size=32)
    got = list(DataLoader(ds, batch_size=None, num_workers=workers,
                          multiprocessing_context="fork" if workers else None))
    if workers == 2:
        # two contiguous shares, each cut into batches of its own: compare window by window
        flat = {k: np.concatenate([np.asarray(b[k]) for b in got]) for k in got[0]}
        flat_want = {k: np.concatenate([np.asarray(b[k]) for b in want]) for k in want[0]}
        assert sorted(flat) == sorted(flat_want)
        order = np.lexsort((flat["start"], flat["time_series_id"].astype(str)))
        order_want = np.lexsort((flat_want["start"], flat_want["time_series_id"].astype(str)))
        for k in flat:
            np.testing.assert_array_equal(flat[k][order], flat_want[k][order_want], err_msg=k)
        return
    # len() is what this rank yields, as DataLoader counts it: batches here
    assert len(got) == len(want) == len(ds) == -(-ds.total_windows // 32)
    for b, w in zip(got, want):
        assert sorted(b) == sorted(w)
        for key in ("time_series_id", "sample_id"):
            assert isinstance(b[key], np.ndarray) and b[key].dtype == object, key
            assert all(type(i) is str for i in b[key]) and b[key].tolist() == w[key], key
        for key in ("start", "start_s", "past_values", "future_values"):
            assert isinstance(b[key], torch.Tensor), key
            np.testing.assert_array_equal(b[key].numpy(), w[key], err_msg=key)


def test_workers_hand_batches_over_by_the_sharing_strategy_asked_for_in_that_worker_only(
        needs_torch: None, vdir: str) -> None:
    class Probe(timef.torch.WindowDataset):
        def __iter__(self) -> Any:
            for b in super().__iter__():
                yield {**b, "strategy": torch.multiprocessing.get_sharing_strategy()}

    main = torch.multiprocessing.get_sharing_strategy()
    for asked, seen in [("file_system", "file_system"), (None, main), ("file_descriptor", "file_descriptor")]:
        ds = Probe(vdir, CONTEXT, HORIZON, batch_size=16, worker_sharing_strategy=asked)
        got = list(DataLoader(ds, batch_size=None, num_workers=2, multiprocessing_context="fork"))
        assert {b["strategy"] for b in got} == {seen}, asked
        assert sum(len(b["start"]) for b in got) == ds.total_windows
    assert torch.multiprocessing.get_sharing_strategy() == main
    with pytest.raises(ValueError, match="worker_sharing_strategy 'shm' is not one of .* or None"):
        timef.torch.WindowDataset(vdir, CONTEXT, HORIZON, worker_sharing_strategy="shm")


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="no /dev/shm (not Linux)")
def test_iterations_stopped_early_leave_no_shared_memory_behind_by_default(needs_torch: None, vdir: str) -> None:
    """From review 7: the batches in flight when an epoch stops early (a step
    budget) are never received; under ``file_system`` sharing their segments
    stay in /dev/shm until the process exits (64 MiB in a default Docker
    container). The default keeps torch's descriptor passing, which leaves
    none; ``file_system``, asked for, does leave them (the control)."""
    class Pids(timef.torch.WindowDataset):
        def __iter__(self) -> Any:
            for b in super().__iter__():
                yield {**b, "pid": os.getpid()}

    def left_behind(**kw: Any) -> list[str]:
        ds = Pids(vdir, CONTEXT, HORIZON, batch_size=4, **kw)
        loader = DataLoader(ds, batch_size=None, num_workers=2, multiprocessing_context="fork")
        pids = set()
        for epoch in range(3):
            ds.set_epoch(epoch)
            for i, b in enumerate(loader):
                pids.add(b["pid"])
                if i == 1:
                    break
            del b
        assert len(pids) == 6  # both workers of each epoch handed a batch over
        return sorted(f for f in os.listdir("/dev/shm") if any(f.startswith(f"torch_{p}_") for p in pids))

    assert left_behind() == []
    assert len(left_behind(worker_sharing_strategy="file_system")) >= 3


def test_a_worker_that_cannot_use_file_system_sharing_keeps_its_own_with_a_warning(
        needs_torch: None, vdir: str, tmp_path: Path) -> None:
    """From review 6: without a usable temporary directory (a read-only /tmp)
    torch_shm_manager cannot start; the strategy asked for then falls back to
    the worker's own instead of failing every worker."""
    script = textwrap.dedent(f"""
        import torch.utils.data, timef.torch
        if __name__ == "__main__":
            ds = timef.torch.WindowDataset({vdir!r}, {CONTEXT}, {HORIZON}, seed=7, batch_size=16,
                                           worker_sharing_strategy="file_system")
            loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2)
            print(sum(len(b["start"]) for b in loader))
    """)
    (tmp_path / "not-a-dir").write_text("")
    env = {**os.environ, "TMPDIR": str(tmp_path / "not-a-dir" / "tmp")}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=CHILD_TIMEOUT_S,
                         env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == [str(len(expected(vdir, CONTEXT + HORIZON, CONTEXT + HORIZON)))]
    # raised where torch fetches from the dataset (the warning's stacklevel)
    warned = re.findall(r"torch/utils/data/_utils/fetch\.py:\d+: RuntimeWarning: worker_sharing_strategy 'file_system' "
                        r"is not usable in this DataLoader worker \(.*\); using 'file_descriptor'", out.stderr)
    assert len(warned) == 2, out.stderr[-3000:]


def test_the_order_is_fixed_by_seed_and_epoch(needs_torch: None, vdir: str) -> None:
    def order(**kw: Any) -> list[tuple[str, int]]:
        ds = dataset(vdir, **{k: v for k, v in kw.items() if k != "epoch"})
        ds.set_epoch(kw.get("epoch", 0))
        return [(w["time_series_id"], w["start"]) for w in ds]

    first = order()
    assert order() == first
    assert order(epoch=1) != first and sorted(order(epoch=1)) == sorted(first)
    assert order(seed=8) != first
    window = next(iter(dataset(vdir)))
    assert window["past_values"].shape == (CONTEXT,) and window["past_values"].dtype == torch.float32
    assert set(window) == {"time_series_id", "sample_id", "start", "start_s", "past_values", "future_values"}
    assert window["sample_id"] == window["time_series_id"]


def test_resume_in_one_process_continues_exactly(needs_torch: None, vdir: str) -> None:
    ds = dataset(vdir)
    ds.set_epoch(4)
    whole = [(w["time_series_id"], w["start"]) for w in ds]
    ds = dataset(vdir)
    ds.set_epoch(4)
    it = iter(ds)
    head = [(w["time_series_id"], w["start"]) for _, w in zip(range(37), it)]
    state = ds.state_dict()
    assert (state["epoch"], state["taken"], state["consumers"]) == (4, 37, 1)
    resumed = dataset(vdir)
    resumed.load_state_dict(state)
    resumed.set_epoch(4)  # the training loop's call keeps the resume of the same epoch
    assert head + [(w["time_series_id"], w["start"]) for w in resumed] == whole
    # a state of another seed is refused
    with pytest.raises(ValueError, match="state of another seed"):
        timef.torch.WindowDataset(vdir, CONTEXT, HORIZON, seed=8).load_state_dict(state)


def test_resume_through_stateful_dataloader_also_with_other_workers(needs_torch: None, vdir: str) -> None:
    def loader(ds: Any, workers: int) -> Any:
        return StatefulDataLoader(ds, batch_size=8, num_workers=workers, multiprocessing_context="fork")

    whole = [keys(b) for b in loader(dataset(vdir), 2)]
    dl = loader(dataset(vdir), 2)
    it = iter(dl)
    head = [keys(next(it)) for _ in range(5)]
    state = dl.state_dict()
    del it
    again = loader(dataset(vdir), 2)
    again.load_state_dict(state)
    assert head + [keys(b) for b in again] == whole, "the same batches as the uninterrupted run"
    # three workers after two: the windows not handed out yet, each once
    ds = dataset(vdir)
    ds.load_state_dict(state)
    rest = [k for b in loader(ds, 3) for k in keys(b)]
    done = [k for b in head for k in b]
    assert Counter(done + rest) == Counter(k for b in whole for k in b)
    assert len(done) + len(rest) == sum(len(b) for b in whole)


def fake_process_group(monkeypatch: pytest.MonkeyPatch, rank: int, world_size: int) -> None:
    """torch.distributed as if `init_process_group` had run in this process (and only here)."""
    monkeypatch.setattr(torch.distributed, "is_available", lambda: True)
    monkeypatch.setattr(torch.distributed, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.distributed, "get_rank", lambda: rank)
    monkeypatch.setattr(torch.distributed, "get_world_size", lambda: world_size)


def test_workers_take_the_rank_of_the_process_group_they_do_not_have(
        needs_torch: None, vdir: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Review 24: a spawned DataLoader worker has no process group; it once took rank 0 of 1,
    so every rank read the whole epoch. It takes the rank its parent saw; a process with neither
    takes torchrun's RANK and WORLD_SIZE."""
    plan = timef.open(vdir).window_plan(CONTEXT, HORIZON, seed=7)
    share = Counter(k for w in range(2) for k in plan.order(consumer=2 + w, consumers=4))
    fake_process_group(monkeypatch, 1, 2)
    ds = dataset(vdir)
    assert len(ds) == sum(share.values()) and ds.total_windows == len(plan)
    got = loader_keys(DataLoader(ds, batch_size=10, num_workers=2, multiprocessing_context="spawn"))
    assert Counter(got) == share
    # built before the process group, pickled for spawned workers with nothing else called
    monkeypatch.undo()
    ds = dataset(vdir)
    fake_process_group(monkeypatch, 1, 2)
    got = loader_keys(DataLoader(ds, batch_size=10, num_workers=2, multiprocessing_context="spawn"))
    assert Counter(got) == share
    monkeypatch.undo()
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert Counter(loader_keys(DataLoader(dataset(vdir), batch_size=10, num_workers=2,
                                          multiprocessing_context="fork"))) == share


def test_persistent_workers_read_the_epoch_set_after_they_started(needs_torch: None, vdir: str) -> None:
    """Review 24: persistent workers kept the epoch of their first iteration."""
    def batches(ds: Any, **kw: Any) -> list[list[tuple[str, int]]]:
        return [keys(b) for b in DataLoader(ds, batch_size=16, num_workers=2, multiprocessing_context="fork", **kw)]

    ds = dataset(vdir)
    dl = DataLoader(ds, batch_size=16, num_workers=2, multiprocessing_context="fork", persistent_workers=True)
    first = [keys(b) for b in dl]
    ds.set_epoch(1)
    second = [keys(b) for b in dl]
    fresh = dataset(vdir)
    fresh.set_epoch(1)
    assert first == batches(dataset(vdir)) and second == batches(fresh) and second != first


def test_one_rank_state_resumed_by_any_split_takes_every_window_once(needs_torch: None, vdir: str) -> None:
    """Review 24: one state of rank 0 of 2, loaded by one process of two workers: worker 0 is again
    consumer 0 of 2 and went on after what it took, while worker 1 re-split the rest: 1/4 of the epoch
    lost. Then a state resumed twice (its `consumed` non-empty) raised TypeError."""
    whole = Counter(timef.open(vdir).window_plan(CONTEXT, HORIZON, seed=5).order())
    a = dataset(vdir, seed=5, rank=0, world_size=2)
    it = iter(a)
    head = [(w["time_series_id"], w["start"]) for _, w in zip(range(50), it)]
    b = dataset(vdir, seed=5)
    b.load_state_dict(a.state_dict())
    rest = loader_keys(DataLoader(b, batch_size=8, num_workers=2, multiprocessing_context="fork"))
    assert Counter(head + rest) == whole
    # resumed twice: 10 of one consumer, 5 of rank 0 of 2 after it, then the rest by one consumer
    a = dataset(vdir, seed=5)
    it = iter(a)
    taken = [(w["time_series_id"], w["start"]) for _, w in zip(range(10), it)]
    b = dataset(vdir, seed=5, rank=0, world_size=2)
    b.load_state_dict(a.state_dict())
    it = iter(b)
    taken += [(w["time_series_id"], w["start"]) for _, w in zip(range(5), it)]
    c = dataset(vdir, seed=5)
    c.load_state_dict(b.state_dict())
    assert Counter(taken + [(w["time_series_id"], w["start"]) for w in c]) == whole


def test_a_loaded_state_is_where_its_epoch_starts_until_set_epoch_moves_on(needs_torch: None, vdir: str) -> None:
    """Reviews 24, 27, 28: a DataLoader pass's workers start from a copy of the dataset, so which pass
    "took" a loaded resume cannot be told reliably (stopped passes, seeded workers, StatefulDataLoader
    loading in the workers); each attempt lost windows somewhere. The rule is the epoch's: every
    iteration of the loaded epoch starts at the state, in any process, until set_epoch gives another."""
    plan = timef.open(vdir).window_plan(CONTEXT, HORIZON, seed=7)
    whole, whole_1 = Counter(plan.order()), Counter(plan.order(epoch=1))
    a = dataset(vdir)
    it = iter(a)
    head = [(w["time_series_id"], w["start"]) for _, w in zip(range(50), it)]
    rest = whole - Counter(head)
    b = dataset(vdir)
    b.load_state_dict(a.state_dict())
    for loader in (DataLoader(b, batch_size=8, num_workers=2, multiprocessing_context="fork"),
                   DataLoader(b, batch_size=8, num_workers=3, multiprocessing_context="fork"),
                   DataLoader(b, batch_size=8)):
        assert Counter(loader_keys(loader)) == rest
    b.set_epoch(1)
    assert Counter(loader_keys(DataLoader(b, batch_size=8, num_workers=2, multiprocessing_context="fork"))) == whole_1
    b.set_epoch(0)  # the resume went with its epoch
    assert Counter(loader_keys(DataLoader(b, batch_size=8, num_workers=2, multiprocessing_context="fork"))) == whole


def test_a_stateful_dataloader_snapshot_before_every_worker_iterated_resumes_anywhere(
        needs_torch: None, vdir: str) -> None:
    """Review 28: a worker that had not iterated yet reported the loaded resume as given (consumer 0 of 1),
    beside a sibling's state in the split form: such a snapshot was refused by load_state_dict, or lost windows."""
    whole = Counter(timef.open(vdir).window_plan(CONTEXT, HORIZON, seed=7).order())
    a = dataset(vdir)
    it = iter(a)
    head = [(w["time_series_id"], w["start"]) for _, w in zip(range(50), it)]
    d = dataset(vdir)
    d.load_state_dict(a.state_dict())
    dl = StatefulDataLoader(d, batch_size=8, num_workers=3, prefetch_factor=1, multiprocessing_context="fork")
    it = iter(dl)
    first = keys(next(it))
    snapshot = dl.state_dict()
    del it
    e = dataset(vdir)
    e.load_state_dict(snapshot)
    rest = loader_keys(DataLoader(e, batch_size=8, num_workers=2, multiprocessing_context="fork"))
    assert Counter(head + first + rest) == whole


def test_stateful_dataloader_checkpoints_at_an_epochs_end_and_start_resume_the_next_epoch(
        needs_torch: None, vdir: str) -> None:
    """Review 29: a state saved at an epoch's end, loaded by the StatefulDataLoader inside its workers or
    after set_epoch, sent the epoch back (the next epoch gave no windows or the last one's order); a
    persistent worker's snapshot before its first batch of an epoch was its previous epoch's progress."""
    plan = timef.open(vdir).window_plan(CONTEXT, HORIZON, seed=7)
    for workers, persistent in [(0, False), (2, False), (2, True)]:
        kw = {"num_workers": workers, "multiprocessing_context": "fork", "persistent_workers": persistent} if workers else {}
        d = dataset(vdir)
        dl = StatefulDataLoader(d, batch_size=8, **kw)
        assert Counter(loader_keys(dl)) == Counter(plan.order())
        end = dl.state_dict()
        d.set_epoch(1)
        it = iter(dl)
        first = keys(next(it))
        start = dl.state_dict()
        del it
        e = dataset(vdir)
        again = StatefulDataLoader(e, batch_size=8, **kw)
        again.load_state_dict(end)
        e.set_epoch(1)
        assert Counter(loader_keys(again)) == Counter(plan.order(epoch=1)), (workers, persistent)
        f = dataset(vdir)
        f.load_state_dict(start)
        assert Counter(first + loader_keys(DataLoader(f, batch_size=8))) == Counter(plan.order(epoch=1))
    # review 30: a state saved after an epoch's last batch, inside the loop, resumes that epoch with
    # nothing left (it once moved on to the next epoch, which the loop then read twice)
    for workers in (0, 1):
        kw = {"num_workers": workers, "multiprocessing_context": "fork"} if workers else {}
        d = dataset(vdir)
        dl = StatefulDataLoader(d, batch_size=None, **kw)
        d.set_epoch(1)
        for _ in dl:
            saved = dl.state_dict()
        e = dataset(vdir)
        again = StatefulDataLoader(e, batch_size=None, **kw)
        again.load_state_dict(saved)
        got = {}
        for epoch in (1, 2):
            e.set_epoch(epoch)
            got[epoch] = Counter(k for w in again for k in [(w["time_series_id"], w["start"])])
        assert got == {1: Counter(), 2: Counter(plan.order(epoch=2))}, workers


def test_a_dataset_holds_one_shared_memory_descriptor_and_its_copies_share_again(
        needs_torch: None, vdir: str) -> None:
    """Review 26: two shared tensors held two descriptors per dataset (600 datasets ran out of 1024);
    a deep copy's epoch was not shared, so persistent workers forked from it ignored set_epoch."""
    import copy
    import pickle

    def fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    before = fds()
    held = [dataset(vdir) for _ in range(50)]
    assert fds() - before <= 50 + 5, fds() - before
    del held
    for copied in (copy.deepcopy(dataset(vdir)), pickle.loads(pickle.dumps(dataset(vdir)))):
        assert copied._epoch.is_shared()
        dl = DataLoader(copied, batch_size=16, num_workers=2, multiprocessing_context="fork", persistent_workers=True)
        first = loader_keys(dl)
        copied.set_epoch(1)
        assert loader_keys(dl) != first


def test_a_damaged_state_is_refused(needs_torch: None, vdir: str) -> None:
    a = dataset(vdir)
    it = iter(a)
    [next(it) for _ in range(5)]
    good = a.state_dict()
    for change, words in [({"taken": -1}, "taken -1"), ({"taken": 10**6}, "taken 1000000"),
                          ({"epoch": -1}, "epoch -1"), ({"consumer": 5, "consumers": 2}, "consumer 5 of 2"),
                          ({"consumers": 0}, "consumer 0 of 0"), ({"consumed": [[3, 1]]}, "consumed [[3, 1]]"),
                          ({"consumed": "x"}, "consumed 'x'"), ({"consumed": [[0.5, 10.7]]}, "consumed [[0.5, 10.7]]"),
                          ({"consumed": [[False, True]]}, "consumed [[False, True]]"),
                          ({"consumed": [[0, 10], [5, 20]]}, "consumed [[0, 10], [5, 20]]"),
                          ({"consumer": None, "consumers": None, "taken": 4}, "took 4 windows without a consumer")]:
        with pytest.raises(ValueError, match=re.escape(words)):
            dataset(vdir).load_state_dict({**good, **change})
    dataset(vdir).load_state_dict({**good, "epoch": np.int64(0), "taken": np.int64(5)})  # numpy's integers
    with pytest.raises(ValueError, match="a WindowDataset state without taken"):
        dataset(vdir).load_state_dict({k: v for k, v in good.items() if k != "taken"})


def test_a_state_of_another_order_is_refused(needs_torch: None, vdir: str) -> None:
    """Review 24: a state pinned only the version, seed, window count and epoch, so one saved
    with another shuffle or buffer was taken and repeated or lost windows."""
    a = dataset(vdir)
    it = iter(a)
    [next(it) for _ in range(30)]
    state = a.state_dict()
    assert state["plan"]["shuffle_buffer_row_groups"] == 8 and "threads" not in state["plan"]
    for other in ({"shuffle_buffer_row_groups": 4}, {"shuffle": False}):
        with pytest.raises(ValueError, match="state of another plan"):
            dataset(vdir, **other).load_state_dict(state)
    dataset(vdir, threads=1).load_state_dict(state)  # threads do not change the order


def test_bad_loader_arguments_are_refused_naming_the_option(needs_torch: None, vdir: str) -> None:
    """Review 24: negative integers raised OverflowError, batch_size=0 meant 256, a str of
    channels was split into characters, rank without world_size named neither."""
    for kw, field in [({"seed": -1}, "seed"), ({"seed": 2**64}, "seed"), ({"stride": 0}, "stride"),
                      ({"threads": -1}, "threads"),
                      ({"shuffle_buffer_row_groups": 0}, "shuffle_buffer_row_groups"), ({"batch_size": 0}, "batch_size"),
                      ({"rank": 1}, "world_size"), ({"world_size": 2}, "rank"), ({"rank": 2, "world_size": 2}, "rank"),
                      ({"world_size": 0, "rank": 0}, "world_size"), ({"channels": "12"}, "channels"),
                      ({"samples": "s-0"}, "samples"), ({"samples": [1]}, "samples")]:
        with pytest.raises(timef.TimeFValidationError) as e:
            dataset(vdir, **kw)
        assert (e.value.field, e.value.id) == (field, None), kw
        assert str(e.value).startswith(f"invalid option {field}: "), str(e.value)
    # as the core words it (review 146: "0 is outside 1..=18446744073709551615")
    for call, why in [(lambda: timef.torch.WindowDataset(vdir, 0), "context_length: must be at least 1"),
                      (lambda: timef.torch.WindowDataset(vdir, -1), "context_length: -1 is negative"),
                      (lambda: timef.torch.WindowDataset(vdir, CONTEXT, -1), "prediction_length: -1 is negative"),
                      (lambda: dataset(vdir).set_epoch(-1), "epoch: -1 is negative"),
                      (lambda: dataset(vdir, rank=-1, world_size=4), "rank: -1 is negative"),
                      (lambda: dataset(vdir, seed=2**64), f"seed: {2**64} is too large"),
                      (lambda: dataset(vdir, rank=5, world_size=4), "rank: 5 is not below world_size 4"),
                      (lambda: dataset(vdir).set_epoch(2**63), f"epoch: must be at most {2**63 - 1}")]:
        with pytest.raises(timef.TimeFValidationError) as e:
            call()
        assert str(e.value) == f"invalid option {why}"
    # numpy's integers are integers
    ds = dataset(vdir, seed=np.int64(7), rank=np.int32(0), world_size=np.uint8(1), batch_size=np.int64(8))
    ds.set_epoch(np.int64(1))
    assert (ds.plan_args["seed"], ds.rank, ds.batch_size, ds.epoch) == (7, 0, 8, 1)
    assert type(ds.plan_args["seed"]) is int
    with pytest.raises(timef.TimeFValidationError, match="invalid option seed: True is not an integer"):
        dataset(vdir, seed=True)
    for kw, field in [({"pad": 1}, "pad"), ({"shuffle": None}, "shuffle"), ({"stack_channels": "yes"}, "stack_channels"),
                      ({"task": 3}, "task"), ({"storage_options": {"timeout": 1}}, "storage_options")]:
        with pytest.raises(timef.TimeFValidationError) as e:
            dataset(vdir, **kw)
        assert e.value.field == field, kw
    # a window past 2^31 values names the option past it (it blamed prediction_length)
    for args, field in [((2**40,), "context_length"), ((8, 2**31 - 8), "prediction_length")]:
        with pytest.raises(timef.TimeFValidationError, match=f"invalid option {field}: the window length must be"):
            timef.open(vdir).window_plan(*args)


def _child_script(url: str, options: dict[str, str] | None, context: str) -> str:
    return textwrap.dedent(f"""
        import json, torch.utils.data, timef.torch
        ds = timef.torch.WindowDataset({url!r}, {CONTEXT}, {HORIZON}, seed=7, storage_options={options!r})
        n = len(ds)  # the parent reads the version before the workers start
        dl = torch.utils.data.DataLoader(ds, batch_size=16, num_workers=2, multiprocessing_context={context!r})
        got = sorted((i, int(s)) for b in dl for i, s in zip(b["time_series_id"], b["start"]))
        print(json.dumps([n, got]))
    """)


def _run_child(url: str, options: dict[str, str] | None, context: str) -> list[Any]:
    """The windows a DataLoader of 2 workers reads in a child process, which
    must finish within CHILD_TIMEOUT_S (a hang fails the test)."""
    # its own session, so that on a timeout its DataLoader workers are killed with it
    child = subprocess.Popen([sys.executable, "-c", _child_script(url, options, context)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = child.communicate(timeout=CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        pytest.fail(f"a DataLoader with {context} workers on {url} hung (> {CHILD_TIMEOUT_S} s)")
    assert child.returncode == 0, stderr[-3000:]
    return json.loads(stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_dataloader_workers_on_a_local_version(needs_torch: None, vdir: str, context: str) -> None:
    want = sorted(expected(vdir, CONTEXT + HORIZON, CONTEXT + HORIZON))
    n, got = _run_child(vdir, None, context)
    assert n == len(want) and [tuple(k) for k in got] == want


@pytest.fixture(scope="module")
def s3_version(vdir: str) -> tuple[str, dict[str, str]]:
    endpoint = s3_endpoint()
    options = s3_options(endpoint)
    url = f"s3://{s3_bucket(endpoint)}/data"
    rows = gluonts_rows(60, seed=5)
    return timef.ingest_arrow(rows, url, dataset_name="w", dataset_version="v1", storage_options=options,
                              **SMALL), options


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_dataloader_workers_on_an_s3_version(needs_torch: None, vdir: str, s3_version: tuple[str, dict[str, str]],
                                             context: str) -> None:
    url, options = s3_version
    want = sorted(expected(vdir, CONTEXT + HORIZON, CONTEXT + HORIZON))
    n, got = _run_child(url, options, context)
    assert n == len(want) and [tuple(k) for k in got] == want


def _raised(loader: Any) -> BaseException:
    """What iterating `loader` raises (a `for`: `list()` would ask `len()` first, in this process)."""
    with pytest.raises(Exception) as e:
        for _ in loader:
            pass
    return e.value


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_an_error_in_a_dataloader_worker_keeps_its_class_and_attributes(needs_torch: None, vdir: str,
                                                                        tmp_path: Path, context: str) -> None:
    """torch raises a worker's exception again as `type(traceback text)`:
    timef's errors and OSErrors still carry what they name (path, reason,
    errno, filename), equal to the same error raised without workers, also
    from the `state_dict` a StatefulDataLoader worker takes before it iterates."""
    kw = {"batch_size": None, "num_workers": 1, "multiprocessing_context": context}
    copy = tmp_path / "v1"
    shutil.copytree(vdir, copy)
    # shard 0 holding shard 1's bytes: its footer's counts are not the index's
    shutil.copy(copy / "time_series" / "shard-00001.parquet", copy / "time_series" / "shard-00000.parquet")
    ds = dataset(str(copy), batch_size=8, shuffle=False)
    here = _raised(DataLoader(ds, batch_size=None))
    assert type(here) is timef.CorruptVersionError
    assert here.path == str(copy / "time_series" / "shard-00000.parquet")
    for loader in (DataLoader(ds, **kw), StatefulDataLoader(ds, **kw)):
        there = _raised(loader)
        assert isinstance(there, timef.CorruptVersionError)
        assert (there.path, there.reason) == (here.path, here.reason)
        assert str(there).startswith("Caught CorruptVersionError in DataLoader worker process 0.")
    # the version gone once the dataset was made: a worker opens it when it
    # iterates, a StatefulDataLoader's when it takes its state first
    ds = dataset(str(copy), batch_size=8)
    shutil.rmtree(copy)
    here = _raised(DataLoader(ds, batch_size=None))
    assert type(here) is FileNotFoundError
    assert (here.errno, here.filename) == (2, str(copy))
    for loader in (DataLoader(ds, **kw), StatefulDataLoader(ds, **kw)):
        there = _raised(loader)
        assert isinstance(there, FileNotFoundError)
        assert str(there).startswith("Caught FileNotFoundError in DataLoader worker process 0.")
        assert (there.errno, there.strerror, there.filename) == (here.errno, here.strerror, here.filename)


def test_code_in_a_worker_builds_the_error_it_caught_again_with_its_class(needs_torch: None, vdir: str,
                                                                          tmp_path: Path) -> None:
    """From reviews 111-113: a dataset wrapping WindowDataset in the worker
    catches what it raises (the carrier) and raises another of its class,
    `type(e)(errno, strerror, filename)` (it was a TypeError) or
    `type(e)(message)` with attributes set by hand, or adds a note to it: the
    main process gets the attributes of the error raised last, never those of
    the error it was raised from, and a note loses none."""
    class Wrap(torch.utils.data.IterableDataset):
        def __init__(self, inner: Any, how: str) -> None:
            self.inner, self.how = inner, how

        def __iter__(self) -> Any:
            try:
                yield from self.inner
            except OSError as e:
                if self.how == "note":
                    # review 114: a note naming the header mid-line, or quoting another error's line
                    e.add_note("while reading run 17; see 'Traceback (most recent call last):' above\n"
                               '[timef attributes] {"errno": 5, "filename": "/elsewhere"}')
                    raise
                if self.how == "three":
                    raise type(e)(e.errno, "the training set is missing", "/etc/train.cfg") from e
                again = type(e)("no data for this run")
                again.filename = "/etc/train.cfg"
                raise again from e

    copy = tmp_path / "v1"
    shutil.copytree(vdir, copy)
    ds = dataset(str(copy), batch_size=8)
    shutil.rmtree(copy)
    kw = {"batch_size": None, "num_workers": 1, "multiprocessing_context": "fork"}
    there = _raised(DataLoader(Wrap(ds, "three"), **kw))
    assert isinstance(there, FileNotFoundError)
    assert "[Errno 2] the training set is missing: '/etc/train.cfg'" in str(there)
    assert (there.errno, there.strerror, there.filename) == (2, "the training set is missing", "/etc/train.cfg")
    there = _raised(DataLoader(Wrap(ds, "one"), **kw))
    assert isinstance(there, FileNotFoundError) and "no data for this run" in str(there)
    assert (there.errno, there.strerror, there.filename) == (None, None, "/etc/train.cfg")
    there = _raised(DataLoader(Wrap(ds, "note"), **kw))
    assert isinstance(there, FileNotFoundError) and "while reading run 17" in str(there)
    assert (there.errno, there.strerror, there.filename) == (2, "not found: no such directory", str(copy))


def test_an_iteration_left_paused_at_exit_prints_nothing(needs_torch: None, vdir: str) -> None:
    """From review 111: a loader's iterator still paused when the interpreter
    exits is closed after the module's globals are gone; nothing is printed."""
    script = textwrap.dedent(f"""
        import torch.utils.data, timef.torch
        ds = timef.torch.WindowDataset({vdir!r}, {CONTEXT}, {HORIZON}, seed=7, batch_size=8)
        it = iter(torch.utils.data.DataLoader(ds, batch_size=None))
        print(len(next(it)["start"]))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
    assert (out.returncode, out.stdout, out.stderr) == (0, "8\n", "")


def test_an_error_of_another_class_leaves_a_worker_as_torch_sends_it(needs_torch: None, vdir: str,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Only timef's classes and Python's own OSErrors are carried: a subclass
    from elsewhere (ssl.SSLError) keeps its exact class, as torch sends it."""
    import ssl

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise ssl.SSLError(1, "handshake refused")

    ds = dataset(vdir, batch_size=8)
    monkeypatch.setattr(timef, "open", refuse)  # the forked worker inherits it
    there = _raised(DataLoader(ds, batch_size=None, num_workers=1, multiprocessing_context="fork"))
    assert type(there) is ssl.SSLError
    assert there.args[0].startswith("Caught SSLError in DataLoader worker process 0.")


def test_readme_training_example_runs(needs_torch: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    text = (REPO / "README.md").read_text()
    blocks = re.findall(r"<!-- training-example -->\s*```python\n(.*?)```", text, re.S)
    assert len(blocks) == 1, "README.md must hold one ```python block after <!-- training-example -->"
    assert len(blocks[0].strip().splitlines()) <= 12
    monkeypatch.chdir(tmp_path)
    exec(compile(blocks[0], "README.md", "exec"), {"__name__": "__main__"})
    assert capsys.readouterr().out.strip().splitlines()[-1] == "epoch 1: 40 batches of torch.Size([32, 512])"


CHANNELS = ("x", "y", "z")


@pytest.fixture(scope="module")
def mvdir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """12 samples of three channels x, y, z of 100 + 37 * i values at 10 Hz, from 100 * i s."""
    ds = timef.TimeFDataset("mv", "v1")
    ds.add_source(source_id="src", name="test")
    for i in range(12):
        ids = []
        for c, ch in enumerate(CHANNELS):
            values = np.random.default_rng(i * 3 + c).normal(size=100 + 37 * i).astype(np.float32)
            ids.append(ds.add_series(time_series_id=f"m{i:02}/{ch}", spec_type="imu", channel=ch,
                                     sampling_rate_hz=10.0, values=values, t_start_s=100.0 * i))
        ds.add_sample(sample_id=f"m{i:02}", source_id="src", series=ids)
    root = tmp_path_factory.mktemp("mv")
    with timef.TimeFWriter(root, ds, chunk_max_bytes=256, row_group_target_bytes=1024, shard_target_bytes=4096) as w:
        w.write()
    return str(root / "mv" / "v1")


def stacked_keys(batch: dict[str, Any]) -> list[tuple[str, int]]:
    return list(zip(batch["sample_id"], (int(s) for s in batch["start"])))


def test_stacked_channels_are_one_window_per_sample_each_row_its_read_series_slice(mvdir: str) -> None:
    v = timef.open(mvdir)
    context, horizon = 30, 10
    want = [(f"m{i:02}", s) for i in range(12) for s in range(0, 100 + 37 * i - 40 + 1, 40)]
    assert len(want) == 85
    plan = v.window_plan(context, horizon, stack_channels=True, shuffle=False)
    assert plan.channels == list(CHANNELS) and len(plan) == 85
    assert plan.order() == want
    got = []
    for batch in v.windows(context, horizon, stack_channels=True, shuffle=False, batch_size=9):
        n = len(batch["start"])
        assert "time_series_id" not in batch
        assert batch["past_values"].shape == (n, 3, context) and batch["future_values"].shape == (n, 3, horizon)
        for i, (sample, s) in enumerate(stacked_keys(batch)):
            for row, ch in enumerate(CHANNELS):
                series = v.read_series(f"{sample}/{ch}")
                np.testing.assert_array_equal(batch["past_values"][i, row], series[s : s + context])
                np.testing.assert_array_equal(batch["future_values"][i, row], series[s + context : s + context + horizon])
            assert batch["start_s"][i] == 100.0 * int(sample[1:]) + s / 10.0
        got.extend(stacked_keys(batch))
    assert got == want
    # channels select in the sample's order; two samples only
    two = [k for b in v.windows(context, horizon, stack_channels=True, shuffle=False, channels=["z", "x"],
                                samples=["m03", "m01"]) for k in stacked_keys(b)]
    assert two == [k for k in want if k[0] in ("m01", "m03")] and len(two) == 3 + 5
    assert v.window_plan(context, horizon, stack_channels=True, channels=["z", "x"]).channels == ["x", "z"]
    # shuffled, every window once; ranks take contiguous spans of the one order
    shuffled = [k for b in v.windows(context, horizon, stack_channels=True, seed=2) for k in stacked_keys(b)]
    assert shuffled != want and sorted(shuffled) == sorted(want)
    ranks = [[k for b in v.windows(context, horizon, stack_channels=True, seed=2, rank=r, world_size=3)
              for k in stacked_keys(b)] for r in range(3)]
    assert ranks[0] + ranks[1] + ranks[2] == shuffled


def test_stacked_channels_of_unequal_series_are_refused_naming_the_sample(tmp_path: Path) -> None:
    ds = timef.TimeFDataset("uneq", "v1")
    ds.add_source(source_id="src", name="test")
    for sample, lengths in [("a", (50, 50)), ("b", (50, 40))]:
        ids = [ds.add_series(time_series_id=f"{sample}/{ch}", spec_type="imu", channel=ch, sampling_rate_hz=10.0,
                             values=np.zeros(n, np.float32)) for ch, n in zip("xy", lengths)]
        ds.add_sample(sample_id=sample, source_id="src", series=ids)
    with timef.TimeFWriter(tmp_path, ds) as w:
        w.write()
    v = timef.open(tmp_path / "uneq" / "v1")
    with pytest.raises(timef.TimeFValidationError, match="series b/x has 50 values at 10 Hz from 0 s, series b/y 40") as e:
        v.window_plan(10, stack_channels=True)
    assert (e.value.id, e.value.field) == ("b", "stack_channels")
    assert len(v.window_plan(10)) == 5 + 5 + 5 + 4


def test_stacked_windows_through_dataloader_workers_and_resume(needs_torch: None, mvdir: str) -> None:
    def ds(**kw: Any) -> Any:
        return timef.torch.WindowDataset(mvdir, 30, 10, stack_channels=True, seed=5, **kw)

    plan = timef.open(mvdir).window_plan(30, 10, stack_channels=True, seed=5)
    whole = plan.order(epoch=1)
    for ranks, workers in [(1, 2), (2, 2), (3, 2)]:
        seen: list[tuple[str, int]] = []
        for rank in range(ranks):
            d = ds(rank=rank, world_size=ranks)
            d.set_epoch(1)
            got = [k for b in DataLoader(d, batch_size=4, num_workers=workers, multiprocessing_context="fork")
                   for k in stacked_keys(b)]
            assert Counter(got) == Counter(k for w in range(workers) for k in plan.order(
                epoch=1, consumer=rank * workers + w, consumers=ranks * workers))
            seen.extend(got)
        assert Counter(seen) == Counter(whole) and len(seen) == len(whole)
    window = next(iter(ds()))
    assert window["past_values"].shape == (3, 30) and set(window) == {
        "sample_id", "start", "start_s", "past_values", "future_values"}
    d = ds()
    d.set_epoch(1)
    it = iter(d)
    head = [(w["sample_id"], w["start"]) for _, w in zip(range(11), it)]
    resumed = ds()
    resumed.load_state_dict(d.state_dict())
    assert head + [(w["sample_id"], w["start"]) for w in resumed] == whole
