"""The rank row's layout 5, read into today's :class:`~._row.RankFigures`'s
arguments.

Layout 5 carried a rank's window as rates and ratios: model / executed /
over-compute FLOP/s, bytes/s and tokens/s (the rank's share), and ``mfu``,
``mfu_mixed`` and ``mfu_language`` as ratios. Today's row carries the step
record's sums per second (:mod:`._row`); this reader turns a layout-5 row
into them -- the one place a ratio becomes a rate again, for rows written by
the previous version only:

* ``ideal_s`` per second = ``mfu_mixed`` x ``num_devices`` (``mfu_mixed`` was
  the ideal seconds per second over the rank's devices);
* ``language_flops`` per second = ``mfu_language`` x ``peak_flops_per_sec``
  (the rank's share of the peak, as ``mfu`` was);
* ``mfu`` is dropped: it is formed from the model FLOP/s and the peak.
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Tuple

from ..timing._totals import StepSums

__all__ = ["LAYOUT_5_FIELDS", "read_v5"]

#: The collective kinds layout 5 was written with, in its order: frozen, so
#: a kind the C table gains later never moves this layout's columns.
KINDS_5: Tuple[str, ...] = ("all_gather", "reduce_scatter", "all_reduce", "all_to_all",
                            "broadcast", "p2p", "other")

#: Layout 5, in order (its first value is 5.0).
LAYOUT_5_FIELDS: Tuple[str, ...] = (
    "layout", "rank", "boundaries", "steps", "window_s", "step_time_s", "step_time_min_s",
    "step_time_max_s", "achieved_flops_per_sec", "executed_flops_per_sec",
    "achieved_bytes_per_sec", "tokens_per_sec", "peak_flops_per_sec", "peak_bytes_per_sec",
    "num_devices", "model_parallel", "interval_s", "interval_steps", "mfu",
    "phase_data_s", "phase_forward_s", "phase_backward_s", "phase_optimizer_s",
    "phase_communication_s", "mfu_mixed", "measured_flops_per_sec", "power_w",
    "sm_clock_mhz", "clock_ratio", "throttled", "mfu_language", "ledger_model_flops",
    "phase_pipeline_bubble_s", "comm_observed",
    *(f"comm_bytes_{kind}" for kind in KINDS_5),
    *(f"comm_s_{kind}" for kind in KINDS_5),
    *(f"comm_busbw_gbs_{kind}" for kind in KINDS_5),
    "net_utilization", "comm_overlap", "overcompute_flops_per_sec",
)

#: Layout 5's rate columns and the step record's field each one is per second.
_RATES = (("achieved_flops_per_sec", "model_flops"),
          ("executed_flops_per_sec", "executed_flops"),
          ("achieved_bytes_per_sec", "param_bytes"),
          ("tokens_per_sec", "num_tokens"),
          ("overcompute_flops_per_sec", "overcompute_flops"))
_RATIOS = ("mfu", "mfu_mixed", "mfu_language")
#: Layout 5's per-kind communication families (``{family}_{kind}``).
_FAMILIES = ("comm_bytes", "comm_s", "comm_busbw_gbs")
_INTS = ("rank", "boundaries", "steps", "num_devices", "model_parallel", "interval_steps")


def _opt(value: float) -> Optional[float]:
    return None if math.isnan(value) else value


def _times(ratio: Optional[float], factor: Optional[float]) -> Optional[float]:
    return None if ratio is None or factor is None else ratio * factor


def read_v5(row: List[float]) -> Dict[str, Any]:
    """Today's RankFigures arguments of a layout-5 row (``comm``: ``{family:
    {kind: value}}``). ValueError for a row of another length."""
    if len(row) != len(LAYOUT_5_FIELDS):
        raise ValueError(f"a layout-5 rank row has {len(LAYOUT_5_FIELDS)} fields, not "
                         f"{len(row)}")
    v = {name: _opt(value) for name, value in zip(LAYOUT_5_FIELDS, row)}
    comm: Dict[str, Dict[str, float]] = {family: {} for family in _FAMILIES}
    kwargs: Dict[str, Any] = {}
    rates = {name for name, _ in _RATES}
    for name in LAYOUT_5_FIELDS[1:]:
        family = next((f for f in _FAMILIES if name.startswith(f + "_")
                       and name[len(f) + 1:] in KINDS_5), None)
        if family is not None:
            if v[name] is not None:
                comm[family][name[len(family) + 1:]] = v[name]  # type: ignore[assignment]
        elif name in _INTS:
            kwargs[name] = int(v[name] or 0)
        elif name not in rates and name not in _RATIOS:
            kwargs[name] = v[name]
    sums = {field: v[column] for column, field in _RATES}
    sums["ideal_s"] = _times(v["mfu_mixed"], float(kwargs["num_devices"]))
    sums["language_flops"] = _times(v["mfu_language"], v["peak_flops_per_sec"])
    return dict(kwargs, sums=StepSums(**sums), comm=comm)
