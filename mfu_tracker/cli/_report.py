"""``mfu-tracker report``: a picture of a run's MFU, from its metrics log.

Input (:func:`load`):

* a JSONL file written by ``log_path=`` (records:
  :mod:`mfu_tracker.job._records`): the runs that appended to it (one run
  record each), their metrics lines and ledger intervals;
* a directory of TensorBoard event files (or one event file), e.g. written by
  HF Trainer's TensorBoard callback with :class:`~mfu_tracker.MFUCallback`:
  scalar tags are the metric keys, the Trainer's ``train/`` prefix removed,
  and the event step is the step (one run, no records).

Which run: the last one by default; ``--run N`` (1 = the file's first) or
``--run all``, each run drawn as its own line with its start marked. The
output says how many runs the file holds.

What is drawn (:func:`plan`, keys from :mod:`mfu_tracker.timing._metrics`, never
spelled here; ``{p}`` is the metric prefix, found from the MFU key):

1. MFU over steps (``{p}/mfu``: the tracker's *window* MFU, logged at each
   step), the step time on a second axis (``{p}/step_time_s``), the peak and
   its source (the run record), and the caveat when the peak was measured on
   a busy machine (a ``peak_check`` record that disagrees);
2. the waterfall: one stacked bar per logged step, MFU then each
   ``{p}/mfu_lost/<cause>`` share of the step time (causes in the order they
   first appear); each bar is as high as its printed ``sum``;
3. per-rank MFU when present: the spread ``{p}/mfu_rank_min`` / ``mean`` /
   ``max`` over steps;
4. the hardware panel when the log has the GPM keys (:mod:`._report_hardware`):
   MFU against ``{p}/hw/tensor_active``, MBU against ``{p}/hw/dram_bw_util``;
   the waterfall's compute share is annotated with them;
5. the job ledger when the log has run records (:mod:`mfu_tracker.job._ledger`):
   one bar per run and one for the job, goodput then each badput bucket, as
   fractions of each bar's wall time.
6. the kernel breakdown when the log has profiled steps (``breakdown``
   records, or the ``kernel_share/*`` keys; :mod:`._report_kernels`): one
   stacked bar per profiled step, each kernel class's share and idle's.

The output ends with what to change (``mfu-tracker advise``,
:mod:`._advise`). Two logs (``report A.jsonl B.jsonl``) draw the two runs
side by side instead (:mod:`._report_compare`).

The x axis runs over the logged steps (its range and ticks are printed).
Every number drawn is also printed (:func:`numbers_text`), ``key=value``
with Python's round-trip float repr, and one diagnosis line names the largest
loss. A value that cannot be drawn (not a finite number, a negative MFU or
time) is named as ``file:line`` and left out. Missing keys: what exists is
drawn and the rest is named in :attr:`Report.missing`. Output ``.png`` or
``.html`` (self-contained: the PNG as base64 plus a table of the numbers).
Needs matplotlib, the ``[report]`` extra.
"""
from __future__ import annotations

import base64
import html
import io
import math
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .._install import DISTRIBUTION
from ..job._ledger import BUCKETS, JobLedger, diagnosis, job_ledger, rank_of
from ..job._records import Log, LogError, Run, invalid_reason, peak_disagrees, read_log
from ..timing._metrics import FAMILIES, KEYS, metric_key
from . import _report_hardware as hardware
from . import _report_kernels as kernels

__all__ = ["ReportError", "Report", "load", "plan", "numbers_text", "render", "run"]

#: Output formats, by file extension.
FORMATS = (".png", ".html")
#: The size of the picture, inches at DPI (one panel is PANEL_HEIGHT high).
WIDTH_IN, PANEL_HEIGHT_IN, DPI = 10.0, 3.6, 100
#: Above this many logged steps the waterfall's bars touch and are drawn as
#: one filled band per layer (thousands of separate bars take minutes to draw).
MAX_BARS = 200
#: At most this many step labels under the waterfall's bars (every k-th step).
MAX_BAR_LABELS = 12
#: The prefix HF Trainer's logging adds to training logs (``rewrite_logs``).
TRAINER_TAG_PREFIX = "train/"


class ReportError(ValueError):
    """Bad input or output for the report: the message says what and where."""


def _key_name(name: str) -> str:
    """A scalar key's name as :data:`KEYS` spells it (fails at import if renamed)."""
    for key in KEYS:
        if key.name == name:
            return key.name
    raise LookupError(f"mfu_tracker.timing._metrics.KEYS has no {name!r} key")


def _family_name(name: str) -> str:
    for family, _, _ in FAMILIES:
        if family == name:
            return family
    raise LookupError(f"mfu_tracker.timing._metrics.FAMILIES has no {name!r} family")


MFU = _key_name("mfu")
STEP_TIME = _key_name("step_time_s")
LOST = _family_name("mfu_lost")
LOST_RANK = _family_name("mfu_lost_rank")
RANK_SPREAD = (_key_name("mfu_rank_min"), _key_name("mfu_rank_mean"), _key_name("mfu_rank_max"))
SLOWEST = _key_name("slowest_rank")

Record = Dict[str, Any]


# ---- input ----------------------------------------------------------------------

def _is_event_file(path: str) -> bool:
    return "tfevents" in os.path.basename(path)


def load(path: str) -> Log:
    """The runs of ``path`` (a JSONL log, a TensorBoard directory or event
    file: one run), each run's metrics records sorted by step."""
    if not os.path.exists(path):
        raise ReportError(f"{path}: no such file or directory")
    if os.path.isdir(path) or _is_event_file(path):
        log = _load_tensorboard(path)
    else:
        try:
            log = read_log(path)
        except LogError as error:
            raise ReportError(str(error)) from None
    if not any(run.metrics for run in log.runs):
        raise ReportError(f"{path}: no metrics in it (an empty file or no scalar events)")
    return log


def _load_tensorboard(path: str) -> Log:
    try:
        from tensorboard.backend.event_processing.event_accumulator import (
            SCALARS,
            EventAccumulator,
        )
    except ImportError:
        raise ReportError("reading TensorBoard event files needs the tensorboard package "
                          "(pip install tensorboard)") from None
    if os.path.isdir(path):
        files = sorted(os.path.join(root, name) for root, _, names in os.walk(path)
                       for name in names if _is_event_file(name))
    else:
        files = [path]
    if not files:
        raise ReportError(f"{path}: no TensorBoard event files (*tfevents*) in it")
    by_step: Dict[int, Record] = {}
    invalid: List[str] = []
    for name in files:
        events = EventAccumulator(name, size_guidance={SCALARS: 0})
        try:
            events.Reload()
        except Exception as error:  # noqa: BLE001 -- a corrupt file: say which
            raise ReportError(f"{name}: not a readable TensorBoard event file ({error})") from None
        for tag in events.Tags().get(SCALARS, []):
            key = tag[len(TRAINER_TAG_PREFIX):] if tag.startswith(TRAINER_TAG_PREFIX) else tag
            for event in events.Scalars(tag):
                reason = invalid_reason(key, float(event.value))
                if reason is not None:
                    invalid.append(f"{name}: step {event.step}: {key}={event.value!r}: {reason}; "
                                   f"not drawn")
                    continue
                by_step.setdefault(int(event.step), {"step": int(event.step)})[key] = float(event.value)
    run = Run(number=1, record=None, line=0, metrics=sorted(by_step.values(), key=lambda r: r["step"]))
    return Log(path=path, runs=[run], invalid=invalid)


def select_runs(log: Log, which: str) -> List[Run]:
    """The runs ``--run`` asks for: "last" (default), "all" or a number N."""
    runs = [run for run in log.runs if run.metrics]
    if which == "last":
        return runs[-1:]
    if which == "all":
        return runs
    try:
        number = int(which)
    except ValueError:
        number = 0
    chosen = [run for run in log.runs if run.number == number]
    if not chosen:
        raise ReportError(f"--run {which!r}: give 'all' or a run number 1..{len(log.runs)} "
                          f"(the file holds {len(log.runs)} run(s))")
    if not chosen[0].metrics:
        raise ReportError(f"--run {which}: run {number} logged no metrics")
    return chosen


# ---- what to draw ---------------------------------------------------------------

@dataclass
class Report:
    """What :func:`render` draws: every series as (step, value) with the run
    each point is from, the waterfall rows, the job ledger; ``missing`` names
    what the input lacks, ``invalid`` what it held but cannot be drawn."""

    prefix: str
    mfu: List[Tuple[int, float]] = field(default_factory=list)
    mfu_run: List[int] = field(default_factory=list)                # run number per point
    step_time: List[Tuple[int, float]] = field(default_factory=list)
    step_time_run: List[int] = field(default_factory=list)
    causes: List[str] = field(default_factory=list)                 # waterfall keys, in order
    waterfall: List[Tuple[int, Dict[str, float]]] = field(default_factory=list)
    waterfall_run: List[int] = field(default_factory=list)
    ranks: Dict[str, List[Tuple[int, float]]] = field(default_factory=dict)
    slowest: List[Tuple[int, float]] = field(default_factory=list)
    missing: List[str] = field(default_factory=list)
    invalid: List[str] = field(default_factory=list)
    runs_total: int = 1
    runs_drawn: List[int] = field(default_factory=lambda: [1])
    run_starts: List[Tuple[int, int]] = field(default_factory=list)  # (first step, run number)
    peak: Optional[str] = None                                      # "989.4 TFLOP/s bf16 (datasheet)"
    caveat: Optional[str] = None
    ledger: Optional[JobLedger] = None
    diagnosis: Optional[str] = None
    hardware: Optional[hardware.HardwarePanel] = None
    kernels: Optional[kernels.KernelPanel] = None     # the kernel breakdown (profiled steps)

    @property
    def mfu_key(self) -> str:
        return metric_key(self.prefix, MFU)

    def stacked(self) -> List[Tuple[str, List[float], List[float]]]:
        """The waterfall's layers as drawn: (key, heights, bottoms) per layer,
        MFU first, each layer on top of the previous (what the bars show)."""
        layers = []
        bottoms = [0.0] * len(self.waterfall)
        for key in [self.mfu_key] + self.causes:
            heights = [shares.get(key, 0.0) for _, shares in self.waterfall]
            layers.append((key, heights, bottoms))
            bottoms = [b + h for b, h in zip(bottoms, heights)]
        return layers

    def bar_tops(self) -> List[float]:
        """Each waterfall bar's height as drawn (the top of its last layer)."""
        layers = self.stacked()
        if not layers:
            return []
        _, heights, bottoms = layers[-1]
        return [b + h for b, h in zip(bottoms, heights)]

    def steps(self) -> List[int]:
        """The logged steps drawn, in order (the x axis)."""
        return sorted({step for step, _ in self.mfu} | {step for step, _ in self.waterfall}
                      | {step for series in self.ranks.values() for step, _ in series})


def _number(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def find_prefix(records: Sequence[Record]) -> Optional[str]:
    """The metric prefix: ``p`` of the first ``p/mfu`` key (``""`` for a bare one)."""
    suffix = "/" + MFU
    for record in records:
        for key in record:
            if key == MFU:
                return ""
            if key.endswith(suffix):
                return key[: -len(suffix)]
    return None


def _add_record(report: Report, record: Record, run: int) -> None:
    prefix, mfu_key = report.prefix, report.mfu_key
    lost_base = metric_key(prefix, LOST) + "/"
    step = record["step"]
    mfu = _number(record.get(mfu_key))
    if mfu is not None:
        report.mfu.append((step, mfu))
        report.mfu_run.append(run)
    step_time = _number(record.get(metric_key(prefix, STEP_TIME)))
    if step_time is not None:
        report.step_time.append((step, step_time))
        report.step_time_run.append(run)
    lost = {key: v for key, v in ((k, _number(x)) for k, x in record.items()
                                   if k.startswith(lost_base)) if v is not None}
    if lost and mfu is not None:
        for key in lost:
            if key not in report.causes:
                report.causes.append(key)
        report.waterfall.append((step, {mfu_key: mfu, **lost}))
        report.waterfall_run.append(run)
    for name in RANK_SPREAD:
        value = _number(record.get(metric_key(prefix, name)))
        if value is not None:
            report.ranks.setdefault(metric_key(prefix, name), []).append((step, value))
    slowest = _number(record.get(metric_key(prefix, SLOWEST)))
    if slowest is not None:
        report.slowest.append((step, slowest))


def _missing(report: Report) -> None:
    prefix, mfu_key = report.prefix, report.mfu_key
    lost_base = metric_key(prefix, LOST) + "/"
    if not report.mfu:
        report.missing.append(f"{mfu_key}: no values (the MFU panel is empty)")
    if not report.waterfall:
        report.missing.append(f"{lost_base}*: no waterfall keys (the waterfall panel is empty)")
    if not report.ranks:
        report.missing.append(f"{metric_key(prefix, RANK_SPREAD[0])} / _mean / _max: no per-rank "
                              f"MFU (not distributed; no per-rank panel)")


def _peak_and_caveat(report: Report, runs: Sequence[Run]) -> None:
    run = runs[-1]
    peak = _number(run.get("peak_tflops"))
    if peak is not None:
        report.peak = (f"{peak:.6g} TFLOP/s per device, {run.get('dtype', '?')} "
                       f"({run.get('peak_source', 'unknown')})")
    for check in (c for r in runs for c in r.peak_checks):
        first, again = _number(check.get("peak_tflops")), _number(check.get("remeasured_tflops"))
        if peak_disagrees(first, again):
            report.caveat = (f"the peak was measured on a busy machine: {first:.6g} TFLOP/s, "
                             f"then {again:.6g} re-measured after training (they differ by more "
                             f"than 25%); MFU against the other would read "
                             f"{first / again:.3g}x as high")  # type: ignore[operator]


def _diagnose(report: Report, records: Sequence[Record]) -> None:
    """The diagnosis line: the largest waterfall loss of the last logged step
    drawn, its share of the step time, and the rank it is concentrated on."""
    if not report.waterfall:
        return
    _, shares = report.waterfall[-1]
    lost_base = metric_key(report.prefix, LOST) + "/"
    causes = {key[len(lost_base):]: v for key, v in shares.items() if key.startswith(lost_base)}
    if causes:
        name = max(causes, key=lambda k: causes[k])
        report.diagnosis = diagnosis(causes, "step time", rank_of(records, name))


def plan(log: Log, prefix: Optional[str] = None, which: str = "last") -> Report:
    """The series of ``log``'s chosen runs to draw (see the module docstring)."""
    runs = select_runs(log, which)
    records = [r for run in runs for r in run.metrics]
    if prefix is None:
        prefix = find_prefix(records)
        if prefix is None:
            raise ReportError(f"no MFU key (<prefix>/{MFU}) in any record: nothing to draw")
    report = Report(prefix, runs_total=len(log.runs), runs_drawn=[run.number for run in runs],
                    invalid=list(log.invalid))
    for run in runs:
        ordered = sorted(run.metrics, key=lambda r: r["step"])
        if ordered:
            report.run_starts.append((ordered[0]["step"], run.number))
        for record in ordered:
            _add_record(report, record, run.number)
    if not (report.mfu or report.waterfall or report.ranks):
        raise ReportError(f"no {report.mfu_key}, {metric_key(prefix, LOST)}/* or per-rank MFU "
                          f"values in the input (prefix {prefix!r}; found: {find_prefix(records)!r})")
    report.hardware = hardware.hardware_panel(records, prefix)
    report.kernels = kernels.kernel_panel(runs, prefix)
    _missing(report)
    if report.hardware is None:
        report.missing.append(hardware.MISSING)
    if report.kernels is None:
        report.missing.append(kernels.MISSING)
    _peak_and_caveat(report, runs)
    _diagnose(report, records)
    if log.runs and all(run.record is not None for run in log.runs):
        try:
            report.ledger = job_ledger(log)
        except LogError as error:
            report.missing.append(f"the job ledger: {error}")
    return report


# ---- the numbers ------------------------------------------------------------------

def axis_ticks(report: Report) -> List[int]:
    """The x axis' tick steps: the logged steps, every k-th when there are many."""
    steps = report.steps()
    every = max(1, math.ceil(len(steps) / MAX_BAR_LABELS))
    return steps[::every]


def _head(report: Report) -> List[str]:
    drawn = ("all runs" if len(report.runs_drawn) == report.runs_total and report.runs_total > 1
             else f"run {report.runs_drawn[0]}")
    lines = [f"runs: the file holds {report.runs_total}; drawn: {drawn} (--run all|N to choose)"]
    if len(report.run_starts) > 1:
        lines.append("run starts (dashed lines): " + ", ".join(
            f"run {number} at step {step}" for step, number in report.run_starts))
    if report.peak:
        lines.append(f"peak: {report.peak}")
    if report.caveat:
        lines.append(f"caveat: {report.caveat}")
    if report.invalid:
        lines.append("invalid values (not drawn):")
        lines += [f"  {what}" for what in report.invalid]
    return lines


def _ledger_lines(ledger: JobLedger) -> List[str]:
    lines = ["job ledger (seconds; one bar per run, then the job; goodput + badput = wall):"]
    for run in ledger.runs:
        cells = " ".join(f"{k}={v!r}" for k, v in run.seconds.items())
        lines.append(f"  run={run.number} start_step={run.start_step} wall_s={run.wall_s!r} {cells}")
    cells = " ".join(f"{k}={v!r}" for k, v in
                     [("goodput", ledger.goodput_s), *ledger.badput_s.items()])
    lines.append(f"  job wall_s={ledger.job_wall_s!r} {cells}")
    name, share = ledger.largest_loss()
    lines.append(f"  job: {diagnosis({name: share}, 'the job wall time')}")
    return lines


def numbers_text(report: Report) -> str:
    """Every number drawn, one ``step=N key=value ...`` line per step and panel."""
    lines = _head(report)
    lines.append(f"MFU over steps ({report.mfu_key}, the tracker's window MFU):")
    for number, points in _by_run(report.mfu, report.mfu_run):
        if len(report.runs_drawn) > 1:
            lines.append(f"  run {number}:")
        lines += [f"  step={step} {report.mfu_key}={value!r}" for step, value in points]
    if report.step_time:
        key = metric_key(report.prefix, STEP_TIME)
        lines.append(f"step time ({key}, the window's mean, second axis):")
        lines += [f"  step={step} {key}={value!r}" for step, value in report.step_time]
    if report.waterfall:
        lines.append("waterfall (fractions of the step time; each bar is as high as its sum):")
        for (step, shares), top in zip(report.waterfall, report.bar_tops()):
            cells = " ".join(f"{key}={value!r}" for key, value in shares.items())
            lines.append(f"  step={step} {cells} sum={top!r}")
        note = hardware.compute_note(report.hardware, report.waterfall[-1][0])
        if note:
            lines.append(f"  {note}")
    if report.ranks:
        lines.append("per-rank MFU:")
        slowest = dict(report.slowest)
        by_key = {key: dict(series) for key, series in report.ranks.items()}
        for step in sorted({s for series in report.ranks.values() for s, _ in series}):
            cells = [f"{key}={values[step]!r}" for key, values in by_key.items() if step in values]
            if step in slowest:
                cells.append(f"{metric_key(report.prefix, SLOWEST)}={int(slowest[step])}")
            lines.append(f"  step={step} " + " ".join(cells))
    if report.hardware is not None:
        lines += report.hardware.lines()
    steps = report.steps()
    if steps:
        lines.append(f"x axis: steps {steps[0]}..{steps[-1]} (the logged steps; ticks at "
                     f"{', '.join(map(str, axis_ticks(report)))})")
    if report.kernels is not None:
        lines += report.kernels.lines()
    if report.ledger is not None:
        lines += _ledger_lines(report.ledger)
    if report.diagnosis:
        lines.append(report.diagnosis)
    lines += [f"missing: {what}" for what in report.missing]
    return "\n".join(lines)


# ---- drawing --------------------------------------------------------------------

def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise ReportError("drawing the report needs matplotlib, the optional extra [report]: "
                          f"pip install '{DISTRIBUTION}[report]'") from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _check_out(out: str) -> str:
    ext = os.path.splitext(out)[1].lower()
    if ext not in FORMATS:
        raise ReportError(f"--out {out!r}: unknown extension {ext or '(none)'!r}; "
                          f"use one of {', '.join(FORMATS)}")
    return ext


def _mark_runs(ax: Any, report: Report) -> None:
    """A dashed line where each drawn run starts (more than one run drawn)."""
    if len(report.run_starts) < 2:
        return
    for step, number in report.run_starts:
        ax.axvline(step, color="grey", linestyle="--", linewidth=0.8)
        ax.text(step, 1.0, f" run {number}", transform=ax.get_xaxis_transform(), fontsize="small",
                va="top", color="grey")


def _steps_axis(ax: Any, report: Report) -> None:
    steps = report.steps()
    ticks = axis_ticks(report)
    ax.set_xticks(ticks, [str(s) for s in ticks])
    if steps:
        pad = max(0.5, (steps[-1] - steps[0]) * 0.02)
        ax.set_xlim(steps[0] - pad, steps[-1] + pad)
    ax.set_xlabel("step (as logged: steps completed)")


def _by_run(points: Sequence[Tuple[int, float]], runs: Sequence[int]) -> List[Tuple[int, Any]]:
    """(run number, its points) in order: one line per run, never one zigzag."""
    return [(number, [p for p, r in zip(points, runs) if r == number])
            for number in dict.fromkeys(runs)]


def _draw_step_time(ax: Any, report: Report) -> None:
    twin = ax.twinx()
    for _, points in _by_run(report.step_time, report.step_time_run):
        steps, values = zip(*points)
        twin.plot(steps, [v * 1e3 for v in values], color="tab:gray", linestyle=":",
                  marker="." if len(steps) <= MAX_BARS else None)
    twin.set_ylabel("step time, ms (dotted)", color="tab:gray")
    twin.set_ylim(0, max(v for _, v in report.step_time) * 1e3 * 1.15)


def _draw_mfu(ax: Any, report: Report, title: str) -> None:
    if report.mfu:
        for number, points in _by_run(report.mfu, report.mfu_run):
            steps, values = zip(*points)
            label = f"run {number}" if len(report.runs_drawn) > 1 else "window MFU"
            ax.plot(steps, values, marker="o" if len(steps) <= MAX_BARS else None, markersize=3,
                    label=label)
        if len(report.runs_drawn) > 1:
            ax.legend(fontsize="small", loc="lower right")
    else:
        ax.text(0.5, 0.5, f"no {report.mfu_key} values", ha="center", transform=ax.transAxes)
    heading = title or "MFU over steps (the tracker's window MFU)"
    ax.set_title(heading + (f"\npeak {report.peak}" if report.peak else ""), fontsize="medium")
    ax.set_ylabel(f"{report.mfu_key} (window)")
    ax.set_ylim(0, max([v for _, v in report.mfu], default=1.0) * 1.15 or 1.0)
    _steps_axis(ax, report)
    _mark_runs(ax, report)
    ax.grid(alpha=0.3)
    if report.step_time:
        _draw_step_time(ax, report)
    if report.caveat:
        ax.text(0.01, 0.02, "caveat: " + report.caveat, transform=ax.transAxes, fontsize="x-small",
                color="tab:red", wrap=True)


def _draw_waterfall(ax: Any, report: Report) -> None:
    ax.set_title("waterfall: where the step time goes (fractions of step time)")
    if not report.waterfall:
        ax.text(0.5, 0.5, f"no {metric_key(report.prefix, LOST)}/* keys in the input",
                ha="center", transform=ax.transAxes)
        ax.set_xticks([])
        ax.set_yticks([])
        return
    positions = list(range(len(report.waterfall)))
    for key, heights, bottoms in report.stacked():
        label = key.rsplit("/", 1)[-1]
        if len(positions) <= MAX_BARS:
            ax.bar(positions, heights, bottom=bottoms, label=label)
        else:  # the same bars, touching, as one polygon per layer (fast)
            tops = [b + h for b, h in zip(bottoms, heights)]
            ax.fill_between(positions, bottoms, tops, step="mid", label=label, linewidth=0)
    tops = report.bar_tops()
    every = max(1, math.ceil(len(positions) / MAX_BAR_LABELS))
    ax.set_xticks(positions[::every], [str(step) for step, _ in report.waterfall][::every])
    for i in range(1, len(positions)):
        if report.waterfall_run[i] != report.waterfall_run[i - 1]:
            ax.axvline(i - 0.5, color="grey", linestyle="--", linewidth=0.8)
    ax.set_xlabel("step (as logged)")
    ax.set_ylim(min(0.0, min(tops)), max(1.0, max(tops)))
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    note = hardware.compute_note(report.hardware, report.waterfall[-1][0])
    if note:
        ax.text(0.01, 0.98, note, transform=ax.transAxes, fontsize="x-small", va="top",
                bbox={"facecolor": "white", "alpha": 0.8, "linewidth": 0})


def _draw_ranks(ax: Any, report: Report) -> None:
    for key, series in report.ranks.items():
        steps, values = zip(*series)
        ax.plot(steps, values, marker=".", label=key.rsplit("/", 1)[-1])
    ax.set_title("per-rank MFU spread")
    ax.set_ylabel("MFU")
    _steps_axis(ax, report)
    _mark_runs(ax, report)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")


def _draw_ledger(ax: Any, ledger: JobLedger) -> None:
    names = ["goodput", *BUCKETS]
    rows = [(f"run {r.number} ({r.wall_s:.4g} s)", r.seconds, r.wall_s) for r in ledger.runs]
    rows.append((f"job ({ledger.job_wall_s:.4g} s)",
                 {"goodput": ledger.goodput_s, **ledger.badput_s}, ledger.job_wall_s))
    positions = list(range(len(rows)))[::-1]
    lefts = [0.0] * len(rows)
    for name in names:
        widths = [seconds[name] / wall if wall > 0 else 0.0 for _, seconds, wall in rows]
        ax.barh(positions, widths, left=lefts, label=name)
        lefts = [a + b for a, b in zip(lefts, widths)]
    ax.set_yticks(positions, [label for label, _, _ in rows])
    ax.set_xlim(0, max(1.0, max(lefts)))
    ax.set_xlabel("fraction of the bar's wall time")
    ax.set_title(f"the job ledger: goodput {ledger.goodput:.3f} of {ledger.job_wall_s:.4g} s"
                 + ("" if ledger.job_mfu is None else f", job MFU {ledger.job_mfu:.3g}"))
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")


def panels(report: Report) -> int:
    """How many panels the picture has."""
    return (2 + bool(report.ranks) + (report.hardware is not None) + (report.kernels is not None)
            + (report.ledger is not None))


def png_bytes(report: Report, title: str = "") -> bytes:
    """The picture as PNG bytes."""
    plt = _pyplot()
    count = panels(report)
    fig, axes = plt.subplots(count, 1, figsize=(WIDTH_IN, PANEL_HEIGHT_IN * count), dpi=DPI)
    try:
        _draw_mfu(axes[0], report, title)
        _draw_waterfall(axes[1], report)
        index = 2
        if report.ranks:
            _draw_ranks(axes[index], report)
            index += 1
        if report.hardware is not None:
            hardware.draw(axes[index], report.hardware, lambda ax: _steps_axis(ax, report))
            index += 1
        if report.kernels is not None:
            kernels.draw(axes[index], report.kernels)
            index += 1
        if report.ledger is not None:
            _draw_ledger(axes[index], report.ledger)
        fig.tight_layout()
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png")
        return buffer.getvalue()
    finally:
        plt.close(fig)


def html_text(report: Report, png: bytes, title: str) -> str:
    """A self-contained page: the PNG inline (base64) and a table of the numbers."""
    columns = [report.mfu_key] + report.causes + list(report.ranks)
    rows: Dict[int, Dict[str, float]] = {}
    for step, value in report.mfu:
        rows.setdefault(step, {})[report.mfu_key] = value
    for step, shares in report.waterfall:
        rows.setdefault(step, {}).update(shares)
    for key, series in report.ranks.items():
        for step, value in series:
            rows.setdefault(step, {})[key] = value
    head = "".join(f"<th>{html.escape(c)}</th>" for c in ["step"] + columns)
    body = "\n".join(
        "<tr><td>{}</td>{}</tr>".format(step, "".join(
            f"<td>{values[c]!r}</td>" if c in values else "<td></td>" for c in columns))
        for step, values in sorted(rows.items()))
    notes = report.missing + [f"invalid: {what}" for what in report.invalid]
    missing = "".join(f"<li>{html.escape(m)}</li>" for m in notes)
    image = base64.b64encode(png).decode("ascii")
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{html.escape(title)}"
            f"</title></head>\n<body>\n<h1>{html.escape(title)}</h1>\n"
            f"<img alt=\"MFU report\" src=\"data:image/png;base64,{image}\">\n"
            + "".join(f"<p>{html.escape(line)}</p>\n" for line in _head(report))
            + f"<table border=\"1\">\n<tr>{head}</tr>\n{body}\n</table>\n"
            + (f"<p>Missing:</p><ul>{missing}</ul>\n" if missing else "")
            + "</body></html>\n")


def render(report: Report, out: str, title: str = "") -> None:
    """Write ``out`` (.png or .html)."""
    ext = _check_out(out)
    png = png_bytes(report, title)
    write_out(out, ext, png, lambda: html_text(report, png, title or "MFU report"))


def write_out(out: str, ext: str, png: bytes, html_page: Callable[[], str]) -> None:
    """Write the picture ``out``: the PNG, or (``.html``) the page
    ``html_page()`` builds around it; its directory is created."""
    parent = os.path.dirname(out)
    if parent:
        os.makedirs(parent, exist_ok=True)
    if ext == ".png":
        with open(out, "wb") as f:
            f.write(png)
    else:
        with open(out, "w", encoding="utf-8") as f:
            f.write(html_page())


def run(path: str, out: str, prefix: Optional[str] = None, title: str = "",
        which: str = "last",
        epilogue: Optional[Callable[[Log, str, str], List[str]]] = None) -> str:
    """Load ``path``, draw ``out``; returns the numbers drawn (:func:`numbers_text`),
    then ``epilogue(log, which, prefix)``'s lines (the command line passes
    what to change: :func:`mfu_tracker.cli._advise.lines_for_report`)."""
    _check_out(out)
    _pyplot()                       # the missing extra is said before any work
    log = load(path)
    report = plan(log, prefix, which)
    render(report, out, title)
    tail = [] if epilogue is None else epilogue(log, which, report.prefix)
    return "\n".join([numbers_text(report), *tail])
