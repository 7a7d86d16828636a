"""The step tracker: end-to-end MFU of a training run, one call per step.

Owns :class:`Tracker` (:mod:`._tracker`: step boundaries and phases on one
clock, the window's figures, their aggregation across ranks, the job
ledger's intervals it logs and the values its Prometheus endpoint serves;
the log's records, its writer and the endpoint are :mod:`mfu_tracker.job`'s).

Layer 6 (peaks -> flops -> timing -> distributed -> job -> tracker -> integrations
-> cli). May import: every layer below it.
"""
from ._tracker import Tracker
from . import _profiled  # noqa: F401 -- registers the profile_steps subclass

__all__ = ["Tracker"]
