"""One number on the page, with how it was obtained.

Every number the page shows is a :class:`Figure`: its value as the log holds
it, its unit, *how* it was obtained -- ``declared`` (a number the user or
the launcher gave), ``counted`` (the FLOP counter, tokens from the inputs),
``measured`` (a clock, a hardware counter, the allocator), ``looked up`` (the
peak table's datasheet row) or ``derived`` (arithmetic on other figures) --,
its formula with its inputs (each one a figure of its own kind), and where in
the log it came from (``line N: key``). The page shows the formula and the
inputs on demand. A figure the log cannot give has no value and says which
input would give it (:attr:`Figure.absent`).

The values are the log's own: the page never recomputes a figure the tracker
logged. Where a formula's inputs are all in the log, :attr:`Figure.check` is
the formula applied to them, shown beside the logged value.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from ...timing._metrics import KEYS, metric_key
from ..report._model import Record, number

__all__ = ["DECLARED", "COUNTED", "MEASURED", "LOOKED_UP", "DERIVED", "Figure", "Newest",
           "PEAK_HOW", "key_meaning"]

DECLARED, COUNTED, MEASURED, LOOKED_UP, DERIVED = (
    "declared", "counted", "measured", "looked up", "derived")

#: How a run's peak was obtained, by the run record's ``peak_source``.
PEAK_HOW = {"datasheet": LOOKED_UP, "measured": MEASURED, "user": DECLARED}

_MEANING = {key.name: key.meaning for key in KEYS}
_UNIT = {key.name: key.unit for key in KEYS}


def key_meaning(name: str) -> str:
    """The metric table's meaning of key ``name`` ("" for a family entry)."""
    return _MEANING.get(name, "")


@dataclass
class Figure:
    """A number on the page (module docstring). ``value`` None: absent,
    with :attr:`absent` saying why and which input would give it."""

    id: str
    label: str
    value: Optional[float]
    unit: str
    how: str
    formula: str = ""
    inputs: List["Figure"] = field(default_factory=list)
    source: str = ""
    absent: Optional[str] = None
    check: Optional[float] = None
    text: Optional[str] = None          # a value that is words (a device name, a rank)

    def to_json(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"id": self.id, "label": self.label, "value": self.value,
                               "unit": self.unit, "how": self.how}
        for name in ("formula", "source", "absent", "check", "text"):
            value = getattr(self, name)
            if value not in (None, ""):
                out[name] = value
        if self.inputs:
            out["inputs"] = [i.to_json() for i in self.inputs]
        return out


class Newest:
    """The newest metrics line holding each key, among a run's kept lines
    (the sample keeps the newest line of each set of keys, so this is the
    whole log's newest: :mod:`mfu_tracker.job._sample`)."""

    def __init__(self, records: List[Record], prefix: str):
        self.records = sorted(records, key=lambda r: r["_line"])
        self.prefix = prefix
        self._cache: Dict[str, Optional[Record]] = {}

    def key(self, name: str) -> str:
        return metric_key(self.prefix, name)

    def line(self, name: str) -> Optional[Record]:
        """The newest line with a number for ``{prefix}/name`` (None: none has)."""
        if name not in self._cache:
            key = self.key(name)
            self._cache[name] = next((r for r in reversed(self.records)
                                      if number(r.get(key)) is not None), None)
        return self._cache[name]

    def value(self, name: str) -> Optional[float]:
        record = self.line(name)
        return None if record is None else number(record.get(self.key(name)))

    def figure(self, name: str, label: str, how: str, *, absent: str = "",
               formula: str = "", inputs: Optional[List[Figure]] = None,
               unit: Optional[str] = None) -> Figure:
        """Key ``{prefix}/name`` of its newest line as a figure (absent with
        ``absent`` as the reason when no line holds it)."""
        record = self.line(name)
        key = self.key(name)
        unit = _UNIT.get(name, "") if unit is None else unit
        if record is None:
            return Figure(name, label, None, unit, how, formula=formula,
                          inputs=list(inputs or []), absent=absent or f"no {key} in the log")
        return Figure(name, label, number(record[key]), unit, how, formula=formula,
                      inputs=list(inputs or []),
                      source=f"line {record['_line']} (step {record['step']}): {key}")

    def same_line(self, name: str, other: str) -> Optional[float]:
        """``{prefix}/other`` of the line that gives ``name`` (a formula's
        inputs come from the line of its result)."""
        record = self.line(name)
        return None if record is None else number(record.get(self.key(other)))

    def input(self, name: str, of: str, label: str, how: str) -> Figure:
        """Key ``name`` of the line that gives ``of``, as an input figure."""
        record = self.line(of)
        key = self.key(name)
        value = None if record is None else number(record.get(key))
        if value is None:
            return Figure(name, label, None, _UNIT.get(name, ""), how,
                          absent=f"no {key} in the line")
        return Figure(name, label, value, _UNIT.get(name, ""), how,
                      source=f"line {record['_line']} (step {record['step']}): {key}")
