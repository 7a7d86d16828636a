"""The one validation vocabulary of the Python layer.

Every public function and constructor checks its arguments with these
helpers, so a bad value gets the same kind of error everywhere, naming the
argument: ``TypeError`` for a wrong type, ``ValueError`` for a value out of
range. Bounds are the C core's (``csrc/core/mfu_limits.h``, exported as
``_C.LIMIT_*``); none is written here.
"""
from __future__ import annotations

import math
from typing import Any, Optional

from . import _C

#: Bounds shared with the C core (csrc/core/mfu_limits.h).
WINDOW_MAX: int = _C.LIMIT_WINDOW_MAX
WARMUP_MAX: int = _C.LIMIT_WARMUP_MAX
NUM_GPUS_MAX: int = _C.LIMIT_NUM_GPUS_MAX
PARALLEL_DEGREE_MAX: int = _C.LIMIT_PARALLEL_DEGREE_MAX
COUNTERS_MAX: int = _C.LIMIT_COUNTERS_MAX


def check_optional_number(value: Any, argument: str, low: float) -> Optional[float]:
    """``value`` as a float (None passes through): a finite number >= ``low``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{argument} must be a number or None, not {type(value).__name__}")
    if not (math.isfinite(value) and value >= low):
        raise ValueError(f"{argument} must be a finite number >= {low:g}, got {value!r}")
    return float(value)


def check_int(value: Any, argument: str, low: int, high: Optional[int] = None) -> int:
    """``value``: an int (not a bool) >= ``low`` (and <= ``high`` if given)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{argument} must be an int, not {type(value).__name__}")
    if high is not None and not low <= value <= high:
        raise ValueError(f"{argument} must be between {low} and {high}, got {value!r}")
    if value < low:
        raise ValueError(f"{argument} must be >= {low}, got {value!r}")
    return value


def check_device(device: Any, argument: str = "device") -> Any:
    """``device`` (a torch.device, "cuda:1"-style str or CUDA index) as a
    torch.device; TypeError / ValueError naming ``argument`` otherwise."""
    import torch

    if isinstance(device, torch.device):
        return device
    if isinstance(device, bool) or not isinstance(device, (str, int)):
        raise TypeError(f"{argument} must be a torch.device, str, int or None, not {type(device).__name__}")
    try:
        return torch.device("cuda", device) if isinstance(device, int) else torch.device(device)
    except (RuntimeError, ValueError) as exc:  # torch's message does not name the argument
        raise ValueError(f"{argument}: not a device: {device!r} ({exc})") from None
