"""Time, and the figures of a window of it.

Owns the clocks (:mod:`._clock`: GPU events on the device's stream, or the CPU
clock), ``track()`` and the one-shot utilization arithmetic (:mod:`._track`),
the waterfall's definitions (:mod:`._waterfall`), device telemetry
(:mod:`._telemetry`) and the readers a tracker reads at window edges
(:mod:`._edges`), a step tracker's window figures (:mod:`._figures`) and the
window totals given at logging time (:mod:`._totals`), and the one table of
metric keys with its formatter (:mod:`._metrics`).

Layer 3 (peaks -> flops -> timing -> distributed -> job -> tracker -> integrations
-> cli). May import: the foundation and ``peaks``.
"""
from ._track import *  # noqa: F403 -- the names _track.__all__ lists
from ._track import __all__  # noqa: F401
