"""``mfu_tracker.presets``, the documented path of the full-size model configurations.

The code and the JSON files live in :mod:`mfu_tracker.flops.presets`; this
module gives the same objects.
"""
from .flops.presets import *  # noqa: F403 -- the same objects
from .flops.presets import __all__, resolve_model_config  # noqa: F401 -- and the same list
