"""Per-module attribution of counted FLOPs (``FlopCounter.by_module`` and
the module rows of ``FlopCounter.table()``).

How modules are seen: while at least one counter with ``modules=True``
exists in the process (from its first ``with`` block until it is garbage
collected), ``torch.nn.Module.__call__`` is replaced by
:func:`_counting_call`, which notes the counter's forward / model totals
around the original call (``Module._wrapped_call_impl``) for the tables
active on the calling thread; on a thread without an active table it adds
one dict lookup (~0.25 us per module call). Global module hooks are not
used: registering one sends every module call of the process through
``_call_impl``'s slow path, which alone cost more than the whole count on a
small model. Nor is ``__call__`` swapped per block: assigning a class
attribute of ``nn.Module`` invalidates the attribute caches of every module
class (~60 us per block with transformers loaded, and the interpreter's
specialisations with them).

Not attributed: calls on threads without an active table, calls during a
backward (activation-checkpoint recompute), calls while ``torch.compile``
traces (the compiled code's ops still count in the totals), and modules
whose class overrides ``__call__`` without calling ``Module.__call__``.

A module's name is its path from the outermost module called
(``Root.layers.0.mlp``), found once per (parent, child) pair.
"""
from __future__ import annotations

import re
import threading
import weakref
from typing import Any, Callable

__all__ = ["ModuleTable"]

_lock = threading.Lock()
_tables: dict[int, list[ModuleTable]] = {}  # thread id -> its active tables
_users = 0                                     # live tables that installed the wrapper
_original: Any = None                          # Module.__call__ while replaced
_wrapped: Any = None                           # Module._wrapped_call_impl
_graph_task_id: Any = None
_compiling: Any = None
_get_ident = threading.get_ident


def _counting_call(self: Any, *args: Any, **kwargs: Any) -> Any:
    tables = _tables.get(_get_ident())
    if not tables or _compiling() or _graph_task_id() != -1:
        return _wrapped(self, *args, **kwargs)
    frames = [table.enter(self) for table in tables]
    try:
        return _wrapped(self, *args, **kwargs)
    finally:
        for table, frame in zip(tables, frames):
            table.exit(frame)


def _install() -> None:
    global _users, _original, _wrapped, _graph_task_id, _compiling
    import torch

    with _lock:
        if _users == 0:
            _wrapped = torch.nn.Module._wrapped_call_impl
            _graph_task_id = torch._C._current_graph_task_id
            _compiling = torch.compiler.is_compiling
            _original = torch.nn.Module.__call__
            torch.nn.Module.__call__ = _counting_call  # type: ignore[method-assign]
        _users += 1


def _uninstall() -> None:
    global _users, _original
    import torch

    with _lock:
        _users -= 1
        if _users == 0:
            torch.nn.Module.__call__ = _original  # type: ignore[method-assign]
            _original = None


def _activate(table: ModuleTable, on: bool) -> None:
    with _lock:
        tables = [t for t in _tables.get(table.thread, ()) if t is not table]
        if on:
            tables.append(table)
        if tables:
            _tables[table.thread] = tables  # replaced, never mutated: readers hold no lock
        else:
            _tables.pop(table.thread, None)


class ModuleTable:
    """The module attribution of one counter.

    Args:
        snapshot: returns the counter's (forward, model) FLOPs so far.
    """

    def __init__(self, snapshot: Callable[[], tuple[int, int]]) -> None:
        self.snapshot = snapshot
        self.thread = 0
        self.modules: dict[str, list[int]] = {}  # name -> [forward, model, calls]
        self.order: list[str] = []
        self.stack: list[list[Any]] = []         # open frames: [module, name, fwd0, model0]
        self.names: dict[tuple[int, int], str] = {}
        self.error: str | None = None
        self.active = False
        self.installed = False

    def start(self) -> None:
        if not self.installed:  # until this table is garbage collected
            _install()
            weakref.finalize(self, _uninstall)
            self.installed = True
        self.thread = _get_ident()
        self.stack.clear()
        _activate(self, True)
        self.active = True

    def stop(self) -> None:
        if self.active:
            self.active = False
            _activate(self, False)
        self.stack.clear()

    def reset(self) -> None:
        """Zero the table; open frames restart from zero."""
        self.modules.clear()
        self.order.clear()
        for frame in self.stack:
            frame[2] = frame[3] = 0

    def enter(self, module: Any) -> list[Any] | None:
        try:
            parent = self.stack[-1] if self.stack else None
            key = (id(parent[0]) if parent else 0, id(module))
            name = self.names.get(key)
            if name is None:
                name = self.names[key] = _name_of(module, parent)
            if name not in self.modules:
                self.modules[name] = [0, 0, 0]
                self.order.append(name)
            forward, model = self.snapshot()
            frame = [module, name, forward, model]
            self.stack.append(frame)
            return frame
        except Exception as exc:  # noqa: BLE001 - never raise into the model
            self.error = self.error or f"module hook: {exc!r}"
            return None

    def exit(self, frame: list[Any] | None) -> None:
        if frame is None or not self.stack or self.stack[-1] is not frame:
            return
        try:
            self.stack.pop()
            forward, model = self.snapshot()
            entry = self.modules[frame[1]]
            entry[0] += forward - frame[2]
            entry[1] += model - frame[3]
            entry[2] += 1
        except Exception as exc:  # noqa: BLE001
            self.error = self.error or f"module hook: {exc!r}"

    def rows(self, depth: int | None, collapse: bool) -> list[tuple[str, int, int, int, int]]:
        """(label, level, calls, forward, model) per module (or per group of
        numbered siblings), in first-call order."""
        rows: dict[str, list[int]] = {}
        order: list[str] = []
        for name in self.order:
            forward, model, calls = self.modules[name]
            key = _INDEX.sub(".*", name) if collapse else name
            if depth is not None and len(module_path(key)) > depth:
                continue
            if key not in rows:
                rows[key] = [0, 0, 0]
                order.append(key)
            rows[key][0] += calls
            rows[key][1] += forward
            rows[key][2] += model
        out = []
        for key in order:
            path = module_path(key)
            out.append((path[-1], len(path) - 1, *rows[key]))
        return out


_INDEX = re.compile(r"\.\d+(?=\.|$)")


def _name_of(module: Any, parent: list[Any] | None) -> str:
    name = type(module).__name__
    if parent is not None:
        for child_name, child in _named_children_deep(parent[0]):
            if child is module:
                return f"{parent[1]}.{child_name}"
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
