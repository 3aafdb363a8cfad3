"""The keyword arguments of :meth:`timef.Version.window_plan`, gathered once
for the loaders built on it (``timef.torch.WindowDataset``, ``timef.ray.read``)."""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np

from timef._timef import TimeFValidationError

U64_MAX = 2**64 - 1
"""Largest seed or epoch (the core's unsigned 64-bit integers)."""

WINDOW_PLAN_OPTIONS = (
    "context_length",
    "prediction_length",
    "task",
    "split",
    "samples",
    "channels",
    "stride",
    "pad",
    "stack_channels",
    "shuffle",
    "seed",
    "shuffle_buffer_row_groups",
    "threads",
)
"""Every argument of ``Version.window_plan``, by name."""


def invalid_option(option: str, reason: str) -> TimeFValidationError:
    """The core's refusal of an option (``InvalidOption``): a ``TimeFValidationError``
    with ``field`` the option, ``id`` None."""
    e = TimeFValidationError(f"invalid option {option}: {reason}")
    e.id, e.field, e.reason = None, option, reason
    return e


def check_int(option: str, value: Any, minimum: int, maximum: int = U64_MAX, *, none: bool = False) -> Any:
    """``value`` for ``option`` as an int (numpy's integers too), refused
    unless it is an integer (not a bool) in ``minimum..=maximum`` (or None
    when ``none``), naming the option."""
    if value is None and none:
        return None
    if not isinstance(value, numbers.Integral) or isinstance(value, (bool, np.bool_)):
        raise invalid_option(option, f"{value!r} is not an integer" + (" or None" if none else ""))
    value = int(value)
    if value < minimum:
        # as the core says it (`-1 is negative`, `must be at least 1`), not as a range to 2**64 - 1
        raise invalid_option(option, f"{value} is negative" if value < 0 else f"must be at least {minimum}")
    if value > maximum:
        # the bound, when the option has one of its own (rank below world_size)
        raise invalid_option(option, f"{value} is too large" if maximum == U64_MAX else f"must be at most {maximum}")
    return value


def window_plan_args(args: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments of ``Version.window_plan`` among ``args`` (a caller's
    ``locals()``), checked (``TimeFValidationError`` naming the option: an
    integer out of range, one ``str`` for ``samples`` or ``channels``), and
    ``samples`` and ``channels`` copied as lists (so the arguments pickle and
    compare by value)."""
    out = {k: args[k] for k in WINDOW_PLAN_OPTIONS if k in args}
    for option, minimum in (("prediction_length", 0), ("seed", 0), ("shuffle_buffer_row_groups", 1), ("threads", 0)):
        if option in out:
            out[option] = check_int(option, out[option], minimum)
    if "context_length" in out:
        # None: no windows asked for (timef.ray.read of chunks or series)
        out["context_length"] = check_int("context_length", out["context_length"], 1, none=True)
    if "stride" in out:
        out["stride"] = check_int("stride", out["stride"], 1, none=True)
    for key in ("pad", "stack_channels", "shuffle"):
        if key in out:
            if not isinstance(out[key], (bool, np.bool_)):
                raise invalid_option(key, f"{out[key]!r} is not a bool")
            out[key] = bool(out[key])
    for key in ("task", "split"):
        if out.get(key) is not None and not isinstance(out[key], str):
            raise invalid_option(key, f"{out[key]!r} is not a str or None")
    for key in ("samples", "channels"):
        if out.get(key) is not None:
            if isinstance(out[key], (str, bytes)):
                raise invalid_option(key, f"{out[key]!r} is one string, not a list of {key[:-1]} ids")
            out[key] = list(out[key])
            if not all(isinstance(i, str) for i in out[key]):
                raise invalid_option(key, f"{out[key]!r} holds a value that is not a str")
            out[key] = [str(i) for i in out[key]]  # numpy's str_ too: states pickle as plain data
    return out
