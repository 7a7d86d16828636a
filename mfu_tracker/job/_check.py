"""The checks a metrics log's line passes on its way in, compiled once per
key and once per set of keys.

A metrics line holds tens of metric keys, the same keys line after line.
Each distinct key is judged once, by the one rule
(:func:`._records.invalid_reason`: a key of the metric table must hold a
finite number, never negative in the units that cannot be; a key outside
the table is not judged), and each distinct set of keys -- a *layout* --
is compiled once into the keys to check, fetched by one C-level getter. A
line of a known layout is then checked by a few operations over the whole
tuple of its values (their types, ``isfinite``, ``min``); only a line that
fails them is walked value by value, to name each bad value with the words
:func:`invalid_reason` gives. The ledger interval's check is the same rule
as before, written without helper calls.

A layout also carries the memos of the readers that consume its lines
(:attr:`Layout.memo`: e.g. which of its keys a series sampler follows), so
a reader works out what a set of keys means to it once, not per line.
"""
from __future__ import annotations

import json
from math import isfinite
from operator import itemgetter
from typing import Any, Callable, Dict, List, Optional, Tuple

from ._records import LEDGER, LogError, invalid_reason, metric_unit, nonnegative_unit

__all__ = ["Layout", "Layouts", "check_ledger", "clean_metrics"]

#: Keys of a metrics line that are not metrics (never judged).
PLAIN_KEYS = frozenset(("step", "time", "rank", "world_size", LEDGER))
_PASS, _FINITE, _NONNEGATIVE = 0, 1, 2
_NUMBERS = frozenset((int, float))
#: Bounds of the caches: a log whose every line has new keys is still read
#: (each such line compiled on its own), in bounded memory.
MAX_KEYS = 1 << 14
MAX_LAYOUTS = 256


def _rule(key: str) -> int:
    if key in PLAIN_KEYS:
        return _PASS
    unit = metric_unit(key)
    if unit is None:
        return _PASS
    return _NONNEGATIVE if nonnegative_unit(unit) else _FINITE


def _getter(keys: List[str]) -> Optional[Callable[[Dict[str, Any]], Tuple[Any, ...]]]:
    """One call that returns the values of ``keys`` as a tuple (None: no keys)."""
    if not keys:
        return None
    if len(keys) == 1:
        only = keys[0]
        return lambda record: (record[only],)
    return itemgetter(*keys)


class Layout:
    """One set of keys, compiled: the getters of the values to check, a small
    id (cached layouts; None for one past :data:`MAX_LAYOUTS`), and the
    readers' memos."""

    __slots__ = ("id", "keys", "finite", "nonnegative", "memo")

    def __init__(self, record: Dict[str, Any], rules: Dict[str, int], ident: Optional[int]):
        judged: List[str] = []
        nonnegative: List[str] = []
        for key in record:
            rule = rules.get(key)
            if rule is None:
                rule = _rule(key)
                if len(rules) < MAX_KEYS:
                    rules[key] = rule
            if rule != _PASS:
                judged.append(key)
                if rule == _NONNEGATIVE:
                    nonnegative.append(key)
        self.id = ident
        self.keys = tuple(record)
        self.finite = _getter(judged)
        self.nonnegative = _getter(nonnegative)
        self.memo: Dict[str, Any] = {}

    def valid(self, record: Dict[str, Any]) -> bool:
        """Every judged value a finite number, and not negative where its unit
        cannot be (a bool is not a number)."""
        if self.finite is None:
            return True
        values = self.finite(record)
        try:
            if not (_NUMBERS.issuperset(map(type, values)) and all(map(isfinite, values))):
                return False
        except OverflowError:         # an integer past a float's range
            return False
        return self.nonnegative is None or min(self.nonnegative(record)) >= 0


class Layouts:
    """The layouts of one log (a cache), and its keys' rules."""

    def __init__(self) -> None:
        self.rules: Dict[str, int] = {}
        self.by_keys: Dict[Tuple[str, ...], Layout] = {}
        self.last: Optional[Layout] = None

    def of(self, record: Dict[str, Any]) -> Layout:
        """The layout of ``record`` (its keys, in order)."""
        keys = tuple(record)
        last = self.last
        if last is not None and keys == last.keys:
            return last
        layout = self.by_keys.get(keys)
        if layout is None:
            cached = len(self.by_keys) < MAX_LAYOUTS
            layout = Layout(record, self.rules, len(self.by_keys) if cached else None)
            if cached:
                self.by_keys[keys] = layout
        self.last = layout
        return layout


def clean_metrics(record: Dict[str, Any], layouts: Layouts, path: str, number: int,
                  invalid: List[str]) -> Layout:
    """Check a metrics line (line ``number`` of ``path``) in place: every
    value that cannot be drawn or added is named in ``invalid``
    (``file:line: key=value: why; not drawn``) and removed from ``record``.
    Returns the layout of what is left."""
    layout = layouts.of(record)
    if layout.valid(record):
        return layout
    where = f"{path}:{number}"
    bad = [(key, reason) for key, value in record.items() if key not in PLAIN_KEYS
           for reason in (invalid_reason(key, value),) if reason is not None]
    for key, reason in bad:
        invalid.append(f"{where}: {key}={json.dumps(record[key])}: {reason}; not drawn")
        del record[key]
    return layouts.of(record)


def _number_at_least_0(value: Any) -> bool:
    if type(value) not in _NUMBERS:   # a bool is not a number
        return False
    try:
        return isfinite(value) and value >= 0
    except OverflowError:             # an integer past a float's range
        return False


def check_ledger(ledger: Any, where: str) -> Dict[str, Any]:
    """A metrics line's (or run end's) ``ledger`` interval, checked: integer
    steps, not ending before it starts, finite seconds >= 0, a ``phase_s``
    object of finite numbers, counts that are numbers >= 0. LogError naming
    ``where`` and the field otherwise."""
    if type(ledger) is not dict:
        raise LogError(f"{where}: '{LEDGER}' is not a JSON object")
    first, end = ledger.get("from_step"), ledger.get("to_step")
    for name, value in (("from_step", first), ("to_step", end)):
        if type(value) is not int:
            raise LogError(f"{where}: '{LEDGER}.{name}' is not an integer")
    if end < first:  # type: ignore[operator]
        raise LogError(f"{where}: '{LEDGER}' ends (to_step {end}) before it starts "
                       f"(from_step {first})")
    for name in ("step_s", "own_s"):
        if not _number_at_least_0(ledger.get(name)):
            raise LogError(f"{where}: '{LEDGER}.{name}' is not a finite number >= 0")
    phases = ledger.get("phase_s", {})
    if type(phases) is not dict or not _finite_numbers(phases.values()):
        raise LogError(f"{where}: '{LEDGER}.phase_s' is not an object of finite numbers")
    for name in ("dropped", "compile_calls"):
        value = ledger.get(name)
        if value is not None and not _number_at_least_0(value):
            raise LogError(f"{where}: '{LEDGER}.{name}' is not a number >= 0")
    return ledger


def _finite_numbers(values: Any) -> bool:
    values = tuple(values)
    try:
        return _NUMBERS.issuperset(map(type, values)) and all(map(isfinite, values))
    except OverflowError:
        return False
