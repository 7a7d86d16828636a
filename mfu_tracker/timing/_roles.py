"""A post-training step's roles, as figures: each role's MFU, MBU, tokens/s
and share of the wall time, the wait, and the job's end-to-end MFU.

The roles are declared once in the C core (``MFU_ROLES``,
``csrc/core/steps/step_fields.h``; ``_C.ROLES``): each is four fields of the step
record -- ``<role>_flops``, ``<role>_bytes``, ``<role>_tokens``, ``<role>_s``
-- summed over the window like every other field; ``wait_s`` (seconds of the
step no role ran) is a field with its own waterfall loss, ``wait``, and
``wait_ratio`` and each ``<role>_time_share`` are rows of the one formula's
ratios. This module forms what is over a role's own seconds: a role's MFU is
its model FLOPs / the seconds it ran / the peak, by the one formula
(``_C.form_figures``), against the tracker's ceilings. Conventions:
``docs/post-training.md``.

Units: FLOP/s, bytes/s, tokens/s, seconds; None where unavailable.
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Dict, Mapping, Optional, Tuple

from .._native import _C

__all__ = ["ROLES", "role_figures"]

#: The roles' names, in the record's order.
ROLES: Tuple[str, ...] = tuple(name for name, _ in _C.ROLES)

#: (role, figure) already warned about a value above 1: once per process.
_WARNED: set = set()


def _warn_above_one(role: str, figures: Dict[str, Any]) -> None:
    for name in ("mfu", "mbu"):
        value = figures[name]
        if value is not None and value > 1.0 and (role, name) not in _WARNED:
            _WARNED.add((role, name))
            warnings.warn(f"mfu_tracker: role {role} {name} {value:.3f} > 1: the peak or the "
                          "role's count is wrong; the value is reported unclamped",
                          RuntimeWarning, stacklevel=4)


def _known(value: Any) -> bool:
    return value is not None and not math.isnan(value)


def _one_role(window: Mapping[str, Any], role: str, ceilings: Dict[str, Any],
              steps: int) -> Dict[str, Any]:
    seconds = window[f"{role}_s"]
    formed: Dict[str, Any] = _C.form_figures({"model_flops": window.get(f"{role}_flops"),
                              "param_bytes": window.get(f"{role}_bytes"),
                              "num_tokens": window.get(f"{role}_tokens")},
                             seconds, **ceilings)
    _warn_above_one(role, formed)
    return {
        "mfu": formed["mfu"], "mbu": formed["mbu"], "tokens_per_sec": formed["tokens_per_sec"],
        "achieved_flops_per_sec": formed["achieved_flops_per_sec"],
        "achieved_bytes_per_sec": formed["achieved_bytes_per_sec"],
        "time_share": window.get(f"{role}_time_share"),
        "seconds_per_step": seconds / steps,
    }


def role_figures(window: Mapping[str, Any], *, peak_flops_per_sec: Optional[float],
                 peak_bytes_per_sec: Optional[float]) -> Dict[str, Any]:
    """The role figures of a window's summary (``window``: each field's sum,
    ``window_s``, ``steps``, the ratios), against the ceilings over every
    device the tracker covers (peak FLOP/s and bytes/s x ``num_gpus``; None:
    unknown). ``{}`` when no role ran in the window.

    Gives ``roles`` ({role: {mfu, mbu, tokens_per_sec, achieved_flops_per_sec,
    achieved_bytes_per_sec, time_share, seconds_per_step}}, every role that
    ran: its seconds known and > 0) and ``mfu_end_to_end`` (every role's
    model FLOPs / the window's wall time / the peak: the wait and the
    scheduling between roles count against it).
    """
    steps = window.get("steps") or 0
    ran = [role for role in ROLES if _known(window.get(f"{role}_s")) and window[f"{role}_s"] > 0]
    if not steps or not ran:
        return {}
    ceilings = {"peak_flops_per_sec": peak_flops_per_sec, "peak_bytes_per_sec": peak_bytes_per_sec}
    out: Dict[str, Any] = {"roles": {role: _one_role(window, role, ceilings, steps)
                                     for role in ran}}
    flops = [window.get(f"{role}_flops") for role in ROLES if _known(window.get(f"{role}_s"))]
    total = math.fsum(flops) if all(_known(f) for f in flops) else None
    out["mfu_end_to_end"] = _C.form_figures({"model_flops": total}, window["window_s"],
                                            **ceilings)["mfu"]
    return out
