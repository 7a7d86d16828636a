"""A :class:`~._tracker.Tracker` that profiles chosen steps (``profile_steps``).

``Tracker(profile_steps=...)`` gives an instance of this subclass
(``Tracker.__init__`` sets it once the arguments are checked, finding it in
``_tracker.PROFILED``: the package imports this module):
its ``step()`` is the C boundary, then the step profiler's
(:class:`~mfu_tracker.breakdown._step_profile.StepProfiler`), which closes the
profile of the step that ended and opens one for the step now starting
when it is due. A tracker without ``profile_steps`` keeps ``step()`` in C
alone: profiling costs nothing when it is off.
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
        """``Tracker.step()``, then the profiled step's boundary (never raises)."""
        result = _C.StepTracker.step(self, *args, **kwargs)
        self._profiler.boundary(self)
        return result


PROFILED.append(ProfiledTracker)
