"""Time, and the figures of a window of it.

Owns the clocks (:mod:`._clock`: GPU events on the device's stream, or the CPU
clock), ``track()`` and the one-shot utilization arithmetic (:mod:`._track`),
a generation's prefill and decode figures (:mod:`._generation`),
the waterfall's definitions (:mod:`._waterfall`), a step tracker's window
figures (:mod:`._figures`) and the window totals given at logging time
(:mod:`._totals`), and the one table of metric keys with its formatter
(:mod:`._metrics`). What the device reports is :mod:`mfu_tracker.device`'s;
the kernel breakdown of a profiled step, :mod:`mfu_tracker.breakdown`'s.

Layer 3 (peaks -> flops -> timing -> device -> breakdown -> distributed -> job
-> tracker -> integrations -> agent -> cli). May import: the foundation and
``peaks``.
"""
from ._generation import *  # noqa: F403 -- generation_utilization, GenerationUtilization
from ._generation import __all__ as _generation_all
from ._track import *  # noqa: F403 -- the names _track.__all__ lists
from ._track import __all__ as _track_all

__all__ = [*_track_all, *_generation_all]
