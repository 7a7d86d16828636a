"""A counter's totals as the backends hand them over, merged over blocks.

Both backends' ``stop`` / ``read`` give a dict: the counts of
:data:`COUNT_KEYS`, the FLOPs by compute dtype (:data:`BY_DTYPE_KEYS`,
sequences indexed like ``_C.dtype_names()``), ``ops`` (name -> calls,
executed), ``modules`` (token -> forward, model, calls), ``uncounted`` (the
audit's records) and ``first_error``. A FlopCounter adds its blocks' dicts up
here (:class:`CounterTotals`).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ..._native import _C
from ._audit import merge_uncounted

__all__ = ["BY_DTYPE_KEYS", "COUNT_KEYS", "CounterTotals", "ModuleFlops", "format_flops", "merge",
           "settle", "zero_totals"]

COUNT_KEYS = ("executed_flops", "forward_flops", "model_flops", "backward_flops",
              "recompute_flops", "overcompute_flops", "counted_calls", "errors",
              "approximate_calls", "anticipated_flops", "anticipated_overcompute_flops",
              "mask_read_calls", "mask_tensor_calls", "mask_tensor_flops")
# FLOPs by compute dtype: a sequence indexed like _C.dtype_names()
BY_DTYPE_KEYS = ("model_flops_by_dtype", "executed_flops_by_dtype",
                 "anticipated_flops_by_dtype")


@dataclasses.dataclass(frozen=True)
class ModuleFlops:
    """FLOPs of one module's forward calls, its submodules included.

    Attributes:
        forward_flops: counted ops run in its forward.
        model_flops: their model FLOPs (forward + the backward they need).
        calls: forward calls seen (activation-checkpoint recomputes excluded).
    """

    forward_flops: int
    model_flops: int
    calls: int


def zero_totals() -> dict[str, Any]:
    totals: dict[str, Any] = {key: 0 for key in COUNT_KEYS}
    totals["first_error"] = None
    totals["ops"] = {}
    totals["modules"] = {}
    totals["uncounted"] = {}
    for key in BY_DTYPE_KEYS:
        totals[key] = [0] * len(_C.dtype_names())
    return totals


def settle(totals: dict[str, Any]) -> dict[str, Any]:
    """``totals`` (merged raw counts) with their model FLOPs settled, in
    place: the backends count the model FLOPs of every call where it runs --
    a forward, and the backward that ran (csrc/core/ops/ops.h "Reaching the
    loss") -- and keep apart the backward each forward call anticipates.
    A count in which no counted call ran in a backward (its backward runs
    outside it, or never) adds the anticipated backward: the training step it
    stands for."""
    if totals["backward_flops"] == 0:
        totals["model_flops"] += totals["anticipated_flops"]
        totals["overcompute_flops"] += totals["anticipated_overcompute_flops"]
        totals["model_flops_by_dtype"] = [
            a + b for a, b in zip(totals["model_flops_by_dtype"],
                                  totals["anticipated_flops_by_dtype"])]
    return totals


def merge(into: dict[str, Any], more: Mapping[str, Any]) -> None:
    """Add ``more`` to ``into``: the counts, and the tables ``more`` has."""
    for key in COUNT_KEYS:
        into[key] += more[key]
    for key in BY_DTYPE_KEYS:
        into[key] = [a + b for a, b in zip(into[key], more[key])]
    if into["first_error"] is None:
        into["first_error"] = more["first_error"]
    for name, (calls, flops) in more.get("ops", {}).items():
        old_calls, old_flops = into["ops"].get(name, (0, 0))
        into["ops"][name] = (old_calls + calls, old_flops + flops)
    for token, row in more.get("modules", {}).items():
        old = into["modules"].get(token, (0, 0, 0))
        into["modules"][token] = tuple(a + b for a, b in zip(old, row))
    merge_uncounted(into["uncounted"], more.get("uncounted", {}))


class CounterTotals:
    """A FlopCounter's totals over its blocks, held by the backend that
    counted them (``new_totals`` / ``stop(handle, totals)`` / ``totals``:
    the C++ observer keeps them in C++, so a block's end builds no Python
    object per op or module). The counts read after a block are cached until
    the next one; a counter whose backend changed (it fell back) carries the
    old backend's totals over."""

    __slots__ = ("backend", "held", "carried", "cache")

    def __init__(self) -> None:
        self.backend: Any = None
        self.held: Any = None
        self.carried: dict[str, Any] | None = None
        self.cache: dict[str, Any] | None = None

    def bind(self, backend: Any) -> None:
        """Count into ``backend``'s totals from now on."""
        if backend is self.backend:
            return
        if self.held is not None:
            self.carried = self.carried or zero_totals()
            merge(self.carried, self.backend.totals(self.held, None, True))
        self.backend, self.held, self.cache = backend, backend.new_totals(), None

    def stop(self, handle: Any) -> None:
        """End the block counted in ``handle``: its counts join the totals."""
        self.backend.stop(handle, self.held)
        self.cache = None

    def read(self, handle: Any = None, tables: bool = False) -> dict[str, Any]:
        """The totals, with the active block ``handle``'s so far, their model
        FLOPs settled (:func:`settle`); the tables (ops, modules, uncounted)
        only with ``tables``."""
        if handle is None and not tables and self.cache is not None:
            return self.cache
        out = (self.backend.totals(self.held, handle, tables) if self.held is not None
               else zero_totals())  # a fresh dict
        if self.carried is not None:
            both = zero_totals()
            merge(both, self.carried)
            merge(both, out)
            out = both
        settle(out)
        if handle is None and not tables:
            self.cache = out
        return out

    def note_error(self, message: str) -> None:
        """One more call that could not be counted (``message`` if first)."""
        self.backend.note_error(self.held, message)
        self.cache = None

    def reset(self) -> None:
        if self.held is not None:
            self.backend.reset_totals(self.held)
        self.carried = self.cache = None


def format_flops(value: float) -> str:
    for unit, scale in (("PFLOP", 1e15), ("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6),
                        ("KFLOP", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:,.3f} {unit}"
    return f"{value:,.0f} FLOP"
