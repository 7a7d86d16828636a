"""The reading path as it was before the streaming readers: a verbatim copy
(``read_log`` of ``job/_records.py`` and the step booking and ``job_ledger``
of ``job/_ledger.py``; the parts of the ledger the streaming readers left as
they were are imported), kept here only, as the reference the streamed
readers are compared with (``_reader_check.py``). It builds the
package's own ``Run`` / ``Log`` / ``RunLedger`` / ``JobLedger`` objects, so
the commands' text and JSON can be formed from either reading. Not to be
edited: it is what the figures were."""
from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Tuple

from mfu_tracker.job._ledger import BUCKETS, JobLedger, RunLedger, _choose_job, _job
from mfu_tracker.job._records import (BREAKDOWN, LEDGER, PEAK_CHECK, RUN, RUN_END, Log, LogError,
                                      Run, _finite, invalid_reason)

# ---- job/_records.py: reading ------------------------------------------------------

def _clean_metrics(record: Dict[str, Any], where: str, invalid: List[str]) -> Dict[str, Any]:
    """The metrics line without the values that cannot be used (each named)."""
    out: Dict[str, Any] = {}
    for key, value in record.items():
        if key in ("step", "time", "rank", "world_size", LEDGER):
            out[key] = value
            continue
        reason = invalid_reason(key, value)
        if reason is not None:
            invalid.append(f"{where}: {key}={json.dumps(value)}: {reason}; not drawn")
            continue
        out[key] = value
    return out


def _check_ledger(ledger: Any, where: str) -> Dict[str, Any]:
    if not isinstance(ledger, dict):
        raise LogError(f"{where}: '{LEDGER}' is not a JSON object")
    for name in ("from_step", "to_step"):
        if not isinstance(ledger.get(name), int) or isinstance(ledger.get(name), bool):
            raise LogError(f"{where}: '{LEDGER}.{name}' is not an integer")
    if ledger["to_step"] < ledger["from_step"]:
        raise LogError(f"{where}: '{LEDGER}' ends (to_step {ledger['to_step']}) before it "
                       f"starts (from_step {ledger['from_step']})")
    untimed = ledger.get("untimed_steps", 0)
    if isinstance(untimed, bool) or not isinstance(untimed, int) or \
            not 0 <= untimed <= ledger["to_step"] - ledger["from_step"]:
        raise LogError(f"{where}: '{LEDGER}.untimed_steps' is not an integer from 0 to the "
                       f"interval's steps")
    for name in ("step_s", "own_s"):
        if _finite(ledger.get(name)) is None or ledger[name] < 0:
            raise LogError(f"{where}: '{LEDGER}.{name}' is not a finite number >= 0")
    phases = ledger.get("phase_s", {})
    if not isinstance(phases, dict) or any(_finite(v) is None for v in phases.values()):
        raise LogError(f"{where}: '{LEDGER}.phase_s' is not an object of finite numbers")
    return ledger


def _parse_line(path: str, number: int, line: str) -> Dict[str, Any]:
    """One line as a record; LogError (naming ``file:line``) when it is not one."""
    try:
        record = json.loads(line)
    except ValueError as error:
        raise LogError(f"{path}:{number}: not a JSON line ({error})") from None
    if not isinstance(record, dict):
        raise LogError(f"{path}:{number}: not a JSON object")
    kind = record.get("record")
    if kind is None:
        step = record.get("step")
        if isinstance(step, bool) or not isinstance(step, (int, float)) or step != step:
            raise LogError(f"{path}:{number}: no numeric 'step' field")
        record["step"] = int(step)
    elif kind not in (RUN, RUN_END, PEAK_CHECK, BREAKDOWN):
        raise LogError(f"{path}:{number}: unknown record {kind!r}")
    if LEDGER in record:
        _check_ledger(record[LEDGER], f"{path}:{number}")
    return record


def _add(runs: List[Run], record: Dict[str, Any], where: str, number: int,
         invalid: List[str]) -> None:
    kind = record.get("record")
    if kind == RUN or not runs:
        runs.append(Run(number=len(runs) + 1, record=record if kind == RUN else None,
                        line=number))
        if kind == RUN:
            runs[-1].last_time = _finite(record.get("time"))
            return
    run = runs[-1]
    when = _finite(record.get("time"))
    if when is not None:
        run.last_time = when
    if kind == PEAK_CHECK:
        run.peak_checks.append(record)
        return
    if kind == BREAKDOWN:
        run.breakdowns.append({**record, "_line": number})
        return
    if LEDGER in record:
        run.intervals.append({**record[LEDGER], "_line": number})
    if kind == RUN_END:
        run.end = record
        return
    run.metrics.append({**_clean_metrics(record, where, invalid), "_line": number})


def _lines(path: str) -> Iterator[Tuple[int, bytes]]:
    """(line number, bytes) of each non-blank line of ``path``, newline kept."""
    try:
        with open(path, "rb") as lines:
            for number, raw in enumerate(lines, 1):
                if raw.strip():
                    yield number, raw
    except IsADirectoryError:
        raise LogError(f"{path}: is a directory") from None


def _record(path: str, number: int, raw: bytes) -> Dict[str, Any]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise LogError(f"{path}:{number}: not a UTF-8 text file ({error.reason}); give a JSONL "
                       f"metrics log") from None
    return _parse_line(path, number, text)


def read_log(path: str, *, strict: bool = False) -> Log:
    """The runs of the JSONL log ``path`` (see the module docstring).

    A line that cannot be read -- not a JSON object, a metrics line without
    a numeric ``step``, an unknown record, a malformed ledger interval, bytes
    that are not UTF-8 -- is skipped and named in :attr:`Log.skipped`; the
    last line, when it lacks its newline and cannot be read, is a line cut
    short by a writer killed mid-write: skipped and named in :attr:`Log.cut`.
    ``strict``: either raises :class:`LogError` naming ``file:line`` instead.
    A file none of whose lines can be read raises too. Values that cannot be
    used are listed in :attr:`Log.invalid` and left out."""
    runs: List[Run] = []
    log = Log(path=path, runs=runs)
    read, first = 0, None
    for number, raw in _lines(path):
        try:
            record = _record(path, number, raw)
        except LogError as error:
            first = first or str(error)
            if strict:
                raise LogError(f"{error} (--strict: a log with a line that cannot be read is "
                               f"refused)") from None
            if raw.endswith(b"\n"):
                log.skipped.append(str(error))
            else:   # the file's last line: nothing was written after it
                log.cut = f"{path}:{number}: the last line is cut short (its writer was killed " \
                          f"mid-line?): skipped"
            continue
        read += 1
        _add(runs, record, f"{path}:{number}", number, log.invalid)
    if not read and first is not None:
        raise LogError(f"{path}: no line of it can be read: not a JSONL metrics log ({first})")
    return log

# ---- job/_ledger.py: the step booking and the job ledger ----------------------------

@dataclass
class _Steps:
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


def _number(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _lost_share(first: int, end: int, cut: Optional[int]) -> float:
    """The share of steps ``first <= s < end`` at or beyond ``cut``."""
    if cut is None or end <= first:
        return 0.0
    return min(1.0, max(0.0, (end - max(first, cut)) / (end - first)))


def _interval(steps: _Steps, iv: Dict[str, Any], cut: Optional[int], ranks: int,
              notes: List[str], where: str) -> Tuple[int, float]:
    """Book one interval into ``steps``; returns (its pushed steps, its
    forward + backward seconds)."""
    _untimed(steps, iv, cut, ranks, notes, where)
    first, end = iv["from_step"] + int(iv.get("untimed_steps") or 0), iv["to_step"]   # timed
    lost = _lost_share(first, end, cut)
    if 0.0 < lost < 1.0:
        notes.append(f"{where}: steps {first}..{end - 1} straddle the resume point {cut}: "
                     f"split by steps ({lost:.3g} of the interval counted as lost progress)")
    phases = iv.get("phase_s") or {}
    data = float(phases.get("data", 0.0))
    step_s = float(iv["step_s"])
    steps.productive += (1.0 - lost) * (step_s - data)
    steps.data += (1.0 - lost) * data
    steps.lost += lost * step_s
    for name in steps.phases:
        steps.phases[name] += float(phases.get(name, 0.0))
    pushed = _pushed(iv)
    flops = _number(iv.get("model_flops"))
    if flops is None or iv.get("flops_steps") != pushed or (iv.get("flops_ranks") or 1) < ranks:
        steps.flops_complete = steps.flops_complete and pushed == 0
    else:
        steps.flops += (1.0 - lost) * flops
    if steps.first_boundary is None:
        steps.first_boundary = _number(iv.get("first_boundary"))
    return pushed, float(phases.get("forward", 0.0)) + float(phases.get("backward", 0.0))


def _untimed(steps: _Steps, iv: Dict[str, Any], cut: Optional[int], ranks: int,
             notes: List[str], where: str) -> None:
    """Book the interval's first steps run before the clock started
    (``untimed_steps``): their FLOPs when kept (not re-done by a later run)
    and known for every rank; their time is in the run's startup, unmeasured.
    A note names them and says which way they went."""
    untimed = int(iv.get("untimed_steps") or 0)
    if not untimed:
        return
    first = iv["from_step"]
    kept = untimed - round(untimed * _lost_share(first, first + untimed, cut))
    flops = _number(iv.get("untimed_flops"))
    its = "its" if untimed == 1 else "their"
    if not kept:
        fate = "re-done by a later run: lost progress, not counted"
    elif flops is None:
        fate = f"{its} model FLOPs are unknown"
        steps.flops_complete = False
    elif ranks > 1:
        fate = f"left out of job_mfu: {its} model FLOPs are the logging rank's only"
    else:
        fate = f"{its} model FLOPs count in job_mfu"
        steps.flops += flops * kept / untimed
    names = f"step {first}" if untimed == 1 else f"steps {first}..{first + untimed - 1}"
    notes.append(f"{where}: {names} ran before the run's clock started (the first step() came "
                 f"after the forward and backward): not timed, {its} time is in startup; {fate}")


def _book_steps(run: Run, cut: Optional[int], notes: List[str], path: str) -> _Steps:
    """A run's intervals booked (module docstring), compile as its excess."""
    steps = _Steps()
    ranks = int(run.get("ranks") or 1)
    pushed = calls = 0
    forward_backward = 0.0
    for iv in run.intervals:
        n, fb = _interval(steps, iv, cut, ranks, notes, f"{path}:{iv['_line']}")
        if fb > 0:          # steps whose forward / backward were marked
            pushed += n
            forward_backward += fb
        calls += int(iv.get("compile_calls") or 0)
    _first_step_excess(run, steps, cut, "compile" if calls else "startup", notes)
    if calls:
        normal = pushed - calls
        if normal > 0:
            moved = calls * forward_backward / normal   # one normal step's forward + backward
            steps.phases["compile"] -= moved
            steps.productive += moved
        else:
            notes.append(f"run {run.number}: no step besides the compiled call's to take its "
                         f"normal work from: compile holds the whole call")
    return steps


def _pushed(iv: Dict[str, Any]) -> int:
    """The interval's timed steps with a period."""
    return (iv["to_step"] - iv["from_step"] - int(iv.get("dropped") or 0)
            - int(iv.get("untimed_steps") or 0))


def _first_step_excess(run: Run, steps: _Steps, cut: Optional[int], bucket: str,
                       notes: List[str]) -> None:
    """Move the run's first step's excess over its median step from goodput to
    ``bucket`` (startup, or compile when the run marked a compiled call): the
    median over the run's intervals of their mean step period, the first
    step left out of its interval. The step itself (and its FLOPs) stays."""
    first = next((iv for iv in run.intervals if _pushed(iv) > 0), None)
    first_s = None if first is None else _number(first.get("first_step_s"))
    if first is None or first_s is None:
        return   # a log without the field
    if cut is not None and first["from_step"] + int(first.get("untimed_steps") or 0) >= cut:
        return   # the first timed step was lost progress (all of it)
    means = []
    for iv in run.intervals:
        n, seconds = _pushed(iv), float(iv["step_s"])
        if iv is first:
            n, seconds = n - 1, seconds - first_s
        if n > 0:
            means.append(seconds / n)
    if not means:
        notes.append(f"run {run.number}: one step only, no normal step to compare its first "
                     f"with: all of it is goodput")
        return
    excess = min(max(0.0, first_s - statistics.median(means)), steps.productive)
    steps.productive -= excess
    if bucket == "compile":
        steps.phases["compile"] += excess
    else:
        steps.startup += excess


def _run_ledger(run: Run, prev: Optional[Run], cut: Optional[int], notes: List[str],
                path: str) -> Tuple[RunLedger, _Steps]:
    start = _number(run.get("process_start"))
    if start is None:
        start = _number(run.get("time"))
        notes.append(f"run {run.number}: no process start time from the OS; its startup is "
                     f"counted from the tracker's creation")
    end = run.last_time
    if start is None or end is None:
        raise LogError(f"{path}:{run.line}: run {run.number} has no times")
    prev_end = None if prev is None else prev.last_time
    gap = 0.0 if prev_end is None else max(0.0, start - prev_end)
    span_start = start if prev_end is None else max(start, prev_end)
    steps = _book_steps(run, cut, notes, path)
    boundary = steps.first_boundary
    startup = (end if boundary is None else boundary) - span_start
    seconds = {"startup": max(0.0, startup) + steps.startup, **steps.phases, "data": steps.data,
               "lost_progress": steps.lost, "restart_gap": gap}
    wall = gap + (end - span_start)
    seconds["other"] = wall - math.fsum([steps.productive, *seconds.values()])
    devices, peak = _number(run.get("devices")), _number(run.get("peak_tflops"))
    charged_from = start if prev_end is None else prev_end
    return RunLedger(
        number=run.number, run_id=run.get("run_id"), start_step=int(run.get("start_step") or 0),
        wall_s=wall, seconds={"goodput": steps.productive, **{k: seconds[k] for k in BUCKETS}},
        device_s=None if devices is None else devices * (end - charged_from),
        peak_flops_per_sec=None if peak is None else peak * 1e12,
    ), steps


def job_ledger(log: Log, job: Optional[int] = None) -> JobLedger:
    """The ledger of the job ``job`` of ``log`` (1 = the file's first; default
    the last: :mod:`._jobs` says which runs make a job), module docstring.
    Raises :class:`LogError` for a log without run records (written before
    the job ledger existed) and for a job that is not there."""
    if not log.runs or any(run.record is None for run in log.runs):
        raise LogError(f"{log.path}: no run records (a log written before the job ledger: "
                       f"mfu-tracker goodput needs a log from Tracker(log_path=...) of this "
                       f"version)")
    notes: List[str] = []
    chosen = _choose_job(log, job, notes)
    runs = chosen.runs
    ledgers: List[RunLedger] = []
    kept_flops: Optional[float] = 0.0
    for i, run in enumerate(runs):
        later = [int(r.get("start_step") or 0) for r in runs[i + 1:]]
        ledger, steps = _run_ledger(run, runs[i - 1] if i else None,
                                    min(later) if later else None, notes, log.path)
        ledgers.append(ledger)
        kept_flops = kept_flops + steps.flops if kept_flops is not None and \
            steps.flops_complete else None
    return _job(ledgers, kept_flops, notes, chosen.number)
