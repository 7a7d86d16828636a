"""``mfu_tracker.step``, a compatibility path: ``Tracker`` lives in :mod:`mfu_tracker.tracker`.

``from mfu_tracker.step import Tracker`` (the path the examples and earlier
releases use) keeps working and gives the same class as
``from mfu_tracker import Tracker``.
"""
from .tracker import Tracker

__all__ = ["Tracker"]
