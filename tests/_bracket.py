"""Real time in the Python tests without a tolerance the scheduler can break.

A test that times real work (a sleep) bounds what the code measured from below
by what it slept -- a sleep lasts at least that -- and from above by its own
CLOCK_MONOTONIC readings taken before the code's first mark and after its last
(:class:`Bracket`): the code's interval lies inside them however long the
machine kept the test waiting, while a fixed bound ("< 2 s") is one the
scheduler can break. Where a figure must be exact, the tests drive a virtual
clock instead (the fake GPU driver's timeline, the fake NVML's clock).
"""
from __future__ import annotations

import time
from typing import Any

#: Float rounding between the code's sum of per-step seconds and the bracket's one
#: conversion (both from integer nanoseconds): far below the clock's resolution.
ROUNDING_S = 1e-9


class Bracket:
    """``with Bracket() as b: ...`` -- ``b.s``: the block's seconds on
    CLOCK_MONOTONIC (the core's CPU clock), the upper bound of any interval the
    code measured inside it."""

    start_ns = end_ns = 0

    def __enter__(self) -> "Bracket":
        self.start_ns = time.monotonic_ns()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.end_ns = time.monotonic_ns()

    @property
    def s(self) -> float:
        return (self.end_ns - self.start_ns) * 1e-9 + ROUNDING_S
