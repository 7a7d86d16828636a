"""The job ledger: goodput, badput and one job MFU over every run of a job.

The input is a log read back (:func:`mfu_tracker.job._stream.read_log`, or
in one pass by :func:`~mfu_tracker.job._stream.stream_log` with the
intervals booked as they come: :mod:`._intervals`): each run's run record
and its ledger intervals, and one job of it (the last
by default; :mod:`._jobs` says which runs make one job: a run continues the
job before it only when it resumes). Times are wall-clock seconds. For run r
of the job (in file order) with process start ``P_r``, last record at
``E_r`` and start step ``N_r``:

* the job's wall time is ``E_last - P_first`` (``job_wall_s``);
* **restart_gap** of run r > 1: ``max(0, P_r - E_{r-1})``, the time between
  the previous run's last record and this process's start; its *span* runs
  from ``max(P_r, E_{r-1})`` to ``E_r`` (the first run's from ``P_1``);
* **startup**: from the span's start to the run's first step boundary
  (the whole span when it never took one);
* a step of run r is **lost progress** when a later run resumed at or
  before it (``step >= min over later runs of N``): it was computed twice;
  its whole period counts (an interval that straddles the resume point is
  split by its share of steps, which the output notes);
* the kept steps' periods split into their **data** phase and the
  **productive** rest -- ``goodput_s``;
* **checkpoint**, **eval**, **compile**: the badput phases' seconds, left
  out of the steps they fell in (``csrc/core/steps/steps.h``). An integration that
  marks the first call of a compiled model as compile (``compile_calls``)
  holds that call's normal work in it too: one normal step's forward +
  backward (the run's mean over the steps where they were marked) goes back
  to the productive time, so compile is the first call's *excess*;
* **other**: the rest of the span (the tracker's own time, time after the
  last step boundary, unmarked time between steps, dropped steps).

``goodput`` and the ``badput/<bucket>`` shares are the seconds over
``job_wall_s``; ``other`` closes the sum, so they add up to exactly 1
(``math.fsum``). ``job_mfu`` = the kept steps' model FLOPs / sum over runs of
(devices_r x (E_r - E_{r-1}) x per-device peak_r), the first run's time from
``P_1``: restart gaps are charged. It is left out (with the reason) when a
run has no peak or the log lacks some steps' FLOPs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..peaks._table import GIVE_A_PEAK
from ..timing._waterfall import closing_share
from ._intervals import Steps, book_of
from ._jobs import Job, jobs
from ._records import Log, LogError, Run

#: The badput buckets, in report order.
BUCKETS: Tuple[str, ...] = ("startup", "compile", "checkpoint", "eval", "data",
                            "lost_progress", "restart_gap", "other")

#: Words for a loss, for the diagnosis line (waterfall causes and badput
#: buckets; a name not here is printed as it is).
LABELS: Dict[str, str] = {
    "data": "data loading", "communication": "exposed communication",
    "pipeline_bubble": "the pipeline bubble",
    "optimizer": "the optimizer", "recompute": "recompute", "compute": "compute below peak",
    "other": "other (unmarked) time", "startup": "startup", "compile": "compilation",
    "checkpoint": "checkpointing", "eval": "evaluation",
    "lost_progress": "lost progress (steps re-done after a restart)",
    "restart_gap": "the gap between runs",
}


@dataclass
class RunLedger:
    """One run's seconds: ``goodput`` (productive) and each bucket of
    :data:`BUCKETS`, adding up to ``wall_s`` (its restart gap and span)."""

    number: int
    run_id: Optional[str]
    start_step: int
    wall_s: float
    seconds: Dict[str, float]
    device_s: Optional[float]        # devices x the time charged to them (job_mfu)
    peak_flops_per_sec: Optional[float]


@dataclass
class JobLedger:
    """The job's ledger (module docstring); :meth:`figures` gives its keys."""

    runs: List[RunLedger]
    job_wall_s: float
    goodput_s: float
    badput_s: Dict[str, float]
    goodput: float
    badput: Dict[str, float]
    job_mfu: Optional[float]
    notes: List[str] = field(default_factory=list)
    number: int = 1                  # the job's number in its file (:mod:`._jobs`)
    #: The kept steps' model FLOPs (``job_mfu``'s numerator, the job's: every
    #: rank's); None when the log lacks some steps' FLOPs.
    model_flops: Optional[float] = None

    def figures(self) -> Dict[str, Any]:
        """The fields of ``mfu-tracker goodput``'s keys
        (:mod:`mfu_tracker.timing._metrics`: ``job_wall_s``, ``goodput``,
        ``goodput_s``, ``job_mfu``, the ``badput`` and ``badput_s`` families)."""
        return {"job_wall_s": self.job_wall_s, "goodput": self.goodput,
                "goodput_s": self.goodput_s, "job_mfu": self.job_mfu,
                "badput": self.badput, "badput_s": self.badput_s}

    def largest_loss(self) -> Tuple[str, float]:
        """The bucket with the largest share, and its share."""
        name = max(BUCKETS, key=lambda k: self.badput[k])
        return name, self.badput[name]


def _number(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _run_ledger(run: Run, prev: Optional[Run], cut: Optional[int], notes: List[str],
                path: str) -> Tuple[RunLedger, Steps]:
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
    steps = book_of(run).steps(cut, run.number, notes, path)
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


def _job_mfu(runs: Sequence[RunLedger], kept_flops: Optional[float],
             notes: List[str]) -> Optional[float]:
    if kept_flops is None:
        notes.append("job_mfu: the log lacks some steps' model FLOPs (no per-step FLOPs, or "
                     "FLOPs of one rank only); it is left out")
        return None
    if any(r.device_s is None or r.peak_flops_per_sec is None for r in runs):
        notes.append(f"job_mfu: a run has no peak (a CPU, or a device the peak table does not "
                     f"know); it is left out: {GIVE_A_PEAK}")
        return None
    denominator = math.fsum(r.device_s * r.peak_flops_per_sec for r in runs)  # type: ignore[operator]
    return kept_flops / denominator if denominator > 0 else None


def _choose_job(log: Log, number: Optional[int], notes: List[str]) -> Job:
    """The job ``number`` of ``log`` (default: the last), with a note when the
    file holds more than one (:mod:`._jobs`' rule)."""
    found = jobs(log)
    if number is None:
        number = len(found)
    if not 1 <= number <= len(found):
        raise LogError(f"--job {number}: give a job number 1..{len(found)} (the file holds "
                       f"{len(found)} job(s))")
    job = found[number - 1]
    if len(found) > 1:
        notes.append(f"the file holds {len(found)} jobs (" + "; ".join(
            f"job {j.number}: {j.describe()}" for j in found) + f"); this ledger is job "
            f"{job.number}'s (--job N chooses)")
        notes += [f"job {j.number}: {j.reason}" for j in found if j.reason]
    return job


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


def _job(runs: List[RunLedger], kept_flops: Optional[float], notes: List[str],
         number: int) -> JobLedger:
    """The job's totals and shares from its runs."""
    wall = math.fsum(r.wall_s for r in runs)
    goodput_s = math.fsum(r.seconds["goodput"] for r in runs)
    badput_s = {k: math.fsum(r.seconds[k] for r in runs) for k in BUCKETS}
    goodput = goodput_s / wall if wall > 0 else 0.0
    badput = {k: badput_s[k] / wall if wall > 0 else 0.0 for k in BUCKETS if k != "other"}
    badput["other"] = closing_share([goodput, *badput.values()])
    return JobLedger(runs=runs, job_wall_s=wall, goodput_s=goodput_s, badput_s=badput_s,
                     goodput=goodput, badput={k: badput[k] for k in BUCKETS},
                     job_mfu=_job_mfu(runs, kept_flops, notes), notes=notes, number=number,
                     model_flops=kept_flops)


def diagnosis(shares: Dict[str, float], basis: str, rank: Optional[int] = None) -> Optional[str]:
    """One sentence naming the largest of ``shares`` (fractions of
    ``basis``), e.g. "largest loss: data loading, 18.0% of step time, rank 3";
    None without shares."""
    if not shares:
        return None
    name = max(shares, key=lambda k: shares[k])
    text = f"largest loss: {LABELS.get(name, name)}, {shares[name] * 100:.1f}% of {basis}"
    return text if rank is None else f"{text}, rank {rank}"


def rank_of(records: Sequence[Dict[str, Any]], cause: str) -> Optional[int]:
    """The rank where ``cause`` is concentrated, from the newest metrics record
    carrying ``<prefix>/mfu_lost_rank/<cause>`` (distributed runs), else None."""
    suffix = f"mfu_lost_rank/{cause}"
    for record in reversed(records):
        for key, value in record.items():
            if key == suffix or key.endswith("/" + suffix):
                number = _number(value)
                if number is not None:
                    return int(number)
    return None
