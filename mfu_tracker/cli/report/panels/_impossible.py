"""Figures that cannot be: MFU above 1, a negative share of the step time.

Neither is clamped (docs/conventions.md): each is drawn as logged, and the
report says so in one ``caveat:`` line naming the likely cause, read from the
run record's ``peak_source``. The picture marks them (the MFU panel's line at
1, the waterfall's hatched bars)."""
from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

from ....peaks._table import PEAK_ENV_VAR
from .._model import Report

__all__ = ["IMPOSSIBLE_COLOR", "mfu_above_one", "negative_shares", "peak_cause"]

#: How the picture marks an impossible figure.
IMPOSSIBLE_COLOR = "tab:red"

#: Why MFU reads above 1, by where the peak came from (the run record's peak_source).
_CAUSES = {
    "measured": ("the peak was measured (a GEMM benchmark), and a GEMM timed while other work "
                 "held the cores reads low: measure it again on an idle machine, or give the "
                 f"peak (peak_tflops= or {PEAK_ENV_VAR})"),
    "user": (f"the peak given (peak_tflops= or {PEAK_ENV_VAR}) is below what the device does, "
             "or the model FLOPs are more than the step did"),
    "datasheet": ("the model FLOPs are more than the step did (a count taken twice, a formula "
                  "counting more than ran), or the device is not the table's row "
                  "(`mfu-tracker gpus --detect`)"),
}

#: Why a share of the step time reads below 0, by cause.
_NEGATIVE = {
    "compute": "the ideal time (model FLOPs / peak) is longer than the marked forward + "
               "backward, which MFU above 1 also means",
    "other": "MFU and the marked phases add up to more than the step (phases that overlap, or "
             "one marked across a step boundary)",
    "recompute": "HFU is below MFU: the executed FLOPs given are fewer than the model FLOPs",
}


def peak_cause(report: Report) -> str:
    """The likely cause of MFU above 1, from the last run's peak source."""
    source = report.runs[-1].get("peak_source") if report.runs else None
    return _CAUSES.get(source, "the peak is too low for the device, or the model FLOPs are "
                               "more than the step did")


def mfu_above_one(report: Report, points: Sequence[Tuple[int, float]]) -> None:
    """One caveat for the logged MFU values above 1 (none: nothing): its
    label in the picture and its printed line."""
    above = [(step, value) for step, value in points if value > 1.0]
    if not above:
        return
    step, value = max(above, key=lambda point: point[1])
    report.impossible.append((
        f"MFU above 1 ({value:.3f} at step {step})",
        f"MFU above 1 cannot be (it is drawn as logged, never clamped): {value:.3f} at step "
        f"{step}, above 1 at {len(above)} of {len(points)} logged steps; likely cause: "
        f"{peak_cause(report)}"))


def negative_shares(report: Report, rows: Sequence[Tuple[int, Dict[str, float]]],
                    base: str) -> None:
    """One caveat per waterfall cause that reads below 0 at some step
    (``rows``: (step, {key: share}); ``base``: the loss keys' ``{p}/mfu_lost/``)."""
    below: Dict[str, List[Tuple[int, float]]] = {}
    for step, shares in rows:
        for key, value in shares.items():
            if key.startswith(base) and value < 0:
                below.setdefault(key[len(base):], []).append((step, value))
    for cause, points in below.items():
        step, value = min(points, key=lambda point: point[1])
        why = _NEGATIVE.get(cause, "a time cannot be negative: the figures it is made from "
                                   "disagree")
        tail = f"; likely cause: {peak_cause(report)}" if cause == "compute" else ""
        report.impossible.append((
            f"{cause} below 0 ({value:.3f} at step {step})",
            f"a negative share of the step time cannot be: {cause} {value:.3f} at step {step} "
            f"(below 0 at {len(points)} of {len(rows)} bars): {why}{tail}"))

