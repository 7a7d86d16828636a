"""Ranks: cross-rank aggregation and communication.

Owns the rows every rank contributes and their combination into the job's
figures (:mod:`._figures`: global MFU, per-rank spread, the straggler), the
collective that gathers them (:mod:`._collective`: a dedicated gloo group, a
bounded wait) and the observation of the training's own communication
(:mod:`._comm_hook`: DDP's exposed all-reduce).

Layer 4 (peaks -> flops -> timing -> distributed -> job -> tracker -> integrations
-> cli). May import: the foundation, ``peaks``, ``timing``.
"""
from ._figures import *  # noqa: F403 -- the names _figures.__all__ lists
from ._figures import __all__  # noqa: F401
# and the row's layout and arithmetic, for tests and benchmarks
from ._figures import ROW_FIELDS, ROW_LAYOUT, TELEMETRY_FIELDS, combine  # noqa: F401
