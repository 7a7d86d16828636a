"""One rank's row of an aggregation, from its tracker's window figures.

A tracker's figures (:func:`mfu_tracker.timing._figures.window_figures`)
cover the devices and model-parallel ranks it was told about; the row a rank
contributes to the all-gather (:class:`~._row.RankFigures`) holds its
*share*, so summing rows over ranks counts each model replica once
(``Tracker``, "Parallel degrees"). The row's fields come from the figures by
three rules:

* the step record (``_C.STEP_FIELDS``): each field's sum over the window per
  second of it, / the model-parallel degree (a per-step field: its sum per
  step); no ratio is carried, each is formed again from these sums by the
  one formula;
* copied: the window's counts and times, ``net_utilization``,
  ``comm_overlap``; per phase: ``phase_<name>_s`` from the window's
  ``phase_s``; peaks / the model-parallel degree;

and the rest from the rank itself: its rank, its interval since the previous
aggregation, its window-edge readings (:mod:`mfu_tracker.device._hardware`), its
measured peak, and the model FLOPs of the steps since its previous logged
``metrics()`` (the job ledger's interval).
"""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

from ..timing._totals import FIELDS, StepSums
from ..timing._waterfall import PHASES
from ._row import TELEMETRY_FIELDS, RankFigures, comm_families

__all__ = ["rank_row"]

#: Row fields taken from the figures unchanged.
COPIED = ("steps", "window_s", "step_time_s", "step_time_min_s", "step_time_max_s",
          "net_utilization", "comm_overlap")


def _share(value: Optional[float], model_parallel: int) -> Optional[float]:
    """A rank's share of a replica's figure (None stays None)."""
    return None if value is None else float(value) / model_parallel


def _per(total: Optional[float], divisor: Optional[float]) -> Optional[float]:
    """``total / divisor``, None when either is unknown or the divisor is not > 0."""
    return None if total is None or divisor is None or not divisor > 0 else total / divisor


def window_sums(figures: Mapping[str, Any], model_parallel: int) -> StepSums:
    """The window's record as a row carries it: each field's sum per second of
    the window, this rank's share (a per-step field: its sum per step)."""
    window_s, steps = figures["window_s"], figures["steps"]
    return StepSums(**{
        f.name: _per(figures.get(f.name), float(steps)) if f.per_step
        else _share(_per(figures.get(f.name), window_s), model_parallel)
        for f in FIELDS})


def rank_row(figures: Mapping[str, Any], *, rank: int, interval_s: Optional[float],
             interval_steps: int, num_devices: int, model_parallel: int,
             peak_bytes_per_sec: Optional[float], measured_flops_per_sec: Optional[float],
             readings: Mapping[str, float], comm_observed: bool,
             ledger_model_flops: Optional[float]) -> RankFigures:
    """This rank's row (see the module doc).

    ``peak_bytes_per_sec``: the memory bandwidth of every device the figures
    cover (per device x ``num_devices`` x ``model_parallel``), None when
    unknown. ``measured_flops_per_sec``: the measured peak of this process's
    ``num_devices`` devices (not shared). ``ledger_model_flops``: the model
    FLOPs of the steps in the ledger's interval, None when unknown.
    """
    mp = model_parallel
    row: Dict[str, Any] = {name: figures.get(name) for name in COPIED}
    phases = figures.get("phase_s", {})
    row.update({f"phase_{name}_s": phases.get(name) for name in PHASES})
    row.update({key: readings.get(key) for key in TELEMETRY_FIELDS})
    return RankFigures(
        rank=rank,
        boundaries=int(figures["boundaries"]),
        sums=window_sums(figures, mp),
        peak_flops_per_sec=_share(figures["peak_flops_per_sec"], mp),
        peak_bytes_per_sec=_share(peak_bytes_per_sec, mp),
        num_devices=num_devices,
        model_parallel=mp,
        interval_s=interval_s,
        interval_steps=interval_steps,
        measured_flops_per_sec=measured_flops_per_sec,
        comm_observed=1.0 if comm_observed else None,
        comm=comm_families(figures),
        ledger_model_flops=_share(ledger_model_flops, mp),
        **row,
    )
