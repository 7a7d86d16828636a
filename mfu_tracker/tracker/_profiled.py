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

from typing import Any

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
        result = _C.StepTracker.step(self, *args, **kwargs)
        if self._profiler is not None:
            self._profiler.boundary(self)
        if self._moe is not None:
            self._moe.boundary(self.global_step)
        return result


PROFILED.append(ProfiledTracker)
