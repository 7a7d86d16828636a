"""Argument checks shared by the integrations: each names the argument in
its error (TypeError for a wrong type, ValueError for a value out of range)."""
from __future__ import annotations

import math
from typing import Any, Optional


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
