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
from itertools import chain, repeat
from math import fsum, isfinite
from operator import eq, itemgetter, le
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ._records import LEDGER, LogError, invalid_reason, metric_unit, nonnegative_unit

__all__ = ["Layout", "Layouts", "check_ledger", "clean_metrics", "getter", "ledger_columns",
           "valid_block"]

#: Keys of a metrics line that are not metrics (never judged).
PLAIN_KEYS = frozenset(("step", "time", "rank", "world_size", LEDGER))
_PASS, _FINITE, _NONNEGATIVE = 0, 1, 2
_NUMBERS = frozenset((int, float))
_FLOATS = frozenset((float,))
_INTS = frozenset((int,))
_DICTS = frozenset((dict,))
_INF = float("inf")
_NO_PHASES: Dict[str, Any] = {}
#: Steps are kept in 64-bit columns (:mod:`._intervals`).
_STEP_LIMIT = 1 << 62
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


def getter(keys: Sequence[str]) -> Optional[Callable[[Dict[str, Any]], Tuple[Any, ...]]]:
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

    __slots__ = ("id", "keys", "judged", "finite", "nonnegative", "memo")

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
        self.judged = frozenset(judged)   # in a checked line: finite numbers
        self.finite = getter(judged)
        self.nonnegative = getter(nonnegative)
        self.memo: Dict[Any, Any] = {}

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


def _finite(value: Any) -> bool:
    try:
        return type(value) in _NUMBERS and isfinite(value)
    except OverflowError:
        return False


def _finite_numbers(values: Any) -> bool:
    for value in values:
        if not (type(value) is float and value - value == 0.0) and not _finite(value):
            return False
    return True


def check_ledger(ledger: Any, where: str) -> Dict[str, Any]:
    """A metrics line's (or run end's) ``ledger`` interval, checked: integer
    steps, not ending before it starts, finite seconds >= 0, a ``phase_s``
    object of finite numbers, counts that are numbers >= 0. LogError naming
    ``where`` and the field otherwise. (Written out, without helper calls on
    the usual path: it runs once per line.)"""
    if type(ledger) is not dict:
        raise LogError(f"{where}: '{LEDGER}' is not a JSON object")
    first, end = ledger.get("from_step"), ledger.get("to_step")
    if type(first) is not int:
        raise LogError(f"{where}: '{LEDGER}.from_step' is not an integer")
    if type(end) is not int:
        raise LogError(f"{where}: '{LEDGER}.to_step' is not an integer")
    if end < first:
        raise LogError(f"{where}: '{LEDGER}' ends (to_step {end}) before it starts "
                       f"(from_step {first})")
    if not -_STEP_LIMIT < first <= end < _STEP_LIMIT:
        raise LogError(f"{where}: '{LEDGER}' steps {first}..{end} are out of range")
    untimed = ledger.get("untimed_steps", 0)
    if type(untimed) is not int or not 0 <= untimed <= end - first:
        raise LogError(f"{where}: '{LEDGER}.untimed_steps' is not an integer from 0 to the "
                       f"interval's steps")
    for name in ("step_s", "own_s"):
        value = ledger.get(name)
        if not (type(value) is float and 0.0 <= value < _INF) and not _number_at_least_0(value):
            raise LogError(f"{where}: '{LEDGER}.{name}' is not a finite number >= 0")
    phases = ledger.get("phase_s", _NO_PHASES)
    if type(phases) is not dict or not _finite_numbers(phases.values()):
        raise LogError(f"{where}: '{LEDGER}.phase_s' is not an object of finite numbers")
    for name in ("dropped", "compile_calls"):
        value = ledger.get(name)
        if value is not None and not (type(value) is int and value >= 0) and \
                not _number_at_least_0(value):
            raise LogError(f"{where}: '{LEDGER}.{name}' is not a number >= 0")
    return ledger


# ---- blocks: consecutive lines of one layout, checked at once -------------------------
#
# The scanner's fast path (:mod:`._stream`): a block of lines whose keys are
# one known layout is checked by whole-column operations -- each a C loop --
# instead of line by line. A check here only says "all good"; any doubt
# returns False / None and the block goes line by line, where every bad
# value and line is named as above.


def valid_block(records: List[Dict[str, Any]], layout: Layout) -> bool:
    """Every judged value of every record valid (:meth:`Layout.valid`)."""
    if layout.finite is not None:
        values = list(chain.from_iterable(map(layout.finite, records)))
        if not _NUMBERS.issuperset(map(type, values)):      # a bool is not a number
            return False
        try:
            if not isfinite(fsum(values)):
                return False
        except (ValueError, OverflowError):    # inf - inf; past a float's range
            return False
    if layout.nonnegative is not None:
        return min(chain.from_iterable(map(layout.nonnegative, records))) >= 0
    return True


def _floats_at_least_0(column: Tuple[Any, ...]) -> bool:
    return _FLOATS.issuperset(map(type, column)) and _finite_sum(column) and min(column) >= 0


def _finite_sum(floats: Any) -> bool:
    """No NaN or infinity among ``floats`` (their sum is finite)."""
    try:
        return isfinite(fsum(floats))
    except (ValueError, OverflowError):
        return False


def ledger_columns(ledgers: List[Any]) -> Optional[Dict[str, Tuple[Any, ...]]]:
    """The ledger intervals of a block as columns (field -> values in line
    order), when every one passes :func:`check_ledger` with the same fields,
    floats for seconds and ints for counts; None otherwise (the block goes
    line by line)."""
    if not _DICTS.issuperset(map(type, ledgers)):
        return None
    keys = tuple(ledgers[0])
    if not all(map(eq, map(tuple, ledgers), repeat(keys))) or not _REQUIRED.issubset(keys):
        return None
    columns = dict(zip(keys, zip(*map(itemgetter(*keys), ledgers))))
    starts, ends = columns["from_step"], columns["to_step"]
    if not (_INTS.issuperset(map(type, starts)) and _INTS.issuperset(map(type, ends))
            and all(map(le, starts, ends)) and -_STEP_LIMIT < min(starts)
            and max(ends) < _STEP_LIMIT):
        return None
    if not (_floats_at_least_0(columns["step_s"]) and _floats_at_least_0(columns["own_s"])):
        return None
    phases = columns.get("phase_s")
    if phases is not None:
        if not _DICTS.issuperset(map(type, phases)):
            return None
        values = list(chain.from_iterable(map(dict.values, phases)))
        if not (_FLOATS.issuperset(map(type, values)) and _finite_sum(values)):
            return None
    for name in ("dropped", "compile_calls"):
        counts = columns.get(name)
        if counts is not None and not (_INTS.issuperset(map(type, counts)) and min(counts) >= 0):
            return None
    untimed = columns.get("untimed_steps")
    if untimed is not None and (not _INTS.issuperset(map(type, untimed)) or any(untimed)):
        return None   # steps run before the clock started: line by line (IntervalBook.add)
    return columns


_REQUIRED = frozenset(("from_step", "to_step", "step_s", "own_s"))
