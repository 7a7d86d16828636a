"""The streamed readers against the reading path they replaced, on one log.

:func:`differences` reads a log both ways and compares what each command
makes of it: ``read_log`` (every record, every note), ``goodput`` (its text
and its ``--json`` document, for every job of the file), ``advise`` (its
data, for ``--run`` last, all and each run) and ``report`` (every number
drawn, the summary and the advice lines, for the same choices; the plan,
without drawing). The old path is :mod:`_reader_before` (a copy of the code
as it was); the new one is what the commands run. Errors count as output:
both readings must refuse a log with the same message. A log the old path
could not read at all (it crashed) is not compared.

Used by ``test_stream_readers.py`` on logs it builds, and at the end of every
pytest session on every ``*.jsonl`` file the session's tests wrote
(``conftest.py``).
"""
from __future__ import annotations

import json
from typing import Any, Callable, Dict, List

import _reader_before as before

from mfu_tracker.cli._advise import advice_data, lines_for_report
from mfu_tracker.cli._goodput import figures_json, read_goodput, text
from mfu_tracker.cli.report._load import load_streamed
from mfu_tracker.cli.report._model import ReportError
from mfu_tracker.cli.report._plan import plan
from mfu_tracker.cli.report._text import numbers_text, summary_text
from mfu_tracker.job import LogError, job_ledger, jobs, read_log


def _outcome(make: Callable[[], Any]) -> Any:
    """What ``make`` returns, or the error it raises (type and message)."""
    try:
        return make()
    except (LogError, ReportError, ValueError, LookupError) as error:
        return f"{type(error).__name__}: {error}"


def _read(log: Any) -> Dict[str, Any]:
    """Everything a read log holds, as plain data."""
    return {"invalid": log.invalid, "skipped": log.skipped, "cut": log.cut,
            "runs": [{"number": r.number, "record": r.record, "line": r.line,
                      "metrics": r.metrics, "intervals": r.intervals,
                      "breakdowns": r.breakdowns, "peak_checks": r.peak_checks, "end": r.end,
                      "last_time": r.last_time, "logged": r.logged} for r in log.runs]}


def _goodput(log: Any, ledger: Callable[[Any, int], Any], number: int) -> Any:
    chosen = ledger(log, number)
    return [text(log, chosen), json.dumps(figures_json(log, chosen), sort_keys=True)]


def _report(log: Any, which: str) -> Any:
    report = plan(log, None, which)
    return [numbers_text(report), summary_text(report), lines_for_report(log, which, None)]


def _choices(log: Any) -> List[str]:
    return ["last", "all"] + [str(run.number) for run in log.runs]


def outputs(path: str, old: bool) -> Dict[str, Any]:
    """What each command makes of ``path``, read the old way or the new."""
    read = before.read_log if old else read_log
    out: Dict[str, Any] = {"strict": _outcome(lambda: _read(read(path, strict=True)))}
    full = _outcome(lambda: read(path))
    out["read"] = full if isinstance(full, str) else _read(full)
    if isinstance(full, str):
        return out
    ledger = before.job_ledger if old else job_ledger
    goodput_log = full if old else read_goodput(path)
    for job in range(1, len(jobs(full)) + 1):
        out[f"goodput job {job}"] = _outcome(lambda: _goodput(goodput_log, ledger, job))
    empty = f"ReportError: {path}: no metrics in it (an empty file or no scalar events)"
    if getattr(full, "cut", None) is not None:   # the loader names the cut line
        empty = f"ReportError: {path}: no metrics in it but a cut line: {full.cut}"
    for which in _choices(full):
        if old:   # the old loader's one check (cli/report/_load.py)
            drawn = judged = full if any(run.metrics for run in full.runs) else empty
        else:
            drawn = _outcome(lambda: load_streamed(path, which))
            judged = _outcome(lambda: load_streamed(path, which, drawn=False))
        out[f"report {which}"] = drawn if isinstance(drawn, str) else \
            _outcome(lambda: _report(drawn, which))
        out[f"advise {which}"] = judged if isinstance(judged, str) else \
            _outcome(lambda: advice_data(judged, which))
    return out


#: The line a report prints for a run drawn from a sample of its lines.
SAMPLED = '(docs/report.md, "Long runs")'


def _unsampled(old: Any, new: Any) -> Any:
    """A report of a downsampled run: its numbers are the sample's, by
    design; its summary (the last figures, MFU's range: extremes are kept),
    the advice and the ledger are the whole log's. Compare those."""
    if not (isinstance(new, list) and SAMPLED in new[1] and isinstance(old, list)):
        return old, new
    summary = "\n".join(line for line in new[1].splitlines() if SAMPLED not in line)
    return old[1:], [summary, *new[2:]]


def differences(path: str) -> List[str]:
    """What the two readings of ``path`` disagree on (empty: nothing)."""
    try:
        old = outputs(path, old=True)
    except Exception:  # noqa: BLE001 -- the old path crashed on this log: nothing to compare
        return []
    new = outputs(path, old=False)
    found = []
    for name in dict.fromkeys([*old, *new]):
        a, b = old.get(name), new.get(name)
        if name.startswith("report "):
            a, b = _unsampled(a, b)
        if a != b:
            found.append(f"{path}: {name}: old {a!r:.400} != new {b!r:.400}")
    return found
