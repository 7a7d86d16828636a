"""The kernel breakdown: where one profiled step's time went, by kernel class.

Owns the sampled profiled step (:mod:`._step_profile`: which steps, the
profiler and FLOP counter over exactly one step, the rules that keep it out
of the user's own profiler), the trace's events (:mod:`._trace`: from the
profiler in memory or a Kineto JSON), their reduction to a breakdown
(:mod:`._reduce`) and the breakdown itself, its record and figures
(:mod:`._record`: :class:`Breakdown`, the type of ``Tracker.last_breakdown``).

Layer 5 (peaks -> flops -> timing -> device -> breakdown -> distributed -> job
-> tracker -> integrations -> agent -> cli). May import: the foundation and
``flops`` (the FLOP counter of the profiled step).
"""
from ._record import Breakdown

__all__ = ["Breakdown"]
