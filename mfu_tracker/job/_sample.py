"""A long run's metrics lines, downsampled as they stream in, keeping every
extreme and every change.

A month-long run logs a hundred thousand lines or more; a picture is a
thousand pixels wide. :class:`RecordSample` keeps a bounded number of a
run's lines, chosen so that what is drawn from them keeps the run's shape:

* the lines are cut into consecutive *buckets* of ``width`` lines; each
  bucket keeps its first and its last line, and for each followed key (the
  keys a reader draws) the line holding its lowest and the line holding its
  highest value (the first such line on a tie);
* it starts with ``width`` 1 -- every line kept -- and when the buckets
  reach ``buckets`` it merges them two by two (the first of the first, the
  last of the second, the lower low and the higher high) and doubles
  ``width``: memory stays bounded, the cost per line is constant, and a log
  of up to ``buckets`` lines is kept whole (its figures are exactly the
  full reading's);
* a spike -- one line far from its neighbours -- is its bucket's lowest or
  highest and survives every merge; a step change survives within one
  bucket: the buckets before it hold lines of the old level only, those
  after it of the new, and the bucket it falls in keeps a line of each (its
  highest and its lowest), so the drawn line turns within that bucket's
  width;
* whole lines are kept, never values recombined: a stacked bar drawn from a
  kept line adds up as its line did;
* besides, the first and the newest line of each set of keys
  (:class:`._check.Layout`) are always kept, so "the first line holding key
  k" (how a metric prefix is found) and "the newest line holding key k" (the
  advice's last window, the rank a loss is concentrated on) are the same as
  in the whole log.

The kept lines come back in file order (:meth:`RecordSample.records`).
:class:`KeepRuns` is the sink that keeps such a sample of each run a reader
draws (and those runs' kernel breakdowns).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ._check import Layout, getter
from ._records import Log, Run
from ._stream import Block, Sink

__all__ = ["BUCKETS", "KeepRuns", "RecordSample"]

#: Buckets before a merge: a run of up to this many lines is kept whole;
#: a longer one keeps between BUCKETS / 2 and BUCKETS buckets.
BUCKETS = 256

Record = Dict[str, Any]
_NUMBERS = frozenset((int, float))
Follows = Callable[[Layout], Tuple[str, ...]]
_Extreme = Tuple[Any, Record]


class _Bucket:
    """Consecutive lines: the first, the last, and each followed key's
    extremes (``low`` / ``high``: key -> (value, line))."""

    __slots__ = ("first", "last", "count", "low", "high")

    def __init__(self, record: Record):
        self.first = self.last = record
        self.count = 0
        self.low: Dict[str, _Extreme] = {}
        self.high: Dict[str, _Extreme] = {}

    def merged(self, later: "_Bucket") -> "_Bucket":
        """This bucket and the one after it, as one (the older line wins a tie)."""
        both = _Bucket(self.first)
        both.last, both.count = later.last, self.count + later.count
        both.low, both.high = dict(self.low), dict(self.high)
        for key, extreme in later.low.items():
            mine = both.low.get(key)
            if mine is None or extreme[0] < mine[0]:
                both.low[key] = extreme
        for key, extreme in later.high.items():
            mine = both.high.get(key)
            if mine is None or extreme[0] > mine[0]:
                both.high[key] = extreme
        return both

    def kept(self) -> List[Record]:
        return [self.first, self.last, *(r for _, r in self.low.values()),
                *(r for _, r in self.high.values())]

    def compare(self, key: str, values: Sequence[Any], lines: List[Record]) -> None:
        """Take the lowest and highest of ``values`` (of ``lines``, finite
        numbers) as the key's extremes where they beat them."""
        low, high = min(values), max(values)
        mine = self.low.get(key)
        if mine is None or low < mine[0]:
            self.low[key] = (low, lines[values.index(low)])
        mine = self.high.get(key)
        if mine is None or high > mine[0]:
            self.high[key] = (high, lines[values.index(high)])


def _numbers(values: Sequence[Any], lines: List[Record]) -> Tuple[List[Any], List[Record]]:
    """The values that are numbers (not a bool, not NaN), and their lines."""
    kept = [i for i, value in enumerate(values) if type(value) in _NUMBERS and value == value]
    return [values[i] for i in kept], [lines[i] for i in kept]


class RecordSample:
    """One run's lines, downsampled (module docstring). ``follows`` gives the
    keys of a layout whose extremes are kept (None: none); ``buckets`` 0
    keeps only the first and newest line of each layout."""

    def __init__(self, follows: Optional[Follows] = None, buckets: int = BUCKETS):
        self.follows = follows
        self.buckets = buckets
        self.width = 1
        self.count = 0
        self.closed: List[_Bucket] = []
        self.open: Optional[_Bucket] = None
        self.first_of: Dict[int, Record] = {}
        self.newest_of: Dict[int, Record] = {}

    def _plan(self, layout: Layout) -> Tuple[Tuple[str, ...], Any, int]:
        """The layout's followed keys (those checked, finite numbers in a
        checked line, first), their getter, and how many are checked."""
        plan = layout.memo.get(self.follows)    # type: ignore[call-overload]
        if plan is None:
            keys = self.follows(layout) if self.follows is not None else ()
            checked = tuple(k for k in keys if k in layout.judged)
            keys = checked + tuple(k for k in keys if k not in layout.judged)
            plan = (keys, getter(keys), len(checked))
            layout.memo[self.follows] = plan  # type: ignore[index]
        return plan

    def add(self, record: Record, layout: Layout) -> None:
        """One line, in file order."""
        self.add_block([record], layout)

    def add_block(self, records: List[Record], layout: Layout) -> None:
        """Lines of one layout in a row, in file order (a
        :class:`._stream.Block`'s): each bucket's share of them compared a
        column at a time (``min`` / ``max`` / ``index``: the first line on a
        tie), the Python work per bucket, the work per line in C."""
        self.count += len(records)
        if layout.id is not None:
            self.newest_of[layout.id] = records[-1]
            self.first_of.setdefault(layout.id, records[0])
        if not self.buckets:
            return
        keys, values, checked = self._plan(layout)
        columns = list(zip(*map(values, records))) if keys else []
        i, n = 0, len(records)
        while i < n:
            bucket = self.open
            if bucket is None or bucket.count == self.width:
                if bucket is not None:
                    self._close(bucket)
                bucket = self.open = _Bucket(records[i])
            j = min(n, i + self.width - bucket.count)
            bucket.count += j - i
            bucket.last = records[j - 1]
            lines = records if i == 0 and j == n else records[i:j]
            for k, (key, column) in enumerate(zip(keys, columns)):
                part = column if lines is records else column[i:j]
                if k >= checked:       # outside the metric table: maybe not numbers
                    part, mine = _numbers(part, lines)
                    if part:
                        bucket.compare(key, part, mine)
                else:
                    bucket.compare(key, part, lines)
            i = j

    def _close(self, bucket: _Bucket) -> None:
        self.closed.append(bucket)
        if len(self.closed) >= self.buckets:
            pairs = zip(self.closed[0::2], self.closed[1::2])
            self.closed = [a.merged(b) for a, b in pairs]
            self.width *= 2

    def records(self) -> List[Record]:
        """The kept lines, in file order (each once)."""
        kept: Dict[int, Record] = {}
        buckets = self.closed + ([self.open] if self.open is not None else [])
        for bucket in buckets:
            for record in bucket.kept():
                kept[id(record)] = record
        for pins in (self.first_of, self.newest_of):
            for record in pins.values():
                kept[id(record)] = record
        return sorted(kept.values(), key=lambda record: record["_line"])

    def describe(self, kept: int) -> Optional[str]:
        """What the sample is, in words (None: every line kept)."""
        if kept >= self.count:
            return None
        if not self.buckets:
            return (f"{kept:,} of {self.count:,} metrics lines kept (the first and newest of "
                    f"each set of keys)")
        return (f"{kept:,} of {self.count:,} metrics lines drawn: {len(self.closed) + 1:,} "
                f"buckets of {self.width:,} consecutive lines, each keeping its first and "
                f"last line and the lines holding each drawn key's lowest and highest value")


class KeepRuns(Sink):
    """Keeps the runs a reader draws: ``which`` is "last" (the last run
    that logged metrics), "all", or a run number (as text or int); each kept
    run's metrics lines as a :class:`RecordSample` (``follows``, ``buckets``)
    and its kernel breakdowns (``breakdowns``). At the end each kept run's
    :attr:`Run.metrics` holds the sample's lines and :attr:`Run.sampling`
    says what they are; the other runs keep none."""

    def __init__(self, which: Any = "last", follows: Optional[Follows] = None,
                 buckets: int = BUCKETS, breakdowns: bool = True):
        self.which = str(which)
        self.follows, self.buckets, self.breakdowns = follows, buckets, breakdowns
        self.samples: Dict[int, RecordSample] = {}
        self.profiled: Dict[int, List[Record]] = {}

    def _wanted(self, run: Run) -> bool:
        if self.which in ("last", "all"):
            return True
        return self.which.isdigit() and run.number == int(self.which)

    def _sample(self, run: Run) -> Optional[RecordSample]:
        """The run's sample (None: the run is not drawn)."""
        sample = self.samples.get(run.number)
        if sample is None:
            if not self._wanted(run):
                return None
            if self.which == "last":      # a newer run with metrics: the older are not drawn
                self.samples.clear()
                self.profiled = {n: b for n, b in self.profiled.items() if n == run.number}
            sample = self.samples[run.number] = RecordSample(self.follows, self.buckets)
        return sample

    def on_metrics(self, run: Run, record: Record, layout: Layout) -> None:
        sample = self._sample(run)
        if sample is not None:
            sample.add(record, layout)

    def on_block(self, run: Run, block: Block) -> None:
        sample = self._sample(run)
        if sample is not None:
            sample.add_block(block.records, block.layout)

    def on_breakdown(self, run: Run, record: Record) -> None:
        if self.breakdowns and self._wanted(run):
            self.profiled.setdefault(run.number, []).append(record)

    def finish(self, log: Log) -> None:
        for run in log.runs:
            sample = self.samples.get(run.number)
            if sample is not None:
                run.metrics = sample.records()
                run.sampling = sample.describe(len(run.metrics))
            run.breakdowns = self.profiled.get(run.number, [])
