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

from operator import eq
from typing import Any, Callable, Dict, List, Optional, Tuple

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
    """Consecutive lines: the first, the last, each followed key's extremes
    (``low`` / ``high``: key -> (value, line)). The lines of one layout in a
    row are compared in lists aligned with its keys (``lows`` ...), folded
    into ``low`` / ``high`` when the layout changes (:meth:`fold`)."""

    __slots__ = ("first", "last", "count", "low", "high", "layout", "keys", "lows", "highs",
                 "low_lines", "high_lines")

    def __init__(self, record: Record):
        self.first = self.last = record
        self.count = 0
        self.low: Dict[str, _Extreme] = {}
        self.high: Dict[str, _Extreme] = {}
        self.layout: Optional[Layout] = None
        self.keys: Tuple[str, ...] = ()
        self.lows: List[Any] = []
        self.highs: List[Any] = []
        self.low_lines: List[Record] = []
        self.high_lines: List[Record] = []

    def follow(self, record: Record, layout: Layout, keys: Tuple[str, ...],
               values: Tuple[Any, ...]) -> None:
        """Compare the line's followed values (finite numbers) with the extremes."""
        if self.layout is not layout:
            self.fold()
            self.layout, self.keys = layout, keys
            self.lows, self.highs = list(values), list(values)
            self.low_lines, self.high_lines = [record] * len(keys), [record] * len(keys)
            return
        lows, highs = self.lows, self.highs
        i = 0
        for value in values:
            if value < lows[i]:
                lows[i] = value
                self.low_lines[i] = record
            elif value > highs[i]:
                highs[i] = value
                self.high_lines[i] = record
            i += 1

    def loose(self, record: Record, key: str, value: Any) -> None:
        """A followed key whose value is not checked (outside the metric table)."""
        kind = type(value)
        if (kind is not float and kind is not int) or value != value:
            return                  # not a number (a bool, a string, NaN): nothing to compare
        _lower(self.low, key, value, record)
        _higher(self.high, key, value, record)

    def fold(self) -> None:
        """The aligned lists into ``low`` / ``high`` (the older line wins a tie)."""
        if not self.keys:
            return
        for key, value, record in zip(self.keys, self.lows, self.low_lines):
            _lower(self.low, key, value, record)
        for key, value, record in zip(self.keys, self.highs, self.high_lines):
            _higher(self.high, key, value, record)
        self.layout, self.keys = None, ()

    def merged(self, later: "_Bucket") -> "_Bucket":
        """This bucket and the one after it, as one."""
        self.fold()
        later.fold()
        both = _Bucket(self.first)
        both.last, both.count = later.last, self.count + later.count
        both.low, both.high = dict(self.low), dict(self.high)
        for key, (value, record) in later.low.items():
            _lower(both.low, key, value, record)
        for key, (value, record) in later.high.items():
            _higher(both.high, key, value, record)
        return both

    def kept(self) -> List[Record]:
        self.fold()
        return [self.first, self.last, *(r for _, r in self.low.values()),
                *(r for _, r in self.high.values())]


def _lower(low: Dict[str, _Extreme], key: str, value: Any, record: Record) -> None:
    mine = low.get(key)
    if mine is None or value < mine[0]:
        low[key] = (value, record)


def _higher(high: Dict[str, _Extreme], key: str, value: Any, record: Record) -> None:
    mine = high.get(key)
    if mine is None or value > mine[0]:
        high[key] = (value, record)


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

    def _plan(self, layout: Layout) -> Tuple[Tuple[str, ...], Any, Tuple[str, ...]]:
        """The layout's followed keys: those checked (finite numbers, compared
        in a row), their getter, and the others (compared one by one)."""
        plan = layout.memo.get(self.follows)    # type: ignore[call-overload]
        if plan is None:
            keys = self.follows(layout) if self.follows is not None else ()
            checked = tuple(k for k in keys if k in layout.judged)
            plan = (checked, getter(checked), tuple(k for k in keys if k not in layout.judged))
            layout.memo[self.follows] = plan  # type: ignore[index]
        return plan

    def add(self, record: Record, layout: Layout) -> None:
        """One line, in file order."""
        self.count += 1
        ident = layout.id
        if ident is not None:
            self.newest_of[ident] = record
            if ident not in self.first_of:
                self.first_of[ident] = record
        if not self.buckets:
            return
        bucket = self.open
        if bucket is None or bucket.count == self.width:
            if bucket is not None:
                self._close(bucket)
            bucket = self.open = _Bucket(record)
        bucket.count += 1
        bucket.last = record
        checked, values, loose = self._plan(layout)
        if values is not None:
            bucket.follow(record, layout, checked, values(record))
        for key in loose:
            bucket.loose(record, key, record[key])

    def add_block(self, records: List[Record], layout: Layout) -> None:
        """Lines of one layout in a row (:class:`._stream.Block`), as
        :meth:`add` would take them one by one: each bucket's share of them
        compared a column at a time (``min`` / ``max`` / ``index``: the first
        line on a tie), the Python work per bucket, the work per line in C."""
        checked, _, loose = self._plan(layout)
        keys = checked + loose
        columns = list(zip(*map(getter(keys), records))) if keys else []
        if any(not (_NUMBERS.issuperset(map(type, c)) and all(map(eq, c, c)))
               for c in columns[len(checked):]):     # a value outside the table: line by line
            for record in records:
                self.add(record, layout)
            return
        self.count += len(records)
        if layout.id is not None:
            self.newest_of[layout.id] = records[-1]
            self.first_of.setdefault(layout.id, records[0])
        if not self.buckets:
            return
        pairs = list(zip(keys, columns))
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
            bucket.fold()
            lows, highs = bucket.low, bucket.high
            whole = i == 0 and j == n
            for key, column in pairs:
                part = column if whole else column[i:j]
                low, high = min(part), max(part)
                mine = lows.get(key)
                if mine is None or low < mine[0]:
                    lows[key] = (low, records[i + part.index(low)])
                mine = highs.get(key)
                if mine is None or high > mine[0]:
                    highs[key] = (high, records[i + part.index(high)])
            i = j

    def _close(self, bucket: _Bucket) -> None:
        bucket.fold()
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
