"""The keyword arguments of :meth:`timef.Version.window_plan`, gathered once
for the loaders built on it (``timef.torch.WindowDataset``, ``timef.ray.read``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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


def window_plan_args(args: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments of ``Version.window_plan`` among ``args`` (a caller's
    ``locals()``), ``samples`` and ``channels`` copied as lists (so the
    arguments pickle and compare by value)."""
    out = {k: args[k] for k in WINDOW_PLAN_OPTIONS if k in args}
    for key in ("samples", "channels"):
        if out.get(key) is not None:
            out[key] = list(out[key])
    return out
