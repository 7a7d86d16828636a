"""The numbers drawn, printed: the head (runs, peak, caveat, invalid values),
each panel's ``step=N key=value`` lines, the x axis, the diagnosis and what
is missing."""
from __future__ import annotations

from typing import List

from .._log_notes import skipped_lines
from ._axes import axis_ticks
from ._model import Report
from .panels import PANELS

__all__ = ["head", "numbers_text", "summary_text"]


def head(report: Report) -> List[str]:
    """The lines above the numbers: runs, run starts, the peak, the caveat, invalid values."""
    drawn = ("all runs" if len(report.runs) == report.runs_total and report.runs_total > 1
             else f"run {report.runs_drawn[0]}")
    lines = [f"runs: the file holds {report.runs_total}; drawn: {drawn} (--run all|N to choose)"]
    if len(report.run_starts) > 1:
        lines.append("run starts (dashed lines): " + ", ".join(
            f"run {number} at step {step}" for step, number in report.run_starts))
    if report.peak:
        lines.append(f"peak: {report.peak}")
    if report.caveat:
        lines.append(f"caveat: {report.caveat}")
    if report.no_mfu:
        lines.append(report.no_mfu)
    if report.invalid:
        lines.append("invalid values (not drawn):")
        lines += [f"  {what}" for what in report.invalid]
    return lines + skipped_lines(report.log)


def numbers_text(report: Report) -> str:
    """Every number drawn, one ``step=N key=value ...`` line per step and panel."""
    lines = head(report)
    for panel in PANELS:
        data = report.panel(panel.name)
        if data is not None:
            lines += panel.text(report, data)
    if report.steps:
        lines.append(f"x axis: steps {report.steps[0]}..{report.steps[-1]} (the logged steps; "
                     f"ticks at {', '.join(map(str, axis_ticks(report)))})")
    if report.diagnosis:
        lines.append(report.diagnosis)
    lines += [f"missing: {what}" for what in report.missing]
    return "\n".join(lines)


def summary_text(report: Report) -> str:
    """What a person reads: the head, each panel's latest figures rounded, the
    diagnosis and what is missing (every number drawn: :func:`numbers_text`)."""
    lines = head(report)
    for panel in PANELS:
        data = report.panel(panel.name)
        if data is not None:
            lines += panel.summary(report, data)
    if report.diagnosis:
        lines.append(report.diagnosis)
    lines += [f"missing: {what}" for what in report.missing]
    return "\n".join(lines)
