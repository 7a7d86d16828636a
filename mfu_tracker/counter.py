"""``mfu_tracker.counter``, the documented path of the exact FLOP counter.

The code lives in :mod:`mfu_tracker.flops.counter`; this module gives the same objects.
"""
from .flops.counter import *  # noqa: F403 -- the same objects
from .flops.counter import __all__  # noqa: F401 -- and the same list
