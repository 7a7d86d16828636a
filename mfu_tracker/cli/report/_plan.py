"""What to draw: the runs chosen, their records in order, the peak and its
caveat, and each panel's data (:data:`.panels.PANELS`)."""
from __future__ import annotations

from typing import List, Optional, Sequence

from ...job._records import Log, Run, peak_disagrees
from ._load import select_runs
from ...peaks._measure import how_far_off
from ...peaks._table import GIVE_A_PEAK
from ._model import LOST, MFU, STEP_TIME, TOKENS, Record, Report, ReportError, number
from .panels import PANELS

__all__ = ["Report", "find_prefix", "plan"]


def find_prefix(records: Sequence[Record]) -> Optional[str]:
    """The metric prefix: ``p`` of the first ``p/mfu`` key (``""`` for a bare
    one); without MFU (no peak), of the first ``p/step_time_s`` or
    ``p/tokens_per_sec`` key."""
    for name in (MFU, STEP_TIME, TOKENS):
        suffix = "/" + name
        for record in records:
            for key in record:
                if key == name:
                    return ""
                if key.endswith(suffix):
                    return key[: -len(suffix)]
    return None


def _no_mfu(report: Report) -> None:
    """Why the report has no MFU, and how to give a peak (one line)."""
    mfu = report.panel("mfu")
    if mfu is not None and mfu.mfu:
        return
    peaks = [run.get("peak_tflops") for run in report.runs if run.record is not None]
    why = ("the run record has no peak (a CPU, or a device the peak table does not know)"
           if peaks and all(number(p) is None for p in peaks)
           else f"the log has no {report.mfu_key} values (a run without a peak?)")
    report.no_mfu = f"no MFU: {why}; {GIVE_A_PEAK}"


def _peak_and_caveat(report: Report, runs: Sequence[Run]) -> None:
    run = runs[-1]
    peak = number(run.get("peak_tflops"))
    if peak is not None:
        report.peak = (f"{peak:.4g} TFLOP/s per device, {run.get('dtype', '?')} "
                       f"({run.get('peak_source', 'unknown')})")
    for check in (c for r in runs for c in r.peak_checks):
        first, again = number(check.get("peak_tflops")), number(check.get("remeasured_tflops"))
        if peak_disagrees(first, again):
            assert first is not None and again is not None   # peak_disagrees: both positive
            against = (f"against {again:.4g} the MFU here reads {how_far_off(again / first)}"
                       if again > first else "the MFU here is against the higher of the two")
            report.caveat = (f"the peak was measured on a busy machine: {first:.4g} TFLOP/s, "
                             f"then {again:.4g} re-measured after training (they differ by more "
                             f"than 25%); {against}")


def _collect(report: Report) -> None:
    """Each panel's data (or why it has none), then the shared x axis."""
    for panel in PANELS:
        data = panel.collect(report)
        if data is None:
            why = panel.absent(report)
            if why:
                report.missing.append(why)
        else:
            report.data[panel.name] = data
    report.steps = sorted({step for panel in PANELS if panel.name in report.data
                           for step in panel.steps(report.data[panel.name])})


def plan(log: Log, prefix: Optional[str] = None, which: str = "last") -> Report:
    """The plan of ``log``'s chosen runs (the package docstring)."""
    runs = select_runs(log, which)
    records: List[Record] = [r for run in runs for r in run.metrics]
    if prefix is None:
        prefix = find_prefix(records)
        if prefix is None:
            raise ReportError(f"no MFU, step time or tokens/s key (<prefix>/{MFU}, "
                              f"<prefix>/{STEP_TIME}, <prefix>/{TOKENS}) in any record: "
                              f"nothing to draw")
    report = Report(prefix, log, runs, invalid=list(log.invalid))
    for run in runs:
        ordered = sorted(run.metrics, key=lambda r: r["step"])
        if ordered:
            report.run_starts.append((ordered[0]["step"], run.number))
        report.points += [(record, run.number) for record in ordered]
    _collect(report)
    if not report.steps:
        raise ReportError(f"no {report.mfu_key}, {report.key(STEP_TIME)}, {report.key(LOST)}/* "
                          f"or per-rank MFU values in the input (prefix {prefix!r}; found: "
                          f"{find_prefix(records)!r})")
    _peak_and_caveat(report, runs)
    _no_mfu(report)
    return report
