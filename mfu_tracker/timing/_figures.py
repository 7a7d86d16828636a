"""A step tracker's figures over its window: the one place they are formed.

The step engine (``_C.StepTracker``, ``csrc/core/steps/steps.h``) keeps one record
per step and forms every ratio in C from the window's records -- or from the
window totals a caller gives (:class:`~._totals.WindowTotals`): MFU, HFU,
MBU, tokens/s, ``mfu_mixed``, ``mfu_language``, the over-compute share.
Beside its summary this adds what is formed from it:

* ``mfu_vs_measured``: model FLOP/s over a measured GEMM peak;
* when phases were marked in the window, their seconds per step
  (``phase_s``) and the waterfall (``mfu_lost``, :mod:`._waterfall`);
* when the tracker observes its communication, the window's bytes, exposed
  seconds, bus bandwidth, net utilization and overlap per kind.

Units: seconds, FLOPs, FLOP/s; a figure that is unavailable is None.
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Protocol

from .._native import _C
from ._totals import NO_TOTALS, WindowTotals
from ._waterfall import split_communication, waterfall

__all__ = ["CommunicationCheck", "window_figures"]

#: The communication figures copied from the step engine's ``comm()``.
COMM_FIGURES = ("comm_bytes", "comm_busbw_gbs", "net_utilization", "comm_overlap")


class CommunicationCheck(Protocol):
    """What observes the tracker's communication checks the figures
    (:mod:`mfu_tracker.distributed._comm_observer`): one warning for a
    figure it cannot stand behind."""

    def check(self, figures: Dict[str, Any]) -> None: ...


def window_figures(engine: Any, totals: WindowTotals = NO_TOTALS, *,
                   measured_flops_per_sec: Optional[float] = None,
                   comm: Optional[CommunicationCheck] = None) -> Dict[str, Any]:
    """The figures of ``engine``'s window (a ``_C.StepTracker``).

    ``totals``: window totals given at logging time (each replaces the
    window's own). ``measured_flops_per_sec``: the measured peak of all the
    devices the figures cover (FLOP/s), for ``mfu_vs_measured``. ``comm``:
    the communication observer, when the tracker has one.
    """
    out: Dict[str, Any] = (_C.StepTracker.summary(engine, **totals.summary_kwargs()) if totals
                           else _C.StepTracker.summary(engine))
    achieved = out["achieved_flops_per_sec"]
    if measured_flops_per_sec and achieved is not None:
        out["mfu_vs_measured"] = achieved / measured_flops_per_sec
    # The badput phases left the step (the ledger books them, not the
    # waterfall): split_communication reports the step's phases only.
    phases, comm_s = split_communication(_C.StepTracker.phases(engine)["phase_s"])
    if phases:
        out["phase_s"] = phases
        out["mfu_lost"] = waterfall(out["mfu"], out["hfu"], out["step_time_s"], phases,
                                    out.get("overcompute"))
    if comm is not None:
        window = _C.StepTracker.comm(engine)
        if window["steps"]:
            out["comm_s"] = comm_s
            for key in COMM_FIGURES:
                out[key] = window[key]
            comm.check(out)
    return out
