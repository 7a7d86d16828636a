"""Window totals: a window's work given at logging time, as one value.

``Tracker.metrics()``, ``aggregate()`` and ``rank_figures()`` take the same
six keywords -- model / executed / over-compute / language FLOPs, tokens, and
the ideal seconds of mixed precision -- for a loop that knows only a window's
work when it logs (a loop that knows a step's books it onto the step,
``Tracker.book()``). They are checked once, here, into a :class:`WindowTotals`
that the figures (:mod:`._figures`) hand to the step engine's summary, where
each replaces the window's own total and every ratio is formed from it.

Units: FLOPs, tokens, seconds. A bad total (negative, NaN, not a number) is
one warning and NaN -- unknown, its figures left out -- never an exception:
under a process group an exception on one rank would leave the others
waiting in the collective.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, fields
from typing import Any, Dict, Optional, Tuple

from .._validate import check_optional_number

__all__ = ["WindowTotals", "NO_TOTALS"]


@dataclass(frozen=True)
class WindowTotals:
    """The totals given for a window (None: not given; NaN: given, unknown)."""

    model_flops: Optional[float] = None
    executed_flops: Optional[float] = None
    num_tokens: Optional[float] = None
    ideal_s: Optional[float] = None
    language_flops: Optional[float] = None
    overcompute_flops: Optional[float] = None

    @classmethod
    def given(cls, *, stacklevel: int = 3, **values: Any) -> "WindowTotals":
        """The totals from the keywords of ``metrics()`` (None: not given),
        each a finite number >= 0, or NaN after one warning for anything
        else. :data:`NO_TOTALS` when none is given: the common call."""
        for value in values.values():
            if value is not None:
                break
        else:
            return NO_TOTALS
        checked: Dict[str, float] = {}
        for argument, value in values.items():
            if value is None:
                continue
            try:
                checked[argument] = check_optional_number(value, argument, 0)  # type: ignore[assignment]
            except (TypeError, ValueError) as exc:
                warnings.warn(f"mfu_tracker: Tracker: {exc}; the figures using it are left out",
                              RuntimeWarning, stacklevel=stacklevel)
                checked[argument] = math.nan
        return cls(**checked)

    def __bool__(self) -> bool:
        """Whether any total is given."""
        return self is not NO_TOTALS and any(value is not None for value in self._values())

    def _values(self) -> Tuple[Optional[float], ...]:
        return tuple(getattr(self, f.name) for f in fields(self))

    def summary_kwargs(self) -> Dict[str, float]:
        """The given totals as the step engine's ``summary()`` keywords."""
        return {f.name: getattr(self, f.name) for f in fields(self)
                if getattr(self, f.name) is not None}


#: No totals given (the common call).
NO_TOTALS = WindowTotals()
