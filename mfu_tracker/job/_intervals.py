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
from functools import partial, reduce
from itertools import repeat
from math import isfinite
from operator import add, gt, lt, methodcaller, sub, truediv
from typing import Any, Dict, List, Optional, Tuple

from ._records import LEDGER, LogError, Run
from ._stream import Block, Sink

__all__ = ["BookIntervals", "IntervalBook", "Steps", "book_of", "lost_share"]

_NAN = float("nan")
_NO_PHASES: Dict[str, Any] = {}
#: The badput phases the ledger adds up (in its order).
_BADPUT = frozenset(("checkpoint", "eval", "compile"))
_FLOATS = frozenset((float,))
_INTS = frozenset((int,))
_NO_DATA = (0.0,)
_DATA, _FORWARD, _BACKWARD = (methodcaller("get", name, 0.0)
                              for name in ("data", "forward", "backward"))


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


#: Below this many values the median is taken by sorting them (statistics.median).
SORT_BELOW = 1 << 16


def median(values: array) -> float:
    """``statistics.median(values)``, the same number, without a list of
    every value: past :data:`SORT_BELOW` values (a long run's mean steps) the
    middle one(s) are found Floyd-Rivest style -- a sorted sample of 4,096
    values gives two bounds the middle lies between (with near certainty);
    C loops count the values below the lower bound and equal to each bound,
    and collect the few strictly between, which are sorted. When the middle
    is not between them, the values are sorted after all. (Sorting 10^6
    values would hold 10^6 Python floats, 32 MB, for a moment.)"""
    count = len(values)
    if count < SORT_BELOW:
        return statistics.median(values)
    upper = count // 2
    first = upper if count % 2 else upper - 1           # the middle: ranks first..upper
    sample = sorted(values[::count // 4096])
    spread = 3 * math.isqrt(len(sample)) + 1
    at = [rank * len(sample) // count for rank in (first, upper)]
    low = sample[max(0, at[0] - spread)]
    high = sample[min(len(sample) - 1, at[1] + spread)]
    # the values from low to high, in order: low (n_low times), inner, high (n_high times)
    below, n_low = sum(map(lt, values, repeat(low))), values.count(low)
    n_high = values.count(high) if high != low else 0
    inner = sorted(filter(partial(gt, high), filter(partial(lt, low), values)))
    runs = ((n_low, [low] * min(n_low, 1)), (len(inner), inner), (n_high, [high] * min(n_high, 1)))
    middle = [_ranked(rank - below, runs) for rank in (first, upper)]
    if None in middle:           # the middle is not between the bounds
        return statistics.median(values)
    return middle[1] if count % 2 else (middle[0] + middle[1]) / 2  # type: ignore[operator]


def _ranked(rank: int, runs: Any) -> Optional[float]:
    """The value of ``rank`` (0: the first) in consecutive runs of values,
    each (its length, its values: one when they are all equal); None when
    outside them."""
    if rank < 0:
        return None
    for length, held in runs:
        if rank < length:
            return held[rank] if len(held) == length else held[0]
        rank -= length
    return None


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
        # steps run before the run's clock started: (from_step, steps, FLOPs, line) each
        self.untimed: List[Tuple[int, int, Optional[float], int]] = []

    def add(self, iv: Dict[str, Any], line: int) -> None:
        """Book one checked interval (:func:`._check.check_ledger`). Written
        out, without helper calls on the usual path: it runs once per line."""
        first, end = iv["from_step"], iv["to_step"]
        untimed = iv.get("untimed_steps")
        if untimed:             # booked by steps(); the interval's timed steps follow them
            self.untimed.append((first, untimed, number(iv.get("untimed_flops")), line))
            first += untimed
        phases = iv.get("phase_s") or _NO_PHASES
        data = phases.get("data")
        data = 0.0 if data is None else float(data)
        step_s = float(iv["step_s"])
        totals = self.totals
        if not _BADPUT.isdisjoint(phases):
            for name in totals.phases:
                totals.phases[name] += float(phases.get(name, 0.0))
        dropped = iv.get("dropped")
        pushed = end - first - (int(dropped) if dropped else 0)
        flops = iv.get("model_flops")
        if type(flops) is not float or flops - flops != 0.0:
            flops = number(flops)
        if flops is None or iv.get("flops_steps") != pushed or self._short_of_ranks(iv):
            totals.flops_complete = totals.flops_complete and pushed == 0
            flops = _NAN
        else:
            totals.flops += flops
        if totals.first_boundary is None:
            totals.first_boundary = number(iv.get("first_boundary"))
        totals.productive += step_s - data
        totals.data += data
        forward, backward = phases.get("forward"), phases.get("backward")
        fb = (0.0 if forward is None else float(forward)) + \
            (0.0 if backward is None else float(backward))
        if fb > 0:          # steps whose forward / backward were marked
            self.fb_pushed += pushed
            self.forward_backward += fb
        calls = iv.get("compile_calls")
        if calls:
            self.calls += int(calls)
        if self.first_s is not None and pushed > 0:
            self.means.append(step_s / pushed)
        elif self.first_from is None:
            self._first(iv, first, pushed, step_s)
        self.starts.append(first)
        self.ends.append(end)
        self.lines.append(line)
        self.step_s.append(step_s)
        self.data.append(data)
        self.flops.append(flops)
        if self.max_end is None or end > self.max_end:
            self.max_end = end

    def add_columns(self, columns: Dict[str, Tuple[Any, ...]], lines: range) -> bool:
        """Book a block's intervals at once (:func:`._check.ledger_columns`)
        when they are the usual kind -- no dropped step, no badput phase, the
        run's first step already seen, every interval's FLOPs known for all
        of its steps and ranks or none's -- with the same additions, in the
        same order, as :meth:`add`; False (nothing booked) otherwise."""
        starts, ends, step_s = columns["from_step"], columns["to_step"], columns["step_s"]
        phases = columns.get("phase_s")
        pushed = tuple(map(sub, ends, starts))
        if self.first_from is None or any(columns.get("dropped") or ()) or min(pushed) <= 0 or \
                (phases is not None and not all(map(_BADPUT.isdisjoint, phases))):
            return False
        flops = self._block_flops(columns, pushed)
        if flops is False:
            return False
        data = _NO_DATA * len(starts) if phases is None else tuple(map(_DATA, phases))
        fb = None if phases is None else tuple(map(add, map(_FORWARD, phases),
                                                   map(_BACKWARD, phases)))
        if fb is not None and not (min(fb) > 0 or max(fb) <= 0):
            return False                 # some steps marked forward / backward, some not
        totals = self.totals
        if totals.first_boundary is None:
            totals.first_boundary = next(
                (v for v in map(number, columns.get("first_boundary", ())) if v is not None), None)
        totals.productive = reduce(add, map(sub, step_s, data), totals.productive)
        totals.data = reduce(add, data, totals.data)
        if flops is None:
            totals.flops_complete = False
            self.flops.extend(repeat(_NAN, len(starts)))
        else:
            totals.flops = reduce(add, flops, totals.flops)
            self.flops.extend(flops)
        if fb is not None and fb[0] > 0:
            self.fb_pushed += sum(pushed)
            self.forward_backward = reduce(add, fb, self.forward_backward)
        self.calls += sum(columns.get("compile_calls") or ())
        if self.first_s is not None:
            self.means.extend(map(truediv, step_s, pushed))
        self.starts.extend(starts)
        self.ends.extend(ends)
        self.lines.extend(lines)
        self.step_s.extend(step_s)
        self.data.extend(data)
        self.max_end = max(self.max_end, max(ends))  # type: ignore[type-var]
        return True

    def _block_flops(self, columns: Dict[str, Tuple[Any, ...]],
                     pushed: Tuple[int, ...]) -> Any:
        """The block's FLOPs when every interval's are known for all its steps
        and the run's ranks; None when no interval's are (each one unknown);
        False when it is not that simple (interval by interval)."""
        flops = columns.get("model_flops")
        if flops is None or flops.count(None) == len(flops):
            return None
        if not (_FLOATS.issuperset(map(type, flops)) and all(map(isfinite, flops))) or \
                columns.get("flops_steps") != pushed:
            return False
        ranks = columns.get("flops_ranks")
        if ranks is None:
            return flops if self.ranks <= 1 else False
        if not _INTS.issuperset(map(type, ranks)) or \
                min(ranks) < (self.ranks if self.ranks > 1 else 0):
            return False
        return flops

    def _short_of_ranks(self, iv: Dict[str, Any]) -> bool:
        """The interval's FLOPs do not cover every rank of the run."""
        try:
            return (iv.get("flops_ranks") or 1) < self.ranks
        except TypeError:           # not a number: not known to cover them
            return True

    def _first(self, iv: Dict[str, Any], first: int, pushed: int, step_s: float) -> None:
        """The run's first interval with a step: its first step's period, and
        the interval's mean step without it (a first step but no field:
        no excess to measure, and no means kept)."""
        if pushed <= 0:
            return
        self.first_from = first
        self.first_s = number(iv.get("first_step_s"))
        if self.first_s is not None and pushed > 1:
            self.means.append((step_s - self.first_s) / (pushed - 1))

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
        self._book_untimed(steps, cut, notes, path)
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

    def _book_untimed(self, steps: Steps, cut: Optional[int], notes: List[str],
                      path: str) -> None:
        """Book the steps run before the clock started (``untimed_steps``):
        their FLOPs when kept (not re-done by a later run) and known for every
        rank; their time is in the run's startup, unmeasured. A note names
        them and says which way they went."""
        for first, untimed, flops, line in self.untimed:
            kept = untimed - round(untimed * lost_share(first, first + untimed, cut))
            its = "its" if untimed == 1 else "their"
            if not kept:
                fate = "re-done by a later run: lost progress, not counted"
            elif flops is None:
                fate = f"{its} model FLOPs are unknown"
                steps.flops_complete = False
            elif self.ranks > 1:
                fate = f"left out of job_mfu: {its} model FLOPs are the logging rank's only"
            else:
                fate = f"{its} model FLOPs count in job_mfu"
                steps.flops += flops * kept / untimed
            names = f"step {first}" if untimed == 1 else f"steps {first}..{first + untimed - 1}"
            notes.append(f"{path}:{line}: {names} ran before the run's clock started (the first "
                         f"step() came after the forward and backward): not timed, {its} time "
                         f"is in startup; {fate}")

    def _first_step_excess(self, steps: Steps, cut: Optional[int], run: int,
                           notes: List[str]) -> None:
        """Move the run's first step's excess over its median step from goodput
        to startup, or to compile when the run marked a compiled call: the
        median over the run's intervals of their mean step period, the first
        step left out of its interval. The step itself (and its FLOPs) stays."""
        first_s, first = self.first_s, self.first_from
        if first_s is None or first is None or (cut is not None and first >= cut):
            return   # a log without the field, or the first step was lost progress (all of it)
        if not self.means:
            notes.append(f"run {run}: one step only, no normal step to compare its first "
                         f"with: all of it is goodput")
            return
        excess = min(max(0.0, first_s - median(self.means)), steps.productive)
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
    if not run.intervals and len(run.metrics) < run.metrics_lines:
        # a streaming reader that kept no intervals: its steps would read as none
        raise LogError(f"run {run.number}: its ledger intervals were not kept (read the log "
                       f"with read_log(), or stream_log() with a BookIntervals() sink)")
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

    def on_block(self, run: Run, block: Block) -> None:
        if block.ledgers is None or run.book.add_columns(block.ledgers, block.lines):
            return
        for record, line in zip(block.records, block.lines):
            run.book.add(record[LEDGER], line)
