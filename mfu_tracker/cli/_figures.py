"""Figures as a command prints them: each rounded to what it means, by its
unit in the one table of keys (:data:`mfu_tracker.timing._metrics.KEYS`,
``FAMILIES``). Exact values stay where scripts read them: ``--json``, and
``--numbers`` (Python's round-trip repr)."""
from __future__ import annotations

from typing import Dict, Optional

from ..timing._metrics import FAMILIES, KEYS

__all__ = ["seconds", "share", "shown", "signed_share", "significant"]

_UNITS: Dict[str, str] = {**{family: unit for family, unit, _ in FAMILIES},
                          **{key.name: key.unit for key in KEYS}}


def share(value: float) -> str:
    """A ratio or a fraction (MFU, a share of the step or the job): 3 places."""
    return f"{value:.3f}"


def signed_share(value: float) -> str:
    """A difference of two shares: 3 places, with its sign."""
    return f"{value:+.3f}"


def significant(value: float) -> str:
    """4 significant digits, whole numbers from 10,000 up (18797, not 1.88e+04)."""
    return f"{value:.0f}" if abs(value) >= 1e4 else f"{value:.4g}"


def seconds(value: float) -> str:
    """A time in seconds: 4 significant digits."""
    return significant(value)


def _unit(name: str) -> Optional[str]:
    """The unit of key ``name`` (a bare name, or a family's ``family/entry``)."""
    return _UNITS.get(name) or _UNITS.get(name.split("/", 1)[0])


def shown(name: str, value: float) -> str:
    """``value`` of key ``name`` as printed: ratios and fractions to 3 places,
    counts, ranks and flags whole, everything else to 4 significant digits."""
    unit = _unit(name) or ""
    if unit in ("rank", "count", "flag"):
        return str(int(round(value)))
    if unit == "ratio" or unit.startswith("fraction"):
        return share(value)
    return significant(value)
