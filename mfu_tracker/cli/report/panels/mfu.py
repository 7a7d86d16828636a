"""MFU over steps: the tracker's window MFU (``{p}/mfu``), one line per run,
the step time (``{p}/step_time_s``, the window's mean) on a second axis, the
peak in the title and the busy-machine caveat under the line."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from .._axes import steps_axis
from .._model import MFU, STEP_TIME, Report, by_run, number
from ._base import Panel

#: Above this many points a line is drawn without markers.
MAX_MARKERS = 200


@dataclass
class Series:
    """MFU and step time points (step, value), each with its run number."""

    mfu: List[Tuple[int, float]] = field(default_factory=list)
    mfu_run: List[int] = field(default_factory=list)
    step_time: List[Tuple[int, float]] = field(default_factory=list)
    step_time_run: List[int] = field(default_factory=list)


class MfuPanel(Panel):
    name = "mfu"
    always = True

    def collect(self, report: Report) -> Optional[Series]:
        series = Series()
        for record, run in report.points:
            mfu = number(record.get(report.mfu_key))
            if mfu is not None:
                series.mfu.append((record["step"], mfu))
                series.mfu_run.append(run)
            step_time = number(record.get(report.key(STEP_TIME)))
            if step_time is not None:
                series.step_time.append((record["step"], step_time))
                series.step_time_run.append(run)
        if not series.mfu and series.step_time:   # the step time alone is still drawn
            report.missing.append(self.absent(report))
        return series if series.mfu or series.step_time else None

    def absent(self, report: Report) -> str:
        return f"{report.mfu_key}: no values (the MFU panel is empty)"

    def steps(self, data: Series) -> List[int]:
        return [step for step, _ in data.mfu]

    def text(self, report: Report, data: Series) -> List[str]:
        lines = [f"MFU over steps ({report.mfu_key}, the tracker's window MFU):"]
        for run, points in by_run(data.mfu, data.mfu_run):
            if len(report.runs) > 1:
                lines.append(f"  run {run}:")
            lines += [f"  step={step} {report.mfu_key}={value!r}" for step, value in points]
        if data.step_time:
            key = report.key(STEP_TIME)
            lines.append(f"step time ({key}, the window's mean, second axis):")
            lines += [f"  step={step} {key}={value!r}" for step, value in data.step_time]
        return lines

    def table(self, report: Report, data: Series) -> Dict[int, Dict[str, float]]:
        return {step: {report.mfu_key: value} for step, value in data.mfu}

    def draw(self, ax: Any, report: Report, data: Optional[Series]) -> None:
        mfu = [] if data is None else data.mfu
        if data is not None:
            for run, points in by_run(data.mfu, data.mfu_run):
                steps, values = zip(*points)
                label = f"run {run}" if len(report.runs) > 1 else "window MFU"
                ax.plot(steps, values, marker="o" if len(steps) <= MAX_MARKERS else None,
                        markersize=3, label=label)
            if len(report.runs) > 1:
                ax.legend(fontsize="small", loc="lower right")
        else:
            ax.text(0.5, 0.5, f"no {report.mfu_key} values", ha="center", transform=ax.transAxes)
        heading = report.title or "MFU over steps (the tracker's window MFU)"
        ax.set_title(heading + (f"\npeak {report.peak}" if report.peak else ""), fontsize="medium")
        ax.set_ylabel(f"{report.mfu_key} (window)")
        ax.set_ylim(0, max([v for _, v in mfu], default=1.0) * 1.15 or 1.0)
        steps_axis(ax, report)
        ax.grid(alpha=0.3)
        if data is not None and data.step_time:
            _draw_step_time(ax, data)
        if report.caveat:
            ax.text(0.01, 0.02, "caveat: " + report.caveat, transform=ax.transAxes,
                    fontsize="x-small", color="tab:red", wrap=True)


def _draw_step_time(ax: Any, data: Series) -> None:
    twin = ax.twinx()
    for _, points in by_run(data.step_time, data.step_time_run):
        steps, values = zip(*points)
        twin.plot(steps, [v * 1e3 for v in values], color="tab:gray", linestyle=":",
                  marker="." if len(steps) <= MAX_MARKERS else None)
    twin.set_ylabel("step time, ms (dotted)", color="tab:gray")
    twin.set_ylim(0, max(v for _, v in data.step_time) * 1e3 * 1.15)


PANEL = MfuPanel()
