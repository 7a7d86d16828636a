"""Which backend counts: the C++ observer, or the TorchDispatchMode fallback.

The C++ observer (``mfu_tracker._torch``, loaded by
:mod:`mfu_tracker._native._observer`) counts with kernels on a dispatch key
borrowed from torch's tests (docs/dispatch_keys.md). It is used when it
loads and its key passed the load-time checks; else counting falls back, with
one warning naming the reason, to :class:`~._dispatch.DispatchBackend` (a
``TorchDispatchMode`` over the same C op table: same numbers, slower).

Each counter's start checks that no other library registered a kernel over
one of ours on the key since (:meth:`ExtBackend.foreign`); one did, the
counter and every later one fall back (:func:`fall_back`), with one warning,
and the key leaves this thread's dispatch for good. The scan of the
dispatcher runs only when something could have registered a kernel since the
last clean scan (:func:`_registrations`): reading a computed kernel leaves a
token in torch's kernel that is never freed, so a scan at every start would
grow the process by ~5 KB per counted step.

The key is in a thread's dispatch from its first count while a counter that
counted there is alive (:class:`KeyHold`), and leaves it when the last one
is garbage collected: outside counters nothing of ours (nor of anyone else
on the key) runs.
"""
from __future__ import annotations

import sys
import threading
import warnings
from typing import Any, Optional, Tuple

from ..._native._observer import DISABLED, key_problem, observer_module

__all__ = ["ExtBackend", "KeyHold", "counter_backend", "current_backend", "fall_back",
           "get_backend", "DISABLED"]


def _registrations() -> Tuple[int, int, int]:
    """What changes when a library can have registered a kernel: a module
    imported (a C++ extension registers at load), a ``torch.library``
    registration from Python, a ``torch.ops.load_library``. O(1): sizes, not
    contents (a registration that replaces a deleted one of the same count
    between two counters' starts is seen at the next change)."""
    import torch
    import torch.library

    return (len(sys.modules), len(torch.library._impls), len(torch.ops.loaded_libraries))


class ExtBackend:
    """The C++ observer (mfu_tracker._torch), with the Python kernels of the
    higher-order operators (:mod:`._hops`)."""

    name = "torch-ext"

    def __init__(self, module: Any) -> None:
        from . import _hops
        from ._args import compiling_internally
        from ._compiled import recompute_plan

        self.module = module
        self._clean_at: Optional[Tuple[int, int, int]] = None  # _registrations() at a clean scan

        def start(causal: str, modules: bool = False) -> int:
            _hops.sync(module)  # higher-order ops defined since the last count
            return module.start(causal, modules)

        self.start = start
        self.audit = module.audit
        self.stop = module.stop                # (handle, totals): adds the block's
        self.new_totals = module.totals_new
        self.totals = module.totals            # (totals, handle, tables) -> dict
        self.reset_totals = module.totals_reset
        self.note_error = module.totals_error
        self.reset = module.reset
        self.module_enter = module.module_enter
        self.module_exit = module.module_exit
        self.sync = module.sync_kernels
        module.set_recompute_planner(recompute_plan)
        module.set_compiling_check(compiling_internally)  # its fake tensors are not counted

    def foreign(self) -> Optional[str]:
        """Why the counting key is no longer ours, or None: another library
        registered a fallback on it before ours (registered here, once), or
        a kernel over ours for a counted op (the dispatcher lets the newer
        win with only a printed warning)."""
        module = self.module
        try:
            module.sync_kernels()
        except RuntimeError as exc:  # a foreign fallback: ours cannot be registered
            return str(exc)
        seen = _registrations()
        if seen == self._clean_at:   # nothing could have registered since the last clean scan
            return None
        found = module.foreign_kernel(module.COUNT_KEY)
        if found is None:
            self._clean_at = seen
            return None
        return (f"another library registered a kernel on the dispatch key "
                f"{module.COUNT_KEY_NAME} for {found}")


class _Holds:
    """Per thread: the live counters that counted there (the key is on)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.by_thread: dict[int, int] = {}


_holds = _Holds()


class KeyHold:
    """A counter's hold on the counting key of the thread it counted on: the
    key goes on when the thread's first holder is made and off when its last
    one is garbage collected on that thread (on another thread: at the
    thread's next counted op once no counter lives anywhere, csrc/torch)."""

    __slots__ = ("module", "thread")

    def __init__(self, module: Any) -> None:
        self.module = module
        self.thread = threading.get_ident()
        with _holds.lock:
            _holds.by_thread[self.thread] = _holds.by_thread.get(self.thread, 0) + 1
        module.key_hold(1, False)

    def __del__(self) -> None:
        # not weakref.finalize: its registry churns with every counter of a
        # loop (see _module_table.ModuleTable.__del__)
        try:
            with _holds.lock:
                left = _holds.by_thread.get(self.thread, 1) - 1
                if left:
                    _holds.by_thread[self.thread] = left
                else:
                    _holds.by_thread.pop(self.thread, None)
            self.module.key_hold(-1, not left and self.thread == threading.get_ident())
        except Exception:  # noqa: BLE001 -- at interpreter exit the module's globals are gone
            pass


_backend: Any = None
_backend_lock = threading.Lock()
_fallen_back = False


def _warn_fallback(problem: str) -> None:
    warnings.warn(f"mfu_tracker: FLOP counting uses the slower TorchDispatchMode fallback: "
                  f"{problem}.", RuntimeWarning, stacklevel=5)


def _load_backend() -> Any:
    from ._dispatch import DispatchBackend

    module = observer_module()
    problem = key_problem("count")
    if module is not None and problem is None:
        return ExtBackend(module)
    _warn_fallback(problem or "mfu_tracker._torch is unavailable")
    return DispatchBackend()


def get_backend() -> Any:
    """The backend counters start on now (loaded at the first call)."""
    global _backend
    if _backend is None:
        with _backend_lock:
            if _backend is None:
                _backend = _load_backend()
    return _backend


def current_backend() -> Any:
    """The backend if one was loaded, else None (never loads)."""
    return _backend


def fall_back(problem: str) -> Any:
    """Count with the TorchDispatchMode fallback from now on, warning once
    with ``problem``; the counting key leaves this thread's dispatch (and any
    other's at its next counted op outside a count). The new backend."""
    global _backend, _fallen_back
    from ._dispatch import DispatchBackend

    with _backend_lock:
        old = _backend
        if _fallen_back or not isinstance(old, ExtBackend):
            return _backend
        _fallen_back = True
        _backend = DispatchBackend()
    old.module.key_hold(0, True)
    _warn_fallback(problem)
    return _backend


def counter_backend() -> str:
    """``"torch-ext"`` (the C++ observer) or ``"dispatch"`` (the fallback)."""
    return get_backend().name
