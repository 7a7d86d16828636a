"""The step tracker: end-to-end MFU of a training run, one call per step.

Owns :class:`Tracker` (:mod:`._tracker`: step boundaries and phases on one
clock, the window's figures, their aggregation across ranks) and its metrics
log (:mod:`._metrics_log`: one JSON line per ``metrics()``).

Layer 5 (peaks -> flops -> timing -> distributed -> tracker -> integrations
-> cli). May import: every layer below it.
"""
from ._tracker import Tracker

__all__ = ["Tracker"]
