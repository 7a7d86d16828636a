"""What the page shows, as one JSON document, from a log read once per line.

:class:`PageState` follows a log -- finished, or still being written: each
:meth:`PageState.snapshot` reads only the lines added since the previous one
(:class:`mfu_tracker.job._stream.LogReader`, a line still being written left
for the next read) into the readers the report uses: the drawn run's lines
downsampled keeping every extreme and the newest line of each set of keys
(:mod:`mfu_tracker.job._sample`), every run's ledger intervals booked
(:mod:`mfu_tracker.job._intervals`). Memory stays bounded for a month-long
log; the document is rebuilt only when the file grew.

The document: the log (lines read, skipped, invalid), the drawn run's record,
the head (:mod:`._headline`), the frameworks' range (:mod:`._conventions`),
the series, the waterfall, per-rank spread, the job ledger, the kernel
breakdown and the advice (:mod:`._sections`), the ladder and the memory
headroom (:mod:`._hardware`), progress against a budget (:mod:`._progress`).
"""
from __future__ import annotations

import os
import threading
import time
from typing import Any, Dict, Optional, Tuple

from ..._validate import check_int, check_optional_number
from ...job._check import Layout
from ...job._intervals import BookIntervals
from ...job._records import Log, LogError, Run
from ...job._sample import KeepRuns
from ...job._stream import LogReader, Sink
from ..report._load import drawn_keys
from ..report._model import TOKENS, ReportError, number
from ..report._plan import plan
from . import _hardware, _headline, _progress, _sections
from ._conventions import ConventionRange
from ._figure import Newest

__all__ = ["PageState", "page_keys"]

#: A snapshot re-reads the file at most this often, s (the page polls every 2 s).
MIN_READ_INTERVAL_S = 0.5


def page_keys(layout: Layout) -> Tuple[str, ...]:
    """The keys whose extremes a long run's sample keeps: the report's, and tokens/s."""
    extra = tuple(k for k in layout.keys if k == TOKENS or k.endswith("/" + TOKENS))
    return drawn_keys(layout) + tuple(k for k in extra if k not in drawn_keys(layout))


class NewestInterval(Sink):
    """Each run's newest metrics line and the wall seconds since the one
    before it (the run record for the first): the window of the hardware
    counters read at that line's metrics() call."""

    def __init__(self) -> None:
        self.newest: Dict[int, Tuple[int, float]] = {}
        self._previous: Dict[int, Optional[float]] = {}

    def on_run(self, run: Run) -> None:
        self._previous[run.number] = number(run.get("time"))

    def on_metrics(self, run: Run, record: Dict[str, Any], layout: Layout) -> None:
        when, before = number(record.get("time")), self._previous.get(run.number)
        if when is not None:
            if before is not None:
                self.newest[run.number] = (record["_line"], when - before)
            self._previous[run.number] = when


class PageState:
    """The page's document for the log ``log_path`` (module docstring); thread-safe.
    ``budget_tokens`` (>= 1 token) or ``budget_steps`` (>= 1 global step), one of
    them: what progress and the ETA are measured against."""

    def __init__(self, log_path: str, *, budget_tokens: Optional[float] = None,
                 budget_steps: Optional[int] = None):
        if not isinstance(log_path, (str, os.PathLike)):
            raise TypeError(f"log_path must be a str or os.PathLike, not "
                            f"{type(log_path).__name__}")
        if budget_tokens is not None and budget_steps is not None:
            raise ValueError("budget_tokens and budget_steps: give one budget, not both")
        self.path = os.fspath(log_path)
        self.budget_tokens = check_optional_number(budget_tokens, "budget_tokens", 1)
        self.budget_steps = None if budget_steps is None else \
            check_int(budget_steps, "budget_steps", 1)
        self._intervals = NewestInterval()
        self._reader = LogReader(self.path, [KeepRuns("last", follows=page_keys),
                                             BookIntervals(), self._intervals])
        self._lock = threading.Lock()
        self._ranges = ConventionRange()
        self._read_at = 0.0
        self._offset = -1
        self._document: Optional[Dict[str, Any]] = None

    def snapshot(self) -> Dict[str, Any]:
        """The document now: the lines added since the last read taken in first."""
        with self._lock:
            now = time.monotonic()
            if self._document is None or now - self._read_at >= MIN_READ_INTERVAL_S:
                self._read_at = now
                try:
                    log = self._reader.read(final=False)
                except (OSError, LogError) as error:
                    return {"log": {"path": self.path}, "error": str(error)}
                if self._reader.offset != self._offset or self._document is None:
                    self._offset = self._reader.offset
                    self._document = self._build(log)
            document = dict(self._document)
        document["served_at"] = time.time()
        return document

    def _build(self, log: Log) -> Dict[str, Any]:
        out: Dict[str, Any] = {"log": _log_facts(log), "budget": {
            "tokens": self.budget_tokens, "steps": self.budget_steps}}
        if not log.runs:
            out["waiting"] = "the log holds no record yet"
            return out
        newest_run = log.runs[-1]
        out["status"] = _status(newest_run)
        try:
            report = plan(log, None, "last")
        except ReportError as error:
            out["run"] = _headline.run_facts(newest_run)
            out["waiting"] = f"no metrics line to show yet ({error})"
            return out
        return {**out, **self._sections(report, newest_run)}

    def _sections(self, report: Any, newest_run: Run) -> Dict[str, Any]:
        run = report.runs[-1]
        records = [record for record, _ in report.points]
        newest = Newest(records, report.prefix)
        head = _headline.headline(newest, run, report.no_mfu)
        mfu = newest.value("mfu")
        out: Dict[str, Any] = {
            "run": _headline.run_facts(run), "prefix": report.prefix, "head": head,
            "peak": report.peak, "caveat": report.caveat,
            "conventions": self._ranges.state(run, newest, mfu),
            "series": _sections.series(report), "waterfall": _sections.waterfall(report),
            "ladder": _hardware.ladder(newest, run.get("dtype"),
                                       self._intervals.newest.get(run.number)),
            "memory": _hardware.memory(newest), "ranks": _sections.ranks(
                report, newest, run.get("ranks")),
            "ledger": _sections.ledger(report), "kernels": _sections.kernels(report),
            "advice": _sections.advice(report),
            "progress": _progress.progress(run, records, newest, self.budget_tokens,
                                           self.budget_steps),
            "missing": report.missing}
        if newest_run is not run:
            out["note"] = (f"run {newest_run.number} has started and logged no metrics yet; "
                           f"showing run {run.number}")
        return out


def _log_facts(log: Log) -> Dict[str, Any]:
    return {"path": log.path, "runs": len(log.runs),
            "lines": sum(r.logged for r in log.runs), "skipped": len(log.skipped),
            "cut": log.cut, "invalid": log.invalid[:20], "invalid_count": len(log.invalid)}


def _status(run: Run) -> Dict[str, Any]:
    """Whether the newest run is still going, and how long since its last record."""
    last = run.last_time
    return {"run": run.number, "ended": run.end is not None, "last_record_time": last,
            "state": "ended" if run.end is not None else "running (or stopped without its "
                     "run-end record)"}
