"""``mfu_tracker.gpu``, the documented path of the peak table's front.

The code lives in :mod:`mfu_tracker.peaks`; this module gives the same objects.
"""
from .peaks import *  # noqa: F403 -- the same objects
from .peaks import __all__  # noqa: F401 -- and the same list
