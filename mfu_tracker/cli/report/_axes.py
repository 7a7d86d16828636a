"""Drawing helpers the step panels share: the x axis over the logged steps
and a dashed line where each drawn run starts."""
from __future__ import annotations

import math
from typing import Any, List

from ._model import Report

#: At most this many step labels under an axis (every k-th step).
MAX_TICKS = 12


def axis_ticks(report: Report) -> List[int]:
    """The x axis' tick steps: the logged steps, every k-th when there are many."""
    every = max(1, math.ceil(len(report.steps) / MAX_TICKS))
    return report.steps[::every]


def mark_runs(ax: Any, report: Report) -> None:
    """A dashed line where each drawn run starts (more than one run drawn)."""
    if len(report.run_starts) < 2:
        return
    for step, number in report.run_starts:
        ax.axvline(step, color="grey", linestyle="--", linewidth=0.8)
        ax.text(step, 1.0, f" run {number}", transform=ax.get_xaxis_transform(), fontsize="small",
                va="top", color="grey")


def steps_axis(ax: Any, report: Report) -> None:
    """The x axis over the logged steps drawn, with the runs' starts marked."""
    steps = report.steps
    ticks = axis_ticks(report)
    ax.set_xticks(ticks, [str(s) for s in ticks])
    if steps:
        pad = max(0.5, (steps[-1] - steps[0]) * 0.02)
        ax.set_xlim(steps[0] - pad, steps[-1] + pad)
    ax.set_xlabel("step (as logged: steps completed)")
    mark_runs(ax, report)
