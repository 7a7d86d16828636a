"""``mfu_tracker.utilization``, the documented path of ``track()`` and the one-shot arithmetic.

The code lives in :mod:`mfu_tracker.timing`; this module gives the same objects.
"""
from .timing import *  # noqa: F403 -- the same objects
from .timing import __all__  # noqa: F401 -- and the same list
