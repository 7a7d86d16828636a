"""One rank's row of an aggregation, from its tracker's window figures.

A tracker's figures (:func:`mfu_tracker.timing._figures.window_figures`)
cover the devices and model-parallel ranks it was told about; the row a rank
contributes to the all-gather (:class:`~._figures.RankFigures`) holds its
*share*: rates and peaks divided by the model-parallel degree, so summing
rows over ranks counts each model replica once (``Tracker``, "Parallel
degrees"). The row's fields come from the figures by three rules:

* copied: the window's counts and times, ``mfu``, ``mfu_mixed``,
  ``mfu_language``, ``net_utilization``, ``comm_overlap``;
* shared: rates and peaks / the model-parallel degree; HFU, MBU and the
  over-compute share turned back into rates (ratio x ceiling) first;
* per phase: ``phase_<name>_s`` from the window's ``phase_s``.

and the rest from the rank itself: its rank, its interval since the previous
aggregation, its window-edge readings (:mod:`mfu_tracker.device._hardware`), its
measured peak, and the model FLOPs of the steps since its previous logged
``metrics()`` (the job ledger's interval).
"""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

from ..timing._waterfall import PHASES
from ._figures import TELEMETRY_FIELDS, RankFigures, comm_families

__all__ = ["rank_row"]

#: Row fields taken from the figures unchanged.
COPIED = ("steps", "window_s", "step_time_s", "step_time_min_s", "step_time_max_s", "mfu",
          "mfu_mixed", "mfu_language", "net_utilization", "comm_overlap")
#: Row fields that are the figure of the same name / the model-parallel degree.
SHARED = ("achieved_flops_per_sec", "tokens_per_sec", "peak_flops_per_sec")
#: Row rate fields made from a utilization figure x its ceiling, then shared:
#: (row field, figure, ceiling: "flops" = the peak, "bytes" = the bandwidth).
FROM_RATIOS = (("executed_flops_per_sec", "hfu", "flops"),
               ("achieved_bytes_per_sec", "mbu", "bytes"),
               ("overcompute_flops_per_sec", "overcompute", "flops"))


def _share(value: Optional[float], model_parallel: int) -> Optional[float]:
    """A rank's share of a replica's figure (None stays None)."""
    return None if value is None else float(value) / model_parallel


def _times(ratio: Optional[float], ceiling: Optional[float]) -> Optional[float]:
    """A utilization back to its rate: ratio x ceiling (None when either is)."""
    return None if ratio is None or ceiling is None else float(ratio) * ceiling


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
    ceilings = {"flops": figures["peak_flops_per_sec"], "bytes": peak_bytes_per_sec}
    row: Dict[str, Any] = {name: figures.get(name) for name in COPIED}
    row.update({name: _share(figures[name], mp) for name in SHARED})
    row.update({field: _share(_times(figures.get(ratio), ceilings[ceiling]), mp)
                for field, ratio, ceiling in FROM_RATIOS})
    phases = figures.get("phase_s", {})
    row.update({f"phase_{name}_s": phases.get(name) for name in PHASES})
    row.update({key: readings.get(key) for key in TELEMETRY_FIELDS})
    return RankFigures(
        rank=rank,
        boundaries=int(figures["boundaries"]),
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
