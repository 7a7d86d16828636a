"""Reading a metrics log in one pass: the one scanner, and the readers
(accumulators) it feeds.

:func:`stream_log` reads the file in order, checks each line (the record
format and the value rules of :mod:`._records`, compiled: :mod:`._check`),
groups the lines into runs, and hands each record to the readers given,
the :class:`Sink` s, as it goes: nothing is kept unless a reader keeps it.
It reads some 50 lines at a time: parsed together, cut into runs of lines
with the same keys, and a run of metrics lines that passes every check at
once -- by whole columns, in C loops -- goes to the readers as one
:class:`Block`; any line in doubt is read alone, as a line-by-line reader
would, so the outcome is the same either way. What the scanner itself
keeps is small -- each run's run record, run end, peak checks, last time
and count of metrics lines -- and the lines it could not use: every invalid
value named (``file:line``), every unreadable line skipped and named, the
last line cut short.

The commands build their reading from sinks: ``goodput`` the ledger's
running sums (:class:`._intervals.BookIntervals`); ``report`` those and a
downsampled series of the runs it draws (:mod:`._sample`); ``advise`` the
last window's evidence. A new reader (a live page, a summary) is a new sink
beside them, in the same pass; one that follows a growing log reads on
with a :class:`LogReader`. :func:`read_log` keeps every record (for the API
and for short logs).
"""
from __future__ import annotations

from itertools import repeat
from json import JSONDecoder, loads
from math import isfinite
from operator import itemgetter, setitem
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ._check import Layout, Layouts, check_ledger, clean_metrics, ledger_columns, valid_block
from ._records import BREAKDOWN, LEDGER, PEAK_CHECK, RUN, RUN_END, Log, LogError, Run, _finite

__all__ = ["Block", "LogReader", "Sink", "read_log", "stream_log"]

_KINDS = (RUN, RUN_END, PEAK_CHECK, BREAKDOWN)
#: Bytes of lines read at a time (some 50 lines of a tracker's log: a block that
#: stays in the cache).
BLOCK_BYTES = 1 << 16
_FLOATS = frozenset((float,))
_INTS = frozenset((int,))
_DICTS = frozenset((dict,))
_UNREAD = object()          # a line not parsed yet
_SCAN = JSONDecoder().scan_once             # json's scanner: (value, end) of a text at an index
_STEP, _TIME, _LEDGER = itemgetter("step"), itemgetter("time"), itemgetter(LEDGER)


class Block:
    """Consecutive metrics lines of one run and one layout, checked at once
    (the scanner's fast path): ``records`` (each with its ``_line``, in
    ``lines``), their ``layout``, and their ledger intervals as columns
    (:func:`._check.ledger_columns`: field -> values in line order; None when
    the lines carry none)."""

    __slots__ = ("records", "layout", "lines", "ledgers")

    def __init__(self, records: List[Dict[str, Any]], layout: Layout, lines: range,
                 ledgers: Optional[Dict[str, Tuple[Any, ...]]]):
        self.records, self.layout, self.lines, self.ledgers = records, layout, lines, ledgers


class Sink:
    """A reader fed by :func:`stream_log`, one record at a time, in file
    order. Override what it reads; each method here does nothing.

    ``run`` is the run the record belongs to (:class:`._records.Run`, its
    run record and counts filled as the scan goes). Records are the parsed
    lines, checked: a metrics record without its invalid values, its
    ``_line`` set (so is a breakdown's); a sink may keep them (the scanner
    does not) but must not change them."""

    def on_run(self, run: Run) -> None:
        """A run begins: its run record read (or the log's first line, when
        it is not one: a log written before run records)."""

    def on_metrics(self, run: Run, record: Dict[str, Any], layout: Layout) -> None:
        """A metrics line; ``layout`` is its set of keys, compiled
        (:class:`._check.Layout`: ``layout.memo`` holds what a sink works out
        once per set of keys)."""

    def on_interval(self, run: Run, ledger: Dict[str, Any], line: int) -> None:
        """A ledger interval (of a metrics line or a run end), checked."""

    def on_breakdown(self, run: Run, record: Dict[str, Any]) -> None:
        """A profiled step's kernel breakdown record."""

    def on_block(self, run: Run, block: Block) -> None:
        """Consecutive metrics lines of one layout (:class:`Block`), in place
        of their :meth:`on_interval` and :meth:`on_metrics` calls. Here: those
        calls, line by line; a sink overrides it to read a block at once."""
        layout = block.layout
        for record in block.records:
            if block.ledgers is not None:
                self.on_interval(run, record[LEDGER], record["_line"])
            self.on_metrics(run, record, layout)

    def finish(self, log: Log) -> None:
        """The log is read, up to its end for now (its runs, invalid values
        and skipped lines as they stand); a :class:`LogReader` that reads on
        calls it again after each read."""


def _overrides(sinks: Sequence[Sink], *names: str) -> List[Sink]:
    """The sinks that define any of the methods ``names`` (a no-op is not called)."""
    return [s for s in sinks if any(getattr(type(s), n) is not getattr(Sink, n) for n in names)]


def _unreadable(path: str, number: int, raw: bytes) -> LogError:
    """Why a line that json could not read is not a record."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        return LogError(f"{path}:{number}: not a UTF-8 text file ({error.reason}); give a "
                        f"JSONL metrics log")
    try:
        loads(text)
    except (ValueError, RecursionError) as error:
        return LogError(f"{path}:{number}: not a JSON line ({error})")
    return LogError(f"{path}:{number}: not a JSON line")


def _checked(record: Any, path: str, number: int) -> Optional[str]:
    """A parsed line's kind (None: a metrics line, its step made an int);
    LogError naming ``file:line`` when it is not a record."""
    if type(record) is not dict:
        raise LogError(f"{path}:{number}: not a JSON object")
    kind = record.get("record")
    if kind is None:
        step = record.get("step")
        if type(step) is not int:
            if type(step) is not float or not isfinite(step):
                raise LogError(f"{path}:{number}: no numeric 'step' field")
            record["step"] = int(step)
    elif kind not in _KINDS:
        raise LogError(f"{path}:{number}: unknown record {kind!r}")
    if LEDGER in record:
        check_ledger(record[LEDGER], f"{path}:{number}")
    return kind


class _Scan:
    """One pass: the runs so far, the sinks' methods, the log's notes."""

    def __init__(self, path: str, sinks: Sequence[Sink], strict: bool):
        self.log = Log(path=path, runs=[])
        self.strict = strict
        self.read = 0                         # lines read as records
        self.first_error: Optional[str] = None
        self.layouts = Layouts()
        self.on_run = [s.on_run for s in _overrides(sinks, "on_run")]
        self.on_metrics = [s.on_metrics for s in _overrides(sinks, "on_metrics")]
        self.on_interval = [s.on_interval for s in _overrides(sinks, "on_interval")]
        self.on_breakdown = [s.on_breakdown for s in _overrides(sinks, "on_breakdown")]
        self.on_block = [s.on_block for s in _overrides(sinks, "on_block", "on_metrics",
                                                          "on_interval")]

    # ---- line by line ------------------------------------------------------------------

    def line(self, raw: bytes, number: int, record: Any = _UNREAD) -> None:
        """One line (``record``: already parsed): checked, then handed on, or
        skipped and named."""
        path = self.log.path
        try:
            if record is _UNREAD:
                try:
                    record = loads(raw.decode("utf-8"))
                except (ValueError, RecursionError):
                    if not raw.strip():
                        return                # a blank line
                    raise _unreadable(path, number, raw) from None
            kind = _checked(record, path, number)
        except LogError as error:
            self.first_error = self.first_error or str(error)
            _skip(self.log, error, raw, number, self.strict)
            return
        self.read += 1
        self.add(record, kind, number)

    def add(self, record: Dict[str, Any], kind: Optional[str], number: int) -> None:
        """Hand one checked record to its run and the sinks."""
        runs = self.log.runs
        if kind == RUN or not runs:
            run = Run(number=len(runs) + 1, record=record if kind == RUN else None, line=number)
            runs.append(run)
            for call in self.on_run:
                call(run)
            if kind == RUN:
                run.last_time = _finite(record.get("time"))
                return
        run = runs[-1]
        when = _finite(record.get("time"))
        if when is not None:
            run.last_time = when
        if kind == PEAK_CHECK:
            run.peak_checks.append(record)
            return
        if kind == BREAKDOWN:
            record["_line"] = number
            for call in self.on_breakdown:
                call(run, record)
            return
        ledger = record.get(LEDGER)
        if ledger is not None:
            for call in self.on_interval:
                call(run, ledger, number)
        if kind == RUN_END:
            run.end = record
            return
        layout = clean_metrics(record, self.layouts, self.log.path, number, self.log.invalid)
        record["_line"] = number
        run.metrics_lines += 1
        for call in self.on_metrics:
            call(run, record, layout)

    # ---- a block at a time ------------------------------------------------------------------

    def lines(self, raws: List[bytes], first: int) -> None:
        """Lines ``first``...: parsed at once (:func:`_parse`), cut into runs
        of lines with the same keys; a run of metrics lines that passes every
        check at once goes as one :class:`Block`, anything else line by line."""
        records = _parse(raws)
        if records is None:          # a line to skip, name or look at twice: line by line
            for i, raw in enumerate(raws):
                self.line(raw, first + i)
            return
        keys = list(map(tuple, records))
        i, n = 0, len(records)
        while i < n:
            these = keys[i]
            j = n if i == 0 and keys.count(these) == n else i + 1   # usually: one run
            while j < n and keys[j] == these:
                j += 1
            if not (self.log.runs and "record" not in these and "step" in these
                    and self.block(records[i:j], first + i)):
                for k in range(i, j):
                    self.line(raws[k], first + k, records[k])
            i = j

    def block(self, records: List[Dict[str, Any]], first: int) -> bool:
        """Metrics lines with the same keys, taken at once when every check
        passes (:mod:`._check`'s blocks); False: nothing was taken."""
        layout = self.layouts.of(records[0])
        if not _INTS.issuperset(map(type, map(_STEP, records))) or \
                not valid_block(records, layout):
            return False
        ledgers = None
        if LEDGER in layout.keys:
            ledgers = ledger_columns(list(map(_LEDGER, records)))
            if ledgers is None:
                return False
        run = self.log.runs[-1]
        if "time" in layout.keys:
            _last_time(run, records)
        lines = range(first, first + len(records))
        list(map(setitem, records, repeat("_line"), lines))
        run.metrics_lines += len(records)
        self.read += len(records)
        block = Block(records, layout, lines, ledgers)
        for call in self.on_block:
            call(run, block)
        return True


def _parse(raws: List[bytes]) -> Optional[List[Dict[str, Any]]]:
    """Whole lines, each one JSON object then its newline, parsed at once: the
    block as one JSON array (``[line,line,...]``) by json's own scanner (what
    ``json.loads`` runs, without its per-call checks). One scan for the block
    shares the keys' strings across its lines (the scanner's memo) and costs
    less than one scan per line. None when any line is not
    so (the block is then read line by line, by ``json.loads``, and a bad line
    named).

    Why the array's items are the lines: every line starts with ``{`` and
    ends with ``}`` and its newline, so a comma put between two lines cannot
    fall inside a value (inside an object it would have to be followed by a
    key, not ``{``; JSON strings hold no raw newline), each item lies within
    one line, and n items of n non-empty lines are one per line."""
    if not all(map(bytes.startswith, raws, repeat(b"{"))) or \
            not all(map(bytes.endswith, raws, repeat(b"}\n"))):
        return None
    try:
        text = b"".join((b"[", b",".join(raws), b"]")).decode()
        records, end = _SCAN(text, 0)
    except (ValueError, RecursionError, StopIteration):
        return None
    if end != len(text) or type(records) is not list or len(records) != len(raws) or \
            not _DICTS.issuperset(map(type, records)):
        return None
    return records


def _last_time(run: Run, records: List[Dict[str, Any]]) -> None:
    """The run's last time: the block's last finite one."""
    times = list(map(_TIME, records))
    if _FLOATS.issuperset(map(type, times)) and all(map(isfinite, times)):
        run.last_time = times[-1]
        return
    for when in times:
        when = _finite(when)
        if when is not None:
            run.last_time = when


class LogReader:
    """A log read in one pass that can go on: :meth:`read` reads what the
    file holds past the previous read and feeds it to the same sinks, so a
    page that follows a running job (a log still growing) reads each line
    once. :func:`stream_log` is one final read."""

    def __init__(self, path: str, sinks: Sequence[Sink] = (), *, strict: bool = False):
        self.path = path
        self.sinks = list(sinks)
        self.scan = _Scan(path, self.sinks, strict)
        self.offset = 0              # bytes read so far (whole lines)
        self.number = 1              # the next line's number

    def read(self, final: bool = True) -> Log:
        """The lines added since the previous read, fed to the sinks; then
        each sink's :meth:`Sink.finish` (a snapshot: called again at each
        read). ``final=False``: a last line without its newline is a line
        still being written -- left for the next read, not named as cut."""
        try:
            lines = open(self.path, "rb")
        except IsADirectoryError:
            raise LogError(f"{self.path}: is a directory") from None
        with lines:
            lines.seek(self.offset)
            while True:
                raws = lines.readlines(BLOCK_BYTES)
                if not raws:
                    break
                if not final and not raws[-1].endswith(b"\n"):
                    raws.pop()           # being written: the next read takes it whole
                    if not raws:
                        break
                self.scan.lines(raws, self.number)
                self.number += len(raws)
                self.offset += sum(map(len, raws))
        scan = self.scan
        if final and not scan.read and scan.first_error is not None:
            raise LogError(f"{self.path}: no line of it can be read: not a JSONL metrics log "
                           f"({scan.first_error})")
        for sink in self.sinks:
            sink.finish(scan.log)
        return scan.log


def stream_log(path: str, sinks: Sequence[Sink] = (), *, strict: bool = False) -> Log:
    """Read the JSONL log ``path`` once, feeding each record to ``sinks``
    (module docstring); returns the :class:`._records.Log` of its runs (their
    lists filled only by the sinks that fill them). A log that goes on
    growing: :class:`LogReader`.

    A line that cannot be read -- not a JSON object, a metrics line without
    a numeric ``step``, an unknown record, a malformed ledger interval, bytes
    that are not UTF-8 -- is skipped and named in :attr:`Log.skipped`; the
    last line, when it lacks its newline and cannot be read, is a line cut
    short by a writer killed mid-write: skipped and named in :attr:`Log.cut`.
    ``strict``: either raises :class:`LogError` naming ``file:line`` instead.
    A file none of whose lines can be read raises too. Values that cannot be
    used are listed in :attr:`Log.invalid` and left out."""
    return LogReader(path, sinks, strict=strict).read()


def _skip(log: Log, error: LogError, raw: bytes, number: int, strict: bool) -> None:
    """Name a line that cannot be read (``strict``: refuse the log)."""
    if strict:
        raise LogError(f"{error} (--strict: a log with a line that cannot be read is "
                       f"refused)") from None
    if raw.endswith(b"\n"):
        log.skipped.append(str(error))
    else:   # the file's last line: nothing was written after it
        log.cut = f"{log.path}:{number}: the last line is cut short (its writer was killed " \
                  f"mid-line?): skipped"


class KeepAll(Sink):
    """Keeps every record in its run's lists (:func:`read_log`)."""

    def on_metrics(self, run: Run, record: Dict[str, Any], layout: Layout) -> None:
        run.metrics.append(record)

    def on_interval(self, run: Run, ledger: Dict[str, Any], line: int) -> None:
        run.intervals.append({**ledger, "_line": line})

    def on_breakdown(self, run: Run, record: Dict[str, Any]) -> None:
        run.breakdowns.append(record)


def read_log(path: str, *, strict: bool = False) -> Log:
    """The runs of the JSONL log ``path``, every record kept (the module
    docstring of :mod:`._records`; :func:`stream_log` for the rules). A long
    log is better read by :func:`stream_log` with the sinks a reader needs:
    this holds the whole log in memory."""
    return stream_log(path, [KeepAll()], strict=strict)
