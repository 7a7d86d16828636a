"""A run's ledger intervals, booked as they stream in (the job ledger's input).

The ledger (:mod:`._ledger`, its module docstring gives the arithmetic)
splits each run's steps into productive time, data and lost progress. Most
of what it adds up does not depend on anything after the run -- the badput
phases, the compiled call's forward + backward, the first boundary, whether
every step's FLOPs are known -- and is summed as each interval arrives.
Lost progress does: a later run that resumes at step N makes this run's
steps >= N lost, and that run comes later in the file. So each interval
keeps the few numbers a resume point changes (its steps, step and data
seconds, FLOPs, line) in typed columns, 56 bytes an interval with the mean
step that the first step's excess is measured against, never a record. A
run no later run resumes into is summed from the running totals; one that
is resumed into is summed again from the columns, interval by interval, in
file order -- the same additions in the same order as when the ledger read
whole records, so the figures are the same to the last bit.
"""
from __future__ import annotations

import math
import statistics
from array import array
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from ._records import Run
from ._stream import Sink

__all__ = ["BookIntervals", "IntervalBook", "Steps", "book_of", "lost_share"]

_NAN = float("nan")


@dataclass
class Steps:
    """A run's step accounting, seconds (FLOPs for ``flops``)."""

    productive: float = 0.0
    data: float = 0.0
    lost: float = 0.0
    phases: Dict[str, float] = field(default_factory=lambda: {"checkpoint": 0.0, "eval": 0.0,
                                                              "compile": 0.0})
    flops: float = 0.0
    flops_complete: bool = True
    first_boundary: Optional[float] = None
    startup: float = 0.0             # the first step's excess over the run's median step


def number(value: Any) -> Optional[float]:
    """``value`` as a finite float, else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        value = float(value)
    except OverflowError:
        return None
    return value if math.isfinite(value) else None


def lost_share(first: int, end: int, cut: Optional[int]) -> float:
    """The share of steps ``first <= s < end`` at or beyond ``cut``."""
    if cut is None or end <= first:
        return 0.0
    return min(1.0, max(0.0, (end - max(first, cut)) / (end - first)))


def _ranks(run: Run) -> int:
    try:
        return int(run.get("ranks") or 1)
    except (TypeError, ValueError):
        return 1


class IntervalBook:
    """One run's intervals (module docstring): running totals and columns."""

    def __init__(self, ranks: int) -> None:
        self.ranks = ranks
        self.starts, self.ends, self.lines = array("q"), array("q"), array("q")
        self.step_s, self.data, self.flops = array("d"), array("d"), array("d")  # NaN: unknown
        self.means = array("d")           # each interval's mean step (the first step left out)
        self.totals = Steps()             # every interval kept whole (no resume point)
        self.max_end: Optional[int] = None
        self.fb_pushed, self.forward_backward, self.calls = 0, 0.0, 0
        self.first_from: Optional[int] = None   # the first interval with a pushed step
        self.first_s: Optional[float] = None    # the run's first step's period

    def add(self, iv: Dict[str, Any], line: int) -> None:
        """Book one checked interval (:func:`._check.check_ledger`)."""
        first, end = iv["from_step"], iv["to_step"]
        phases = iv.get("phase_s") or {}
        data = float(phases.get("data", 0.0))
        step_s = float(iv["step_s"])
        totals = self.totals
        for name in totals.phases:
            totals.phases[name] += float(phases.get(name, 0.0))
        pushed = end - first - int(iv.get("dropped") or 0)
        flops = number(iv.get("model_flops"))
        if flops is None or iv.get("flops_steps") != pushed or not self._all_ranks(iv):
            totals.flops_complete = totals.flops_complete and pushed == 0
            flops = None
        else:
            totals.flops += flops
        if totals.first_boundary is None:
            totals.first_boundary = number(iv.get("first_boundary"))
        totals.productive += step_s - data
        totals.data += data
        fb = float(phases.get("forward", 0.0)) + float(phases.get("backward", 0.0))
        if fb > 0:          # steps whose forward / backward were marked
            self.fb_pushed += pushed
            self.forward_backward += fb
        self.calls += int(iv.get("compile_calls") or 0)
        self._mean(iv, first, pushed, step_s)
        self.starts.append(first)
        self.ends.append(end)
        self.lines.append(line)
        self.step_s.append(step_s)
        self.data.append(data)
        self.flops.append(_NAN if flops is None else flops)
        self.max_end = end if self.max_end is None else max(self.max_end, end)

    def _all_ranks(self, iv: Dict[str, Any]) -> bool:
        """The interval's FLOPs cover every rank of the run."""
        try:
            return not (iv.get("flops_ranks") or 1) < self.ranks
        except TypeError:           # not a number: not known to cover them
            return False

    def _mean(self, iv: Dict[str, Any], first: int, pushed: int, step_s: float) -> None:
        """The interval's mean step period, the run's first step left out of its own."""
        if self.first_from is None:
            if pushed <= 0:
                return
            self.first_from = first
            self.first_s = number(iv.get("first_step_s"))
            if self.first_s is None:
                return
            pushed, step_s = pushed - 1, step_s - self.first_s
        elif self.first_s is None:
            return                   # no first step's period: no excess to measure
        if pushed > 0:
            self.means.append(step_s / pushed)

    def steps(self, cut: Optional[int], run: int, notes: List[str], path: str) -> Steps:
        """The run's steps booked with the resume point ``cut`` (None: none),
        its first step's excess and its compiled call's normal work moved
        (:mod:`._ledger`); notes name what was split or left out."""
        if cut is None or self.max_end is None or self.max_end <= cut:
            t = self.totals
            steps = Steps(productive=t.productive, data=t.data, phases=dict(t.phases),
                          flops=t.flops, flops_complete=t.flops_complete,
                          first_boundary=t.first_boundary)
        else:
            steps = self._cut(cut, notes, path)
        self._first_step_excess(steps, cut, run, notes)
        if self.calls:
            normal = self.fb_pushed - self.calls
            if normal > 0:
                moved = self.calls * self.forward_backward / normal  # one normal step's fwd + bwd
                steps.phases["compile"] -= moved
                steps.productive += moved
            else:
                notes.append(f"run {run}: no step besides the compiled call's to take its "
                             f"normal work from: compile holds the whole call")
        return steps

    def _cut(self, cut: int, notes: List[str], path: str) -> Steps:
        """The intervals again, in file order, each split at ``cut``."""
        t = self.totals
        steps = Steps(phases=dict(t.phases), flops_complete=t.flops_complete,
                      first_boundary=t.first_boundary)
        for i, (first, end) in enumerate(zip(self.starts, self.ends)):
            lost = lost_share(first, end, cut)
            if 0.0 < lost < 1.0:
                notes.append(f"{path}:{self.lines[i]}: steps {first}..{end - 1} straddle the "
                             f"resume point {cut}: split by steps ({lost:.3g} of the interval "
                             f"counted as lost progress)")
            step_s, data, flops = self.step_s[i], self.data[i], self.flops[i]
            steps.productive += (1.0 - lost) * (step_s - data)
            steps.data += (1.0 - lost) * data
            steps.lost += lost * step_s
            if flops == flops:
                steps.flops += (1.0 - lost) * flops
        return steps

    def _first_step_excess(self, steps: Steps, cut: Optional[int], run: int,
                           notes: List[str]) -> None:
        """Move the run's first step's excess over its median step from goodput
        to startup, or to compile when the run marked a compiled call: the
        median over the run's intervals of their mean step period, the first
        step left out of its interval. The step itself (and its FLOPs) stays."""
        first_s = self.first_s
        if first_s is None or (cut is not None and self.first_from >= cut):  # type: ignore[operator]
            return   # a log without the field, or the first step was lost progress (all of it)
        if not self.means:
            notes.append(f"run {run}: one step only, no normal step to compare its first "
                         f"with: all of it is goodput")
            return
        excess = min(max(0.0, first_s - statistics.median(self.means)), steps.productive)
        steps.productive -= excess
        if self.calls:
            steps.phases["compile"] += excess
        else:
            steps.startup += excess


def book_of(run: Run) -> IntervalBook:
    """The run's book: the one a streaming reader kept, else one booked from
    its intervals (:func:`._stream.read_log`)."""
    if run.book is not None:
        return run.book
    book = IntervalBook(_ranks(run))
    for iv in run.intervals:
        book.add(iv, iv.get("_line", 0))
    return book


class BookIntervals(Sink):
    """Books every run's intervals as they are read (:attr:`Run.book`)."""

    def on_run(self, run: Run) -> None:
        run.book = IntervalBook(_ranks(run))

    def on_interval(self, run: Run, ledger: Dict[str, Any], line: int) -> None:
        run.book.add(ledger, line)
