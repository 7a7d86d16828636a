"""A :class:`~._tracker.Tracker` that profiles chosen steps (``profile_steps``)
or samples MoE steps (``moe=``, docs/moe.md).

``Tracker(profile_steps=...)`` gives an instance of this subclass
(``Tracker.__init__`` sets it once the arguments are checked, finding it in
``_tracker.PROFILED``: the package imports this module):
its ``step()`` is the C boundary, then the step profiler's
(:class:`~mfu_tracker.breakdown._step_profile.StepProfiler`), which closes the
profile of the step that ended and opens one for the step now starting
when it is due; then the MoE observer's, which reads the step it sampled
and arms the next one. A tracker with neither ``profile_steps`` nor ``moe``
keeps ``step()`` in C alone: profiling and sampling cost nothing when they are off.
"""
from __future__ import annotations

import math
from typing import Any, Dict

from .._native import _C
from ._tracker import PROFILED, Tracker

__all__ = ["ProfiledTracker"]


class ProfiledTracker(Tracker):
    """A Tracker with ``profile_steps`` (see :class:`Tracker`)."""

    __slots__ = ()

    def step(self, *args: Any, **kwargs: Any) -> Any:
        """``Tracker.step()``, then the profiled step's boundary and the
        sampled MoE step's (never raises)."""
        moe = self._moe
        if moe is not None and moe.last is not None and moe.last.wait_s is not None:
            # expert parallelism: the last sampled step's wait for the busiest
            # experts' rank stands for this step's (docs/moe.md)
            kwargs.setdefault("moe_wait_s", moe.last.wait_s)
        if moe is not None and moe.last is not None:
            _book_padding(self, kwargs, moe.last.padded_model_flops)
        result = _C.StepTracker.step(self, *args, **kwargs)
        if self._profiler is not None:
            self._profiler.boundary(self)
        if self._moe is not None:
            self._moe.boundary(self.global_step)
        return result


def _book_padding(tracker: Tracker, kwargs: Dict[str, Any], padded: float) -> None:
    """Book the last sampled MoE step's padded rows as over-compute on this
    step (docs/moe.md, "Padding in HFU and MFU"): only where the tracker was
    told its FLOPs are counted (``model_info={"flops": "counted"}``), whose
    count charges every computed row; an analytic count charges the routed
    tokens only and is left as it is. Model FLOPs lose the padded FLOPs,
    executed FLOPs keep them, over-compute gains them. The padded FLOPs are
    the sampled step's, extrapolated: nothing is read from the device here."""
    config = tracker._config
    if padded <= 0 or (config.model_info or {}).get("flops") != "counted":
        return
    model = kwargs.get("model_flops", config.model_flops)
    over = kwargs.get("overcompute_flops", 0.0)
    if not (_finite(model) and _finite(over) and padded <= model):
        return       # no count to correct (a bad value warns in step()), or not this layout's
    if "model_flops" not in kwargs and "executed_flops" not in kwargs:
        # the per-step default's executed FLOPs pair with its model FLOPs
        # only while the boundary gives neither: keep them explicitly
        if config.executed_flops is not None:
            kwargs["executed_flops"] = config.executed_flops
    kwargs["model_flops"] = model - padded
    kwargs["overcompute_flops"] = over + padded


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and \
        math.isfinite(value) and value >= 0


PROFILED.append(ProfiledTracker)
