"""``mfu_tracker.optim``, the documented path of :class:`MFUOptimizerWrapper`.

The code lives in :mod:`mfu_tracker.integrations.optim` (importing it imports
torch); this module gives the same objects.
"""
from .integrations.optim import *  # noqa: F403 -- the same objects
from .integrations.optim import StepResult, __all__  # noqa: F401 -- and the same list
