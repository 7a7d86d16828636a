"""The MFU waterfall: where a step's time goes, as fractions of it.

Over a window, let T be the (mean) step period and ideal = model FLOPs /
peak, the time the device would need at its peak; ``mfu`` = ideal / T. The
rest of T is split by the phases the loop marked (``Tracker.phase()``, the
integrations' automatic marks; seconds per step from the step engine,
``csrc/core/base/phases.h``)::

    data           = t_data / T                 (the GPU waited for input)
    communication  = t_communication / T        (exposed, not overlapped: the
                                                 sum of every kind's comm_s)
    pipeline_bubble = t_pipeline_bubble / T     (a pipeline stage waited for
                                                 its neighbours)
    optimizer      = t_optimizer / T
    <field>        = t_field / T                (a per-step field of the step
                                                 record with a loss,
                                                 ``_C.STEP_FIELDS``' ``loss``)
    recompute      = hfu - mfu - overcompute    (needs executed FLOPs)
    compute        = (t_forward + t_backward) / T - mfu - recompute
                                                (kernels below peak, non-matmul work,
                                                 over-compute)
    other          = 1 - mfu - the others       (host / launch bound idle,
                                                 logging, everything unmarked)

so ``mfu + sum(mfu_lost) == 1`` (``other`` closes the sum: the shares'
``math.fsum`` with ``mfu`` is 1). The shares are formed in C, with every
ratio, by the one formula (``csrc/core/steps/stats.h``, ``csrc/core/steps/waterfall.h``):
for a tracker's window by the step engine's summary, across ranks by
:func:`mfu_tracker.distributed._figures.combine`. Nothing is estimated:

* a phase that was never marked in the window has no key, and its time is
  in ``other``;
* ``recompute`` needs HFU (executed FLOPs); without it the key is left out
  and recomputation stays in ``compute``;
* ``overcompute`` is the share of executed FLOPs beyond the model convention
  that are *not* recompute (``FlopCounter``'s over-compute: a kernel
  computing the full square of a causal attention that
  ``causal_attention="half"`` counts half, the math SDPA path) at the peak:
  executed FLOPs stay what ran, so it is inside ``hfu - mfu``, and it is
  booked to ``compute`` (the kernels spent that time below the model's
  useful work), never to ``recompute``. Unknown: 0 (all of ``hfu - mfu``
  is recompute);
* ``compute`` and ``recompute`` need forward or backward marked (the ideal
  time has to be placed somewhere): without, both are left out and ``other``
  holds the compute loss too.

Shares are never clamped: a negative ``compute`` means the ideal time
exceeds the marked forward + backward time (a wrong peak or FLOP count, as
MFU > 1 does).
"""
from __future__ import annotations

import math
from typing import Dict, Mapping, NamedTuple, Optional, Sequence, Tuple

from .._native import _C

#: The phases reported (``{prefix}/phase_s/<name>``), in report order.
#: ``communication`` is exposed communication of every kind: the
#: communication observer (:mod:`mfu_tracker.distributed._comm_observer`)
#: marks each kind's waits, the DDP hook or the loop by hand the rest.
#: ``pipeline_bubble``: a pipeline stage waiting for its neighbours.
PHASES: Tuple[str, ...] = ("data", "forward", "backward", "optimizer", "communication",
                           "pipeline_bubble")

#: The badput phases (docs/goodput.md): work a job does besides training steps --
#: saving a checkpoint, evaluating, compiling. A loop marks them like the
#: phases above (``tracker.phase("checkpoint")``), but their time leaves the
#: step it falls in (the step engine's excluded intervals,
#: ``csrc/core/steps/steps.h``), so they are no share of the waterfall: the job
#: ledger books them (:mod:`mfu_tracker.job`).
BADPUT_PHASES: Tuple[str, ...] = ("checkpoint", "eval", "compile")

#: The waterfall's loss keys (``{prefix}/mfu_lost/<name>``), in report order
#: (the C core's: the phases', the step record's fields', recompute, compute,
#: other).
LOSSES: Tuple[str, ...] = tuple(_C.LOSSES)
#: Each ratio's field in the step record (``_C.RATIOS``).
_FIELD_OF: Dict[str, str] = {ratio.name: ratio.field for ratio in _C.RATIOS}

#: The collective kinds (``{prefix}/comm_s/<kind>``, ``comm_bytes``,
#: ``comm_busbw_gbs``), and the step engine's phase that times each one's
#: exposed seconds (``other``: the hand-marked ``communication`` phase).
COMM_KINDS: Tuple[str, ...] = tuple(_C.comm_kinds())
_KIND_PHASES: Tuple[Tuple[str, str], ...] = tuple(
    (kind, _C.phase_names()[_C.comm_kind_phase(kind)]) for kind in COMM_KINDS)


class SplitPhases(NamedTuple):
    """The reported phases and the collective kinds' exposed seconds."""

    phase_s: Dict[str, float]   # seconds per step of each reported phase
    comm_s: Dict[str, float]    # exposed seconds per step of each kind


def split_communication(phase_s: Mapping[str, float]) -> SplitPhases:
    """The step engine's phase seconds (``StepTracker.phases()``, one phase
    per collective kind) as the reported phases and the kinds' exposed
    seconds, with ``phase_s["communication"]`` the ``math.fsum`` of
    ``comm_s`` (present when any kind was marked)."""
    comm_s = {kind: float(phase_s[phase]) for kind, phase in _KIND_PHASES if phase in phase_s}
    out = {name: float(phase_s[name]) for name in PHASES
           if name in phase_s and name != "communication"}
    if comm_s:
        out["communication"] = math.fsum(comm_s.values())
    return SplitPhases({name: out[name] for name in PHASES if name in out}, comm_s)


def waterfall(mfu: Optional[float], hfu: Optional[float], step_time_s: Optional[float],
              phase_s: Optional[Mapping[str, float]],
              overcompute: Optional[float] = None) -> Optional[Dict[str, float]]:
    """The ``mfu_lost`` shares (fractions of the step period) of given ratios,
    or None when there is no waterfall: MFU unknown, no step time, or no
    phase marked.

    ``phase_s``: seconds per step of each *marked* phase (unmarked phases
    absent), over the same steps as ``mfu`` / ``hfu`` / ``step_time_s``;
    ``overcompute``: the over-compute share over them (None / NaN: 0). The
    one formula forms them (``csrc/core/steps/stats.h``), each ratio given as its
    field's sum over one second against a unit peak.
    """
    if mfu is None or not phase_s or step_time_s is None:
        return None
    sums = {_FIELD_OF["mfu"]: mfu, _FIELD_OF["hfu"]: hfu, _FIELD_OF["overcompute"]: overcompute}
    return _C.form_figures(sums, 1.0, peak_flops_per_sec=1.0, step_s=step_time_s,
                           phase_s=dict(phase_s))["mfu_lost"]


def closing_share(shares: Sequence[float]) -> float:
    """The share x with ``math.fsum(shares + [x]) == 1.0`` exactly: ``1 - sum``,
    moved by fractions of an ulp of 1 where the rounding of ``1 - sum`` leaves the
    total off (``csrc/core/steps/waterfall.h``: found whenever ``1 - sum`` is in [0, 1),
    the rest of a step)."""
    return _C.closing_share(list(shares))


def busy_s(step_time_s: Optional[float], phase_s: Optional[Mapping[str, float]]) -> Optional[float]:
    """A rank's own seconds per step: its step period less its exposed
    communication and its pipeline bubble (the time it waited for its
    peers). None without phases."""
    if step_time_s is None or not phase_s:
        return None
    return (float(step_time_s) - phase_s.get("communication", 0.0)
            - phase_s.get("pipeline_bubble", 0.0))
