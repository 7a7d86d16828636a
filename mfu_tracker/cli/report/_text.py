"""The numbers drawn, printed: the head (runs, peak, caveat, invalid values),
each panel's ``step=N key=value`` lines, the x axis, the diagnosis and what
is missing."""
from __future__ import annotations

from typing import Any, Callable, List

from .._log_notes import skipped_lines
from ._axes import axis_ticks
from ._model import Report
from .panels import PANELS, Panel

__all__ = ["head", "numbers_text", "summary_text"]


def head(report: Report) -> List[str]:
    """The lines above the numbers: runs, run starts, the peak, the caveat, invalid values."""
    drawn = ("all runs" if len(report.runs) == report.runs_total and report.runs_total > 1
             else f"run {report.runs_drawn[0]}")
    lines = [f"runs: the file holds {report.runs_total}; drawn: {drawn} (--run all|N to choose)"]
    lines += [f"run {run.number}: {run.sampling} (docs/report.md, \"Long runs\")"
              for run in report.runs if run.sampling]
    if len(report.run_starts) > 1:
        lines.append("run starts (dashed lines): " + ", ".join(
            f"run {number} at step {step}" for step, number in report.run_starts))
    if report.peak:
        lines.append(f"peak: {report.peak}")
    if report.caveat:
        lines.append(f"caveat: {report.caveat}")
    lines += [f"caveat: {line}" for _, line in report.impossible]
    if report.no_mfu:
        lines.append(report.no_mfu)
    if report.invalid:
        lines.append("invalid values (not drawn):")
        lines += [f"  {what}" for what in report.invalid]
    return lines + skipped_lines(report.log)


def _compose(report: Report, panel_lines: Callable[[Panel, Report, Any], List[str]],
             axis: bool) -> str:
    """The head, each panel's lines, (the x axis,) the diagnosis, what is missing."""
    lines = head(report)
    for panel in PANELS:
        data = report.panel(panel.name)
        if data is not None:
            lines += panel_lines(panel, report, data)
    if axis and report.steps:
        lines.append(f"x axis: steps {report.steps[0]}..{report.steps[-1]} (the logged steps; "
                     f"ticks at {', '.join(map(str, axis_ticks(report)))})")
    if report.diagnosis:
        lines.append(report.diagnosis)
    if report.missing and not axis:   # the summary: one line for what cannot be drawn
        lines.append("missing: " + "; ".join(report.missing))
    else:
        lines += [f"missing: {what}" for what in report.missing]
    return "\n".join(lines)


def numbers_text(report: Report) -> str:
    """Every number drawn, one ``step=N key=value ...`` line per step and panel."""
    return _compose(report, lambda panel, r, data: panel.text(r, data), axis=True)


def summary_text(report: Report) -> str:
    """What a person reads: the head, each panel's latest figures rounded, the
    diagnosis and what is missing (every number drawn: :func:`numbers_text`)."""
    return _compose(report, lambda panel, r, data: panel.summary(r, data), axis=False)
