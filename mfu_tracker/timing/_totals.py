"""The record of a step's sums, as one Python value: :class:`StepSums`.

A step's work -- FLOPs of each kind, bytes, tokens, seconds -- is declared
once, as the C core's field table (``csrc/core/steps/step_fields.h``), which Python
reads as ``_C.STEP_FIELDS``; :class:`StepSums` is made from that table, one
optional float per field, so a new field of the table is a new field here
with no edit. The same value carries

* a step's work into ``Tracker.step()`` / ``Tracker.book()`` (the
  integrations: :mod:`mfu_tracker.integrations._step_flops`);
* a window's totals given at logging time into ``Tracker.metrics()``,
  ``aggregate()`` and ``rank_figures()`` (a loop that knows only a window's
  work when it logs): each replaces the window's own sum in the step
  engine's summary, and every ratio is formed from it;
* a rank's window in its row of an aggregation, as sums per second
  (:mod:`mfu_tracker.distributed._row`).

Units: each field's (``StepField.unit``: FLOPs, bytes, tokens, s). None:
not given; NaN: given, unknown. A bad window total (negative, NaN, not a
number) is one warning and NaN -- its figures left out -- never an
exception: under a process group an exception on one rank would leave the
others waiting in the collective.
"""
from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Any, Dict, Mapping, Optional, Tuple

from .._native import _C
from .._validate import check_optional_number

__all__ = ["StepSums", "WindowTotals", "NO_TOTALS", "FIELDS", "GIVEN_FIELDS"]

#: The record's fields (``_C.STEP_FIELDS``: name, unit, given, defaulted,
#: per_step, loss, meaning), in the record's order.
FIELDS: Tuple[Any, ...] = tuple(_C.STEP_FIELDS)
#: The names of the fields a caller gives (the others the tracker measures).
GIVEN_FIELDS: Tuple[str, ...] = tuple(field.name for field in FIELDS if field.given)


class _SumsMethods:
    """What every :class:`StepSums` does (its fields come from the table)."""

    __slots__ = ()

    @classmethod
    def of(cls, sums: Optional["_SumsMethods"], values: Mapping[str, Any],
           what: str) -> Any:
        """``sums`` with ``values`` (keywords of ``what``, None: not given) in
        place, unchecked: the step engine checks them (one warning, unknown).
        A name that is no field a caller gives is a ``TypeError``, as for any
        unexpected keyword."""
        _check_names(values, what)
        if sums is None:
            return cls(**values) if values else NO_TOTALS
        if not isinstance(sums, StepSums):
            raise TypeError(f"{what}: sums must be a StepSums, not {type(sums).__name__}")
        return dataclasses.replace(sums, **values) if values else sums

    @classmethod
    def given(cls, sums: Optional["_SumsMethods"] = None, *, stacklevel: int = 3,
              what: str = "Tracker", **values: Any) -> Any:
        """The totals ``sums`` with ``values`` in place, each checked: a finite
        number >= 0, or NaN after one warning for anything else.
        :data:`NO_TOTALS` when none is given: the common call."""
        if sums is None and not values:
            return NO_TOTALS
        merged = cls.of(sums, {k: v for k, v in values.items() if v is not None}, what)
        if not merged:
            return NO_TOTALS
        checked: Dict[str, float] = {}
        for name, value in merged.kwargs().items():
            try:
                checked[name] = check_optional_number(value, name, 0)  # type: ignore[assignment]
            except (TypeError, ValueError) as exc:
                warnings.warn(f"mfu_tracker: {what}: {exc}; the figures using it are left out",
                              RuntimeWarning, stacklevel=stacklevel)
                checked[name] = math.nan
        return cls(**checked)

    def kwargs(self) -> Dict[str, Any]:
        """The given fields, as keywords (of ``StepTracker.step()``,
        ``book()``, ``summary()``)."""
        return {name: value for name in _NAMES
                if (value := getattr(self, name)) is not None}

    #: The name the window totals' keywords had (``WindowTotals``).
    summary_kwargs = kwargs

    def __bool__(self) -> bool:
        """Whether any field is given."""
        return self is not NO_TOTALS and any(getattr(self, name) is not None for name in _NAMES)

    def replace(self, **values: Any) -> Any:
        """A copy with ``values`` in place (None: not given)."""
        return dataclasses.replace(self, **values)

    def scaled(self, factor: float) -> Any:
        """Every given field x ``factor`` (FLOPs of a step with ``factor`` x
        the tokens)."""
        return dataclasses.replace(self, **{name: value * factor
                                            for name, value in self.kwargs().items()})

    def minus(self, other: Any) -> Any:
        """Field by field ``self - other`` (a field either lacks: not given)."""
        return type(self)(**{name: None if (a := getattr(self, name)) is None
                             or (b := getattr(other, name)) is None else a - b
                             for name in _NAMES})

    @classmethod
    def read(cls, source: Any) -> Any:
        """The fields ``source`` has an attribute for, as floats (a
        ``FlopCounter``'s FLOPs of each kind the record declares)."""
        return cls(**{name: float(value) for name in _NAMES
                      if (value := getattr(source, name, None)) is not None})


_NAMES: Tuple[str, ...] = tuple(field.name for field in FIELDS)

#: A step's (or a window's) sums: one optional float per field of
#: ``_C.STEP_FIELDS``, in its order; None = not given.
StepSums = dataclasses.make_dataclass(
    "StepSums", [(name, Optional[float], dataclasses.field(default=None)) for name in _NAMES],
    bases=(_SumsMethods,), frozen=True, slots=True)
StepSums.__module__ = __name__
StepSums.__doc__ = ("A step's (or a window's) sums, one optional float per field of "
                    "_C.STEP_FIELDS (None: not given; NaN: given, unknown).")

#: Window totals given at logging time are a :class:`StepSums`.
WindowTotals = StepSums

#: No totals given (the common call).
NO_TOTALS = StepSums()


def _check_names(values: Mapping[str, Any], what: str) -> None:
    """A TypeError for a keyword that is no field a caller gives."""
    for name in values:
        if name not in GIVEN_FIELDS:
            known = "a field the tracker measures" if name in _NAMES else "not a field"
            raise TypeError(f"{what} got an unexpected keyword argument {name!r} ({known}; "
                            f"the fields a caller gives: {', '.join(GIVEN_FIELDS)})")
