"""Reading a metrics log in one pass: the one scanner, and the readers
(accumulators) it feeds.

:func:`stream_log` reads the file line by line, checks each line (the
record format and the value rules of :mod:`._records`, compiled:
:mod:`._check`), groups the lines into runs, and hands each record to the
readers given, the :class:`Sink` s, as it goes: nothing is kept unless a
reader keeps it. What the scanner itself keeps is small -- each run's run
record, run end, peak checks, last time and count of metrics lines -- and
the lines it could not use: every invalid value named (``file:line``), every
unreadable line skipped and named, the last line cut short.

The commands build their reading from sinks: ``goodput`` the ledger's
running sums (:class:`._intervals.BookIntervals`); ``report`` those and a
downsampled series of the runs it draws (:mod:`._sample`); ``advise`` the
last window's evidence. A new reader (a live page, a summary) is a new sink
beside them, in the same pass. :func:`read_log` is the sink that keeps
every record (the :class:`._records.Log` of old, for the API and for small
logs).
"""
from __future__ import annotations

from json import loads
from math import isfinite
from typing import Any, Dict, List, Optional, Sequence

from ._check import Layout, Layouts, check_ledger, clean_metrics
from ._records import BREAKDOWN, LEDGER, PEAK_CHECK, RUN, RUN_END, Log, LogError, Run, _finite

__all__ = ["Sink", "read_log", "stream_log"]

_KINDS = (RUN, RUN_END, PEAK_CHECK, BREAKDOWN)


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

    def finish(self, log: Log) -> None:
        """The log is read (its runs, invalid values and skipped lines final)."""


def _overrides(sinks: Sequence[Sink], name: str) -> List[Any]:
    """The bound methods ``name`` of the sinks that define it (a no-op is not called)."""
    base = getattr(Sink, name)
    return [getattr(s, name) for s in sinks if getattr(type(s), name) is not base]


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

    def __init__(self, path: str, sinks: Sequence[Sink]):
        self.log = Log(path=path, runs=[])
        self.layouts = Layouts()
        self.on_run = _overrides(sinks, "on_run")
        self.on_metrics = _overrides(sinks, "on_metrics")
        self.on_interval = _overrides(sinks, "on_interval")
        self.on_breakdown = _overrides(sinks, "on_breakdown")

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
        when = record.get("time")
        if type(when) is float and isfinite(when):
            run.last_time = when
        else:
            when = _finite(when)
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


def stream_log(path: str, sinks: Sequence[Sink] = (), *, strict: bool = False) -> Log:
    """Read the JSONL log ``path`` once, feeding each record to ``sinks``
    (module docstring); returns the :class:`._records.Log` of its runs (their
    lists filled only by the sinks that fill them).

    A line that cannot be read -- not a JSON object, a metrics line without
    a numeric ``step``, an unknown record, a malformed ledger interval, bytes
    that are not UTF-8 -- is skipped and named in :attr:`Log.skipped`; the
    last line, when it lacks its newline and cannot be read, is a line cut
    short by a writer killed mid-write: skipped and named in :attr:`Log.cut`.
    ``strict``: either raises :class:`LogError` naming ``file:line`` instead.
    A file none of whose lines can be read raises too. Values that cannot be
    used are listed in :attr:`Log.invalid` and left out."""
    scan = _Scan(path, sinks)
    log = scan.log
    read, first = 0, None
    try:
        lines = open(path, "rb")
    except IsADirectoryError:
        raise LogError(f"{path}: is a directory") from None
    with lines:
        for number, raw in enumerate(lines, 1):
            try:
                try:
                    record = loads(raw.decode("utf-8"))
                except (ValueError, RecursionError):
                    if not raw.strip():
                        continue              # a blank line
                    raise _unreadable(path, number, raw) from None
                kind = _checked(record, path, number)
            except LogError as error:
                first = first or str(error)
                _skip(log, error, raw, number, strict)
                continue
            read += 1
            scan.add(record, kind, number)
    if not read and first is not None:
        raise LogError(f"{path}: no line of it can be read: not a JSONL metrics log ({first})")
    for sink in sinks:
        sink.finish(log)
    return log


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
