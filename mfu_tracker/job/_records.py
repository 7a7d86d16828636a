"""The metrics log's records: what each line holds, and reading a log back.

A log (``Tracker(log_path=...)``, the integrations' ``log_path=``) is a JSONL
file that one or more *runs* of a job append to -- a run being one process
(rank 0 of it) that trained and then exited, cleanly or not. Every line is
one JSON object, of one of five kinds:

``run`` -- the first line of every run, written when the tracker is created::

    {"record": "run", "time": T, "run_id": "9f0c...", "job": "...", "host": "node7",
     "pid": 4242, "ranks": 8, "devices": 8, "process_start": T0, "start_step": N,
     "peak_tflops": 989.4, "peak_source": "datasheet", "dtype": "bf16",
     "device": "H100 SXM", "version": "0.1.0", "model": {...}}

  ``process_start`` is the process's start time as the OS recorded it
  (:func:`process_start_time`), so the run's startup before the tracker
  existed counts; ``start_step`` is the global step the run resumes from
  (``Tracker(start_step=N)``: the steps before N were trained by earlier
  runs); ``ranks`` the world size, ``devices`` ranks x ``num_gpus``;
  ``peak_tflops`` the per-device peak MFU is measured against (None when
  there is none), ``device`` the peak's device (its table row's name;
  None without one); ``model``, when the tracker was told
  (``Tracker(model_info=...)``, :mod:`._model_info`), the model's config,
  sequence length, and how its FLOPs were obtained.

*metrics* -- one per non-empty ``metrics()`` (no ``record`` key: the lines
  written before the job ledger existed look the same)::

    {"step": 20, "time": T, "throughput/mfu": 0.41, ..., "ledger": {...}}

  ``step`` is the global step (``start_step`` + steps completed); the metric
  keys are those of :mod:`mfu_tracker.timing._metrics`; ``ledger`` is the
  interval since the run's previous record (below).

``peak_check`` -- a second measurement of the peak (``Tracker.peak_check``):
  ``{"record": "peak_check", "time": T, "peak_tflops": P0, "remeasured_tflops": P1}``.

``breakdown`` -- a profiled step's kernel breakdown (``Tracker(profile_steps=)``;
  fields: :meth:`mfu_tracker.breakdown._record.Breakdown.to_record`).

``run_end`` -- written when the tracker closes (``close()``, the end of
  training, the interpreter's exit): ``{"record": "run_end", "time": T,
  "step": S, "ledger": {...}}``. A run that crashed has none: its last
  record marks its end.

A ``ledger`` object (:data:`LEDGER_FIELDS`) covers the steps closed since
the run's previous record, ``from_step`` <= step < ``to_step`` (global steps,
half open), and every second the step engine booked meanwhile
(``csrc/core/steps/steps.h``, "The job ledger's totals"):

    step_s         the steps' periods summed (badput phases and the tracker's
                   own time left out), s
    phase_s        seconds per phase: the step phases (data, forward, ...) of
                   these steps; the badput phases (checkpoint, eval, compile)
                   that ended in the interval
    own_s          the tracker's own time (its metrics() calls), s
    dropped        steps lost to a clock failure (no period)
    model_flops    the model FLOPs of flops_steps of these steps (the job's:
                   summed over ranks when flops_ranks > 1); None when unknown
    flops_steps, flops_ranks
    compile_calls  steps whose compile phase holds a whole compiled call (an
                   integration marks the first compiled step so): the ledger
                   takes one normal step's forward + backward back out of it
    first_boundary wall time of the run's first step boundary: its startup's end
    first_step_s   the run's first step's period (its excess over the run's
                   median step is startup); None before it
    untimed_steps  the first steps of the range whose work ran before the run's
                   clock started (MFUOptimizerWrapper's first step() after its
                   forward and backward, no hook to start the clock earlier):
                   numbered, not timed (their time is in startup)
    untimed_flops  their model FLOPs (None when unknown)

Reading (:func:`._stream.read_log`, or one pass feeding accumulators:
:func:`._stream.stream_log`) groups the lines into runs, keeps each record's
line number, and reports every value that cannot be drawn or added -- a
metric that is not a finite number, a negative ratio or time -- as
``file:line`` (:attr:`Log.invalid`) instead of using it. A line a crash or a
disk left unreadable is skipped and named: the last line cut short by a
killed writer in :attr:`Log.cut` (the commands print one warning), any other
in :attr:`Log.skipped` (counted); ``strict=True`` refuses either. Which runs
of a log make one job: :mod:`._jobs`.
"""
from __future__ import annotations

import math
import os
import socket
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from ..breakdown._record import BREAKDOWN_RECORD
from ..peaks._measure import peak_disagrees  # noqa: F401 -- re-exported: the readers use it
from ..timing._metrics import FAMILIES, KEYS

#: The ``record`` values.
RUN, RUN_END, PEAK_CHECK = "run", "run_end", "peak_check"
#: A profiled step's kernel breakdown (mfu_tracker.breakdown._record).
BREAKDOWN = BREAKDOWN_RECORD
#: The key of a metrics line's (and a run-end record's) interval.
LEDGER = "ledger"
LEDGER_FIELDS: Tuple[str, ...] = (
    "from_step", "to_step", "step_s", "phase_s", "own_s", "dropped", "model_flops",
    "flops_steps", "flops_ranks", "compile_calls", "first_boundary", "first_step_s",
    "untimed_steps", "untimed_flops",
)

#: Environment variables naming the job, in order (the Prometheus ``job``
#: label and the run record's ``job``); without any, the run id.
JOB_ENV = ("MFU_TRACKER_JOB", "TORCHELASTIC_RUN_ID", "SLURM_JOB_ID")

#: Units whose values are never negative (a negative one is invalid).
_NONNEGATIVE_UNITS = ("ratio", "s", "TFLOP/s", "tokens/s", "W", "J/token", "MHz",
                      "TFLOP/s per W", "fraction of job wall time",
                      "fraction of the profiled step", "GB/s")
_UNIT_OF_KEY = {key.name: key.unit for key in KEYS}
_FAMILY_UNIT = {family: unit for family, unit, _ in FAMILIES}


class LogError(ValueError):
    """A log that cannot be read: the message names the file and line."""


#: Tries at reading the wall clock around the boot clock (:func:`wall_minus_boot_s`).
PAIRING_TRIES = 5


def wall_minus_boot_s() -> Optional[float]:
    """The wall clock less ``CLOCK_BOOTTIME`` (the clock ``/proc``'s start
    times count), s; None where there is no boot clock. From the closest of
    a few (wall, boot, wall) readings, the walls' midpoint: off by at most
    half of that triple's gap, so a thread held up between two readings (a
    busy machine) reads again instead of dating the start late by the wait."""
    boot_clock = getattr(time, "CLOCK_BOOTTIME", None)
    if boot_clock is None:
        return None
    best: Optional[Tuple[float, float]] = None
    for _ in range(PAIRING_TRIES):
        before = time.time()
        boot = time.clock_gettime(boot_clock)
        after = time.time()
        if best is None or after - before < best[0]:
            best = (after - before, (before + after) / 2 - boot)
        if best[0] < 1e-4:
            break
    return None if best is None else best[1]


def process_start_boot_s(pid: Optional[int] = None) -> Optional[float]:
    """When the OS started process ``pid`` (default: this one) on the boot
    clock (``CLOCK_BOOTTIME``), s: ``/proc/<pid>/stat``'s start time, whole
    clock ticks (1/100 s); None where it cannot be read (not Linux, no such
    process)."""
    pid = os.getpid() if pid is None else pid
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            stat = f.read()
        # the command name (field 2) may hold spaces and parentheses: split after it
        start_ticks = int(stat[stat.rindex(")") + 2:].split()[19])
        return start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def process_start_time(pid: Optional[int] = None) -> Optional[float]:
    """When the OS started process ``pid`` (default: this one), seconds since
    the epoch; None where it cannot be read.

    Linux: the start on the boot clock (:func:`process_start_boot_s`, 1/100 s
    resolution) placed on the wall clock (:func:`wall_minus_boot_s`).
    (``/proc/stat``'s boot time, which psutil adds, is whole seconds only: up
    to 1 s off.) Elsewhere: psutil's ``create_time()`` when installed."""
    boot, offset = process_start_boot_s(pid), wall_minus_boot_s()
    if boot is not None and offset is not None:
        return offset + boot
    try:
        import psutil  # type: ignore[import-untyped]

        return float(psutil.Process(pid if pid is not None else os.getpid()).create_time())
    except Exception:  # noqa: BLE001 -- not installed, or no such process
        return None


def new_run_id() -> str:
    """A fresh run id (128 random bits, hex)."""
    return uuid.uuid4().hex


def job_name(run_id: str, job: Optional[str] = None) -> str:
    """The job's name: ``job`` when given, else the first of :data:`JOB_ENV`
    set, else ``run_id`` (no job id: :mod:`._jobs` tells them apart so)."""
    if job:
        return job
    for name in JOB_ENV:
        value = os.environ.get(name)
        if value:
            return value
    return run_id


def host_name() -> str:
    return socket.gethostname()


# ---- reading --------------------------------------------------------------------

@dataclass
class Run:
    """One run of a log: its run record (None for lines written before the
    first run record: a log from before the job ledger), its metrics lines
    and ledger intervals, in file order, and its other records.

    :func:`read_log` fills every list; a streaming reader
    (:func:`._stream.stream_log`) keeps only what its readers asked for, and
    :attr:`metrics_lines` counts the metrics lines either way."""

    number: int                                   # 1, 2, ... in file order
    record: Optional[Dict[str, Any]]
    line: int                                     # the run record's line (first line otherwise)
    metrics: List[Dict[str, Any]] = field(default_factory=list)    # each with "_line"
    intervals: List[Dict[str, Any]] = field(default_factory=list)  # ledger objects, "_line"
    peak_checks: List[Dict[str, Any]] = field(default_factory=list)
    breakdowns: List[Dict[str, Any]] = field(default_factory=list)  # each with "_line"
    end: Optional[Dict[str, Any]] = None
    last_time: Optional[float] = None             # the time of its last record
    metrics_lines: int = 0                        # its metrics lines read (all of them)
    #: What a streaming reader kept (:mod:`._stream`): the run's ledger
    #: intervals, booked (:class:`._intervals.IntervalBook`), and, when
    #: :attr:`metrics` holds a sample of the lines, what the sample is.
    book: Any = None
    sampling: Optional[str] = None

    def get(self, name: str, default: Any = None) -> Any:
        """A field of the run record (``default`` without one)."""
        return default if self.record is None else self.record.get(name, default)

    @property
    def logged(self) -> int:
        """How many metrics lines the run logged (kept or not)."""
        return max(self.metrics_lines, len(self.metrics))


@dataclass
class Log:
    """A log read back: its runs in file order, every value left out, the
    lines that could not be read (skipped) and the cut last line."""

    path: str
    runs: List[Run]
    invalid: List[str] = field(default_factory=list)   # "file:line: key=value: why"
    skipped: List[str] = field(default_factory=list)   # "file:line: why": lines not read
    cut: Optional[str] = None                          # the last line, cut short (skipped)


def _finite(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        value = float(value)
    except OverflowError:       # an integer past a float's range
        return None
    return value if math.isfinite(value) else None


def metric_unit(key: str) -> Optional[str]:
    """The unit of a metric key ``{prefix}/name`` or ``{prefix}/family/entry``
    (None: a key outside the metric table)."""
    parts = key.split("/")
    for i in range(len(parts)):
        rest = parts[i:]
        if len(rest) == 1 and rest[0] in _UNIT_OF_KEY:
            return _UNIT_OF_KEY[rest[0]]
        if len(rest) == 2 and rest[0] in _FAMILY_UNIT:
            return _FAMILY_UNIT[rest[0]]
    return None


def nonnegative_unit(unit: str) -> bool:
    """Whether a value in ``unit`` is never negative (a negative one is invalid)."""
    return unit in _NONNEGATIVE_UNITS


def invalid_reason(key: str, value: Any) -> Optional[str]:
    """Why a metric value cannot be drawn or added (None: it can). Values of
    keys outside the metric table are not judged."""
    unit = metric_unit(key)
    if unit is None:
        return None
    number = _finite(value)
    if number is None:
        return "not a finite number"
    if number < 0 and nonnegative_unit(unit):
        return f"negative {unit}"
    return None
