"""Per-module attribution of counted FLOPs (``FlopCounter.by_module`` and
the module rows of ``FlopCounter.table()``), from a cheap stack.

How modules are seen: from the first ``with`` block of a counter with
``modules=True``, ``torch.nn.Module.__call__`` is replaced by
:func:`_counting_call`. It is put back once no such counter is alive (all
garbage collected), at the first module call outside a counted block or the
start of a counter without a table, whichever comes first -- not when the
last table dies: a loop making a new ``FlopCounter(modules=True)`` per step
would then swap it twice a step, and each swap (a class attribute of
``nn.Module``) invalidates the attribute caches of every module class: in a
small eager step that cost more than the table itself.

On a thread with an active table, a module call gets
a *token* -- one per (parent token, module), named once -- and tells the
backend that it is now the innermost module (``module_enter``: one C call
setting a thread-local int; ``module_exit`` restores the previous one). The
backend adds every forward counted op to the innermost module's token
(csrc/torch/observer.cpp; ``_dispatch.py`` for the fallback), so nothing is
snapshotted per module call: ~0.5 us per call, against ~2 us for the two
totals snapshots of the first design. A module's row adds its submodules'
rows when the table is read (:func:`module_rows`).

The wrapper checks ``torch.compiler.is_compiling()`` first, so a model that
torch.compile traces sees the plain call: no graph break, no guard on the
table; and torch.compile skips its frame when it is the first one it sees,
as it skips ``nn.Module.__call__`` (tests/flops/counter/test_compiled.py). On a thread without an active table a module
call costs one dict lookup (~0.25 us). Global module hooks are not used:
registering one sends every module call of the process through
``_call_impl``'s slow path. Nor is ``__call__`` swapped per block: assigning
a class attribute of ``nn.Module`` invalidates the attribute caches of every
module class (~60 us per block with transformers loaded).

Not attributed: calls on threads without an active table, calls during a
backward (activation-checkpoint recompute, a custom Function's backward),
the inside of a compiled region (its ops still count in the totals, under
the module that called it), and modules whose class overrides ``__call__``
without calling ``Module.__call__``.

A module's name is its path from the outermost module called
(``Root.layers.0.mlp``), found once per (parent, child) pair.
"""
from __future__ import annotations

import re
import sys
import threading
import weakref
from typing import Any, Callable, Mapping

from . import _compiled

__all__ = ["ModuleTable", "module_path", "module_rows", "restore_if_unused"]

_lock = threading.Lock()
_threads: dict[int, _ThreadState] = {}  # thread id -> its active tables and stack
_users = 0                                # live tables that installed the wrapper
_original: Any = None                     # Module.__call__ while replaced (None: not)
_wrapped: Any = None                      # Module._wrapped_call_impl
_compiling: Any = None
_enter: Callable[[int], int] = lambda token: 0   # the backend's module_enter
_exit: Callable[[int], None] = lambda token: None
_get_ident = threading.get_ident
_modules = sys.modules

# Tokens: (parent token, id(module)) -> (token, a weak reference to the
# module: an id reused by another module is not taken for it); token ->
# name and -> the module (to name its children). Token 0: no module.
_tokens: dict[tuple[int, int], tuple[int, Any]] = {}
_names: list[str] = [""]
_refs: list[Any] = [None]


class _ThreadState:
    __slots__ = ("tables", "stack")

    def __init__(self) -> None:
        self.tables: list[ModuleTable] = []
        self.stack: list[int] = []  # tokens of the open module calls


def _counting_call(self: Any, *args: Any, **kwargs: Any) -> Any:
    if _compiling():  # first: what torch.compile traces is the plain call
        return _wrapped(self, *args, **kwargs)
    state = _threads.get(_get_ident())
    if state is None:
        if not _users:  # every table is gone: put Module.__call__ back
            restore_if_unused()
        return _wrapped(self, *args, **kwargs)
    if _compiled._deferred and "torch._dynamo" in _modules:  # compile came into use:
        _compiled.apply_deferred()                             # before its first call
    # (in a backward -- checkpoint recompute -- the backend counts no call
    # and attributes no op)
    stack = state.stack
    parent = stack[-1] if stack else 0
    entry = _tokens.get((parent, id(self)))
    token = entry[0] if entry is not None and entry[1]() is self else _token(self, parent, state)
    stack.append(token)
    previous = _enter(token)
    try:
        return _wrapped(self, *args, **kwargs)
    finally:
        _exit(previous)
        stack.pop()


def _token(module: Any, parent: int, state: _ThreadState) -> int:
    """A new token for ``module`` called inside ``parent`` (named now)."""
    try:
        name = _name_of(module, parent)
    except Exception as exc:  # noqa: BLE001 - never raise into the model
        for table in state.tables:
            table.error = table.error or f"module table: {exc!r}"
        name = type(module).__name__
    with _lock:
        token = len(_names)
        _names.append(name)
        _refs.append(weakref.ref(module))
        _tokens[(parent, id(module))] = (token, _refs[token])
    return token


def _install(enter: Callable[[int], int], exit_: Callable[[int], None]) -> None:
    global _users, _original, _wrapped, _compiling, _enter, _exit
    import torch

    with _lock:
        _enter, _exit = enter, exit_
        if _original is None:  # not still in place from earlier tables
            _wrapped = torch.nn.Module._wrapped_call_impl
            _compiling = torch.compiler.is_compiling
            _original = torch.nn.Module.__call__
            torch.nn.Module.__call__ = _counting_call  # type: ignore[method-assign]
        _users += 1


def _skip_as_top_frame() -> None:
    """Have torch.compile skip the wrapper's frame when it is the first frame
    it sees (``torch.compile(model)`` calls ``model.__call__``), as it skips
    ``nn.Module.__call__`` itself: it then compiles the model's forward, not
    the wrapper (which would trace the same graphs through one frame more and
    split them at each graph break of the model); and never compile the
    naming it runs eagerly then. Called from traced code the wrapper is still
    inlined (its ``is_compiling()`` branch)."""
    _compiled.run_eagerly(_counting_call, callees=True)
    _compiled.run_eagerly(_token)


def _uninstall() -> None:
    """A table is gone; the wrapper stays until :func:`restore_if_unused`."""
    global _users
    with _lock:
        _users -= 1


def restore_if_unused() -> None:
    """Put ``Module.__call__`` back when no table is alive (module docstring)."""
    global _original
    if _original is None or _users:
        return
    import torch

    with _lock:
        if _original is not None and not _users:
            torch.nn.Module.__call__ = _original  # type: ignore[method-assign]
            _original = None


def _activate(table: ModuleTable, on: bool) -> None:
    with _lock:
        state = _threads.get(table.thread)
        if on:
            if state is None:
                state = _threads[table.thread] = _ThreadState()
            state.tables.append(table)
        elif state is not None:
            state.tables = [t for t in state.tables if t is not table]
            if not state.tables:
                del _threads[table.thread]


class ModuleTable:
    """The module attribution of one counter: keeps the wrapper installed
    (until the table is garbage collected; it is put back later, module
    docstring) and activates it on the counter's
    thread while the counter is active. The counts live in the backend
    (``modules`` of its totals: token -> (forward, model, calls))."""

    def __init__(self) -> None:
        self.thread = 0
        self.error: str | None = None
        self.active = False
        self.installed = False

    def start(self, backend: Any) -> None:
        if not self.installed:  # held until this table is garbage collected (__del__)
            _install(backend.module_enter, backend.module_exit)
            self.installed = True
        _skip_as_top_frame()  # every block: torch._dynamo.reset() may forget it (cheap)
        self.thread = _get_ident()
        _activate(self, True)
        self.active = True

    def stop(self) -> None:
        if self.active:
            self.active = False
            _activate(self, False)

    def __del__(self) -> None:
        # not weakref.finalize: its process-wide registry, one entry per
        # counter used, grows and shrinks with every counter of a loop
        # (tests/test_soak.py saw it as traced memory)
        if self.installed:
            self.installed = False
            try:
                _uninstall()
            except Exception:  # noqa: BLE001 -- at interpreter exit the module's globals are gone
                pass


def module_rows(per_module: Mapping[int, tuple[int, int, int]]) -> dict[str, list[int]]:
    """Name -> [forward, model, calls] from the backend's per-token counts:
    each name's forward and model FLOPs include its submodules', calls are
    its own; in first-call (token) order."""
    own: dict[str, list[int]] = {}
    for token in sorted(per_module):
        name = _names[token] if 0 < token < len(_names) else "?"
        forward, model, calls = per_module[token]
        row = own.setdefault(name, [0, 0, 0])
        row[0] += forward
        row[1] += model
        row[2] += calls
    out = {name: [0, 0, calls] for name, (_, _, calls) in own.items()}
    for name, (forward, model, _) in own.items():
        # into the row of each name this one is inside (a dotted prefix):
        # linear in the names, as the table may be read every step
        for outer in _prefixes.get(name) or _dotted_prefixes(name):
            row = out.get(outer)
            if row is not None:
                row[0] += forward
                row[1] += model
    return out


_prefixes: dict[str, tuple[str, ...]] = {}  # name -> itself and its dotted prefixes


def _dotted_prefixes(name: str) -> tuple[str, ...]:
    parts = name.split(".")
    prefixes = tuple(".".join(parts[:n]) for n in range(len(parts), 0, -1))
    if len(_prefixes) < 100_000:  # names are few (one per module path); bounded anyway
        _prefixes[name] = prefixes
    return prefixes


_INDEX = re.compile(r"\.\d+(?=\.|$)")


def table_rows(modules: Mapping[str, list[int]], depth: int | None,
               collapse: bool) -> list[tuple[str, int, int, int, int]]:
    """(label, level, calls, forward, model) per module (or per group of
    numbered siblings), in first-call order."""
    rows: dict[str, list[int]] = {}
    for name, (forward, model, calls) in modules.items():
        key = _INDEX.sub(".*", name) if collapse else name
        if depth is not None and len(module_path(key)) > depth:
            continue
        row = rows.setdefault(key, [0, 0, 0])
        row[0] += calls
        row[1] += forward
        row[2] += model
    out = []
    for key, row in rows.items():
        path = module_path(key)
        out.append((path[-1], len(path) - 1, *row))
    return out


def _name_of(module: Any, parent: int) -> str:
    name = type(module).__name__
    owner = _refs[parent]() if parent else None
    if owner is not None:
        for child_name, child in _named_children_deep(owner):
            if child is module:
                return f"{_names[parent]}.{child_name}"
    return name


def module_path(name: str) -> list[str]:
    """``"Root.layers.3.mlp"`` -> ``["Root", "layers.3", "mlp"]`` (an index
    belongs to the container name before it)."""
    path: list[str] = []
    for part in name.split("."):
        if path and (part.isdigit() or part == "*"):
            path[-1] = f"{path[-1]}.{part}"
        else:
            path.append(part)
    return path


def _named_children_deep(module: Any) -> list[tuple[str, Any]]:
    """Children, looking through containers that are never called
    (ModuleList / ModuleDict: ``layers.0`` rather than ``0``)."""
    import torch

    out: list[tuple[str, Any]] = []
    for name, child in module._modules.items():
        if child is None:
            continue
        out.append((name, child))
        if isinstance(child, (torch.nn.ModuleList, torch.nn.ModuleDict)):
            out.extend((f"{name}.{sub_name}", sub) for sub_name, sub in _named_children_deep(child))
    return out
