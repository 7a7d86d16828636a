"""MFU over steps: the tracker's window MFU (``{p}/mfu``), one line per run,
the step time (``{p}/step_time_s``, the window's mean) on a second axis, the
peak in the title and the busy-machine caveat under the line.

Without MFU (no peak: a CPU, an unknown device) the panel draws what there
is: the step time, with tokens/s (``{p}/tokens_per_sec``) on the second axis,
and its title says why there is no MFU (:attr:`Report.no_mfu`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from ..._figures import significant
from .._axes import steps_axis
from .._model import STEP_TIME, TOKENS, Report, by_run, number
from ._base import Panel
from ._impossible import IMPOSSIBLE_COLOR, mfu_above_one

#: Above this many points a line is drawn without markers.
MAX_MARKERS = 200

Points = List[Tuple[int, float]]


@dataclass
class Series:
    """MFU, step time and tokens/s points (step, value), each with its run number."""

    mfu: Points = field(default_factory=list)
    mfu_run: List[int] = field(default_factory=list)
    step_time: Points = field(default_factory=list)
    step_time_run: List[int] = field(default_factory=list)
    tokens: Points = field(default_factory=list)
    tokens_run: List[int] = field(default_factory=list)


def _add(points: Points, runs: List[int], record: Dict[str, Any], key: str, run: int) -> None:
    value = number(record.get(key))
    if value is not None:
        points.append((record["step"], value))
        runs.append(run)


class MfuPanel(Panel):
    name = "mfu"

    def placeholder(self, report: Report) -> bool:
        return True

    def collect(self, report: Report) -> Optional[Series]:
        series = Series()
        for record, run in report.points:
            _add(series.mfu, series.mfu_run, record, report.mfu_key, run)
            _add(series.step_time, series.step_time_run, record, report.key(STEP_TIME), run)
            _add(series.tokens, series.tokens_run, record, report.key(TOKENS), run)
        if series.mfu:
            series.tokens, series.tokens_run = [], []      # drawn only in MFU's absence
            mfu_above_one(report, series.mfu)
        elif series.step_time or series.tokens:
            report.missing.append(self.absent(report))
        return series if series.mfu or series.step_time or series.tokens else None

    def absent(self, report: Report) -> str:
        return f"{report.mfu_key}: no values (the MFU panel is empty)"

    def steps(self, data: Series) -> List[int]:
        return [step for step, _ in data.mfu or data.step_time or data.tokens]

    def text(self, report: Report, data: Series) -> List[str]:
        lines: List[str] = []
        if data.mfu:
            lines.append(f"MFU over steps ({report.mfu_key}, the tracker's window MFU):")
            for run, points in by_run(data.mfu, data.mfu_run):
                if len(report.runs) > 1:
                    lines.append(f"  run {run}:")
                lines += [f"  step={step} {report.mfu_key}={value!r}" for step, value in points]
        axis = "second axis" if data.mfu else "the panel's line"
        for points, name, label, what in (
                (data.step_time, STEP_TIME, "step time", f"the window's mean, {axis}"),
                (data.tokens, TOKENS, "tokens/s", "the window's, second axis")):
            if points:
                key = report.key(name)
                lines.append(f"{label} ({key}, {what}):")
                lines += [f"  step={step} {key}={value!r}" for step, value in points]
        return lines

    def summary(self, report: Report, data: Series) -> List[str]:
        lines = []
        if data.mfu:
            values = [v for _, v in data.mfu]
            lines.append(f"MFU ({report.mfu_key}, window): {values[-1]:.3f} at step "
                         f"{data.mfu[-1][0]}; {min(values):.3f}..{max(values):.3f} over steps "
                         f"{data.mfu[0][0]}..{data.mfu[-1][0]}")
        if data.step_time:
            step, last = data.step_time[-1]
            lines.append(f"step time (window mean): {significant(last * 1e3)} ms at step {step}")
        if data.tokens:
            step, last = data.tokens[-1]
            lines.append(f"tokens/s: {significant(last)} at step {step}")
        return lines

    def table(self, report: Report, data: Series) -> Dict[int, Dict[str, float]]:
        rows: Dict[int, Dict[str, float]] = {}
        for points, key in ((data.mfu, report.mfu_key), (data.step_time, report.key(STEP_TIME)),
                            (data.tokens, report.key(TOKENS))):
            for step, value in points:
                rows.setdefault(step, {})[key] = value
        return rows

    def draw(self, ax: Any, report: Report, data: Optional[Series]) -> None:
        if data is not None and data.mfu:
            _draw_lines(ax, report, data.mfu, data.mfu_run, "window MFU")
            heading = report.title or "MFU over steps (the tracker's window MFU)"
            ax.set_ylabel(f"{report.mfu_key} (window)")
            ax.set_ylim(0, max(v for _, v in data.mfu) * 1.15 or 1.0)
            _mark_above_one(ax, data.mfu)
            if data.step_time:
                _twin(ax, data.step_time, data.step_time_run, 1e3, "step time, ms (dotted)")
        elif data is not None and data.step_time:
            ms = [(s, v * 1e3) for s, v in data.step_time]
            _draw_lines(ax, report, ms, data.step_time_run, "step time")
            heading = report.title or "step time (no MFU)"
            ax.set_ylabel("step time, ms (window mean)")
            ax.set_ylim(0, max(v for _, v in ms) * 1.15 or 1.0)
            if data.tokens:
                _twin(ax, data.tokens, data.tokens_run, 1.0, "tokens/s (dotted)")
        else:
            ax.text(0.5, 0.5, f"no {report.mfu_key} values", ha="center", transform=ax.transAxes)
            heading = report.title or "MFU over steps"
        notes = [f"peak {report.peak}" if report.peak else None,
                 None if data is None or data.mfu else report.no_mfu]
        ax.set_title("\n".join([heading, *(n for n in notes if n)]), fontsize="medium", wrap=True)
        steps_axis(ax, report)
        ax.grid(alpha=0.3)
        caveats = [report.caveat] if report.caveat else []
        if report.impossible:
            caveats.append("cannot be: " + "; ".join(label for label, _ in report.impossible)
                           + " (the printed caveats say why)")
        if caveats:
            ax.text(0.01, 0.02, "\n".join("caveat: " + c for c in caveats),
                    transform=ax.transAxes, fontsize="x-small", color=IMPOSSIBLE_COLOR, wrap=True)


def _draw_lines(ax: Any, report: Report, points: Points, runs: List[int], label: str) -> None:
    for run, mine in by_run(points, runs):
        steps, values = zip(*mine)
        ax.plot(steps, values, marker="o" if len(steps) <= MAX_MARKERS else None, markersize=3,
                label=f"run {run}" if len(report.runs) > 1 else label)
    if len(report.runs) > 1:
        ax.legend(fontsize="small", loc="lower right")


def _mark_above_one(ax: Any, points: Points) -> None:
    """MFU above 1 cannot be: the line at 1 and a cross on each point above it."""
    above = [(step, value) for step, value in points if value > 1.0]
    if not above:
        return
    ax.axhline(1.0, color=IMPOSSIBLE_COLOR, linestyle="--", linewidth=1.0,
               label="MFU = 1: above it cannot be (see the caveat)")
    steps, values = zip(*above)
    ax.plot(steps, values, linestyle="none", marker="x", markersize=8, color=IMPOSSIBLE_COLOR)
    ax.legend(fontsize="small", loc="center left")   # the caveat is at the bottom


def _twin(ax: Any, points: Points, runs: List[int], scale: float, label: str) -> None:
    twin = ax.twinx()
    for _, mine in by_run(points, runs):
        steps, values = zip(*mine)
        twin.plot(steps, [v * scale for v in values], color="tab:gray", linestyle=":",
                  marker="." if len(steps) <= MAX_MARKERS else None)
    twin.set_ylabel(label, color="tab:gray")
    twin.set_ylim(0, max(v for _, v in points) * scale * 1.15 or 1.0)


PANEL = MfuPanel()
