"""A step tracker's figures over its window: the one place they are gathered.

The step engine (``_C.StepTracker``, ``csrc/core/steps/steps.h``) keeps one record
per step and forms every figure in C, by the one formula of every ratio
(``csrc/core/steps/stats.h``), from the window's sums -- or from the window
totals a caller gives (:class:`~._totals.StepSums`): each field's sum, MFU,
HFU, MBU, tokens/s, ``mfu_mixed``, ``mfu_language``, the over-compute share,
``mfu_vs_measured`` and, when a phase of the waterfall was marked, the
waterfall's shares (``mfu_lost``, :mod:`._waterfall`). Beside its summary
this adds:

* when phases were marked in the window, their seconds per step
  (``phase_s``, the kinds of communication summed into ``communication``);
* when the tracker observes its communication, the window's bytes, exposed
  seconds, bus bandwidth, net utilization and overlap per kind.

Units: seconds, FLOPs, FLOP/s; a figure that is unavailable is None.
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Protocol

from .._native import _C
from ._totals import NO_TOTALS, StepSums
from ._waterfall import split_communication

__all__ = ["CommunicationCheck", "window_figures"]

#: The communication figures copied from the step engine's ``comm()``.
COMM_FIGURES = ("comm_bytes", "comm_busbw_gbs", "net_utilization", "comm_overlap")


class CommunicationCheck(Protocol):
    """What observes the tracker's communication checks the figures
    (:mod:`mfu_tracker.distributed._comm_observer`): one warning for a
    figure it cannot stand behind."""

    def check(self, figures: Dict[str, Any]) -> None: ...


def window_figures(engine: Any, totals: StepSums = NO_TOTALS, *,
                   comm: Optional[CommunicationCheck] = None) -> Dict[str, Any]:
    """The figures of ``engine``'s window (a ``_C.StepTracker``).

    ``totals``: window totals given at logging time (each replaces the
    window's own). ``comm``: the communication observer, when the tracker
    has one.
    """
    out: Dict[str, Any] = (_C.StepTracker.summary(engine, **totals.kwargs()) if totals
                           else _C.StepTracker.summary(engine))
    # The summary's phases are the engine's, one per collective kind; the
    # badput phases left the step (the ledger books them, not the
    # waterfall): split_communication reports the step's phases only.
    phases, comm_s = split_communication(out.pop("phase_s"))
    if phases:
        out["phase_s"] = phases
    if comm is not None:
        window = _C.StepTracker.comm(engine)
        if window["steps"]:
            out["comm_s"] = comm_s
            for key in COMM_FIGURES:
                out[key] = window[key]
            comm.check(out)
    return out
