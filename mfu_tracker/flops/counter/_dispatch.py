"""The TorchDispatchMode fallback of the FLOP counter.

Used when the C++ observer (``mfu_tracker._torch``, csrc/torch) cannot load.
Like the observer, it only turns each dispatched op's torch arguments into
plain data and adds up the answers: which ops count and what a call costs is
the C core's (csrc/core/ops/ops.h), reached through ``_C.op_count`` for the op
table's rows (``_C.op_table()``) and ``_C.flop_formula_count`` for the custom
formulas of ``_C``'s one registry. So on the same run both counters agree
(tests/flops/counter/test_dispatch.py checks every row).

NB: an op that is neither counted nor composite runs outside the mode, so the
ops its own kernel calls are not seen: the counted matmul inside a custom op
without a registered formula counts on the C++ observer, not here.

Higher-order operators (flex_attention, cond, ...) reach the mode too
(``supports_higher_order_operators``): the table's (flex_attention and its
backward) are counted, with their arguments flattened as the table's rows
read them (:func:`._args.hop_args`); any other runs as an opaque op does (a
higher-order op's dense kernel refuses to run under a mode), so what it runs
is not seen here (the C++ observer counts it). The mode lets torch.compile
run under it (``ignore_compile_internals``: flex_attention and cond compile
themselves even in eager); the compiled code's ops reach it. The audit
(``audit=True``) records the ops outside the table that took tensors and
during which nothing was counted (:mod:`._audit`); an uncounted higher-order
op is recorded so, audit or not.
"""
from __future__ import annotations

import threading
from typing import Any

from ..._native import _C
from ..._dtypes import DTYPE_NAMES
from ..._validate import check_causal_attention
from ._args import INPUTS, compiling_internally, count_call, hop_name, largest_input, one_line
from ._audit import merge_uncounted
from ._totals import BY_DTYPE_KEYS, merge, zero_totals
from ._sites import NodeSites

__all__ = ["DispatchBackend"]

# ---------------------------------------------------------------------------
# The backend: sessions over a TorchDispatchMode
# ---------------------------------------------------------------------------

_DTYPE_INDEX = {name: i for i, name in enumerate(DTYPE_NAMES)}


# Per thread: the innermost module token of its forward (module_enter).
_module = threading.local()


class _Session:
    def __init__(self, causal: str, modules: bool) -> None:
        self.causal = causal
        self.modules = modules
        self.sites = NodeSites()
        self.owner = threading.get_ident()
        self.lock = threading.Lock()
        self.totals = zero_totals()
        self.modes: tuple[Any, ...] = ()
        self.audit = False
        # per thread: "stack", (op name, grad mode) of the counted ops called
        # from Python that are running (see _make_modes); "counted", the
        # calls counted so far (an op during which it does not move was
        # not covered: the audit)
        self.calls = threading.local()

    def counted(self) -> int:
        return self.calls.__dict__.get("counted", 0)

    def commit(self, name: str, result: Any) -> None:
        """Add one counted call (an ``_C.OpFlops``, or the exception it
        raised) by its site: the core decided what it counts
        (csrc/core/ops/ops.h)."""
        self.calls.counted = self.counted() + 1
        with self.lock:
            t = self.totals
            if isinstance(result, Exception):
                t["errors"] += 1
                if t["first_error"] is None:
                    t["first_error"] = f"{name}: {one_line(result)}"
                return
            executed, d = result.executed, _DTYPE_INDEX[result.dtype]
            t["counted_calls"] += 1
            t["executed_flops"] += executed
            t["executed_flops_by_dtype"][d] += executed
            t["forward_flops" if result.site == "forward" else "backward_flops"] += executed
            if result.site in ("recompute", "recompute_backprop"):
                t["recompute_flops"] += executed
            t["model_flops"] += result.model_self
            t["model_flops_by_dtype"][d] += result.model_self
            t["overcompute_flops"] += result.overcompute
            t["anticipated_flops"] += result.model_backward
            t["anticipated_flops_by_dtype"][d] += result.model_backward
            t["anticipated_overcompute_flops"] += result.overcompute_backward
            t["mask_read_calls"] += int(result.mask_read)
            if result.mask_tensor:
                t["mask_tensor_calls"] += 1
                t["mask_tensor_flops"] += executed
            t["approximate_calls"] += int(result.approximate)
            calls, flops = t["ops"].get(name, (0, 0))
            t["ops"][name] = (calls + 1, flops + executed)
            token = getattr(_module, "token", 0)
            if self.modules and token and result.site == "forward":
                # attributed at the forward: its own FLOPs and the backward it anticipates
                model = result.model_self + result.model_backward
                f, m, c = t["modules"].get(token, (0, 0, 0))
                t["modules"][token] = (f + executed, m + model, c)

    def record_uncounted(self, name: str, shape: tuple[int, ...]) -> None:
        with self.lock:
            merge_uncounted(self.totals["uncounted"], {name: (1, shape)})


def _counted(name: str) -> bool:
    return name in INPUTS or _C.has_flop_formula(name)


def _skip_subclass(args: tuple) -> bool:
    """A tensor subclass among the arguments: the op it becomes counts --
    unless they are fake tensors of the user's fake run (a FakeTensorMode
    active, entered around the counter or inside it; no proxy mode and not
    torch.compile, whose tracing and compiling run under a fake mode of its
    own)."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensor

    odd = [x for x in args
           if isinstance(x, torch.Tensor) and type(x) not in (torch.Tensor, torch.nn.Parameter)]
    if not odd:
        return False
    key = torch._C._TorchDispatchModeKey
    return not (all(isinstance(x, FakeTensor) for x in odd)
                and torch._C._get_dispatch_mode(key.FAKE) is not None
                and torch._C._get_dispatch_mode(key.PROXY) is None
                and not compiling_internally())


def _function_name(func: Any) -> str | None:
    """The op name of a torch function that is an op (None otherwise)."""
    from torch._ops import HigherOrderOperator

    if isinstance(func, HigherOrderOperator):
        return hop_name(func)
    schema = getattr(func, "_schema", None)
    return schema.name if schema is not None else getattr(func, "_qualified_op_name", None)


def _grad_mode_notes(calls: threading.local) -> Any:
    """The TorchFunctionMode of :func:`_make_modes`: the grad mode at each
    call of a counted op from Python, on ``calls.stack``."""
    import torch
    from torch.overrides import TorchFunctionMode

    compiling = getattr(torch.compiler, "is_compiling", None) or torch._dynamo.is_compiling

    class _NoteGradMode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if compiling():  # torch.compile traces modes: nothing to note there
                return func(*args, **kwargs)
            name = _function_name(func)
            if name is None or not _counted(name):
                return func(*args, **kwargs)
            stack = calls.__dict__.setdefault("stack", [])
            stack.append((name, torch.is_grad_enabled()))
            try:
                return func(*args, **kwargs)
            finally:
                stack.pop()

    return _NoteGradMode()


def _counting_mode(session: _Session) -> Any:
    """The TorchDispatchMode of :func:`_make_modes`."""
    import torch
    from torch._ops import HigherOrderOperator
    from torch.utils._python_dispatch import TorchDispatchMode

    calls = session.calls
    names: dict[Any, str] = {}
    prim_device = torch.ops.prim.device.default

    def grad_mode_of(name: str) -> bool:
        stack = calls.__dict__.get("stack")
        return stack[-1][1] if stack and stack[-1][0] == name else torch.is_grad_enabled()

    def count_and_run(name: str, func: Any, args: tuple, kwargs: dict) -> Any:
        try:
            site = session.sites.site(torch, name, args, kwargs, func, grad_mode_of(name))
            result = count_call(name, func, args, kwargs, session.causal, site)
        except Exception as exc:  # noqa: BLE001 - never raise into the op
            result = exc
        out = func(*args, **kwargs)
        if result is not None:
            session.commit(name, result)  # only once the op ran
        return out

    class _CountingMode(TorchDispatchMode):
        supports_higher_order_operators = True

        @classmethod
        def ignore_compile_internals(cls) -> bool:
            # torch.compile may run under the mode (flex_attention compiles
            # itself even in eager); the compiled code's ops still reach it
            return True

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            name = names.get(func)
            if name is None:
                name = names.setdefault(func, hop_name(func) if isinstance(
                    func, HigherOrderOperator) else func._schema.name)
            if _counted(name):
                if _skip_subclass(args):
                    return func(*args, **kwargs)  # a subclass: the op it becomes counts
                return count_and_run(name, func, args, kwargs)
            if not session.audit and not isinstance(func, HigherOrderOperator):
                return self._run(func, args, kwargs)  # free, as ever
            before = session.counted()
            out = self._run(func, args, kwargs)
            if session.counted() == before:
                shape = largest_input((args, kwargs))
                if shape is not None:
                    session.record_uncounted(name, shape)
            return out

        def _run(self, func: Any, args: tuple, kwargs: dict) -> Any:
            # NB: a higher-order op's dense kernel refuses to run under a
            # mode: it runs as an opaque op does, what it runs unseen
            if func is not prim_device and not isinstance(func, HigherOrderOperator):
                # Composite ops reach a mode undecomposed when autograd is
                # off (inference_mode): count what they decompose into, as
                # FlopCounterMode does.
                with self:
                    r = func.decompose(*args, **kwargs)
                if r is not NotImplemented:
                    return r
            return func(*args, **kwargs)

    return _CountingMode()


def _make_modes(session: _Session) -> tuple[Any, Any]:
    """A TorchFunctionMode and the TorchDispatchMode that counts, to enter
    in that order.

    The dispatch mode sees ops below autograd. For an op whose autograd is a
    Python ``autograd.Function`` (custom ops with ``register_autograd``, such
    as ``torch.nn.attention.varlen``, and flex_attention), grad mode is off
    down there even when the caller had it on; the C++ observer sees the
    call above autograd. So the function mode notes the grad mode at each
    call of a counted op from Python, and the dispatch mode counts the call
    with it.
    """
    return _grad_mode_notes(session.calls), _counting_mode(session)


class DispatchBackend:
    """The counter backend over a TorchDispatchMode (same interface and
    limits as the C++ observer's, :class:`~._backend.ExtBackend`: start /
    stop / totals / reset / module_enter / module_exit)."""

    name = "dispatch"

    def __init__(self) -> None:
        self._sessions: dict[int, _Session] = {}
        self._next = 0
        self._lock = threading.Lock()

    def start(self, causal: str, modules: bool = False) -> int:
        check_causal_attention(causal, type_error=False)
        limit = _C.LIMIT_COUNTERS_MAX
        with self._lock:
            if len(self._sessions) >= limit:
                raise RuntimeError(
                    f"too many FLOP counters active at once (at most {limit}, nested "
                    "or on other threads)")
        session = _Session(causal, modules)
        session.modes = _make_modes(session)
        for mode in session.modes:
            mode.__enter__()
        with self._lock:
            handle = self._next
            self._next += 1
            self._sessions[handle] = session
        return handle

    def audit(self, handle: int) -> None:
        self._session(handle).audit = True

    def _session(self, handle: int) -> _Session:
        session = self._sessions.get(handle)
        if session is None:
            raise ValueError(f"no active FLOP count in slot {handle}")
        return session

    def stop(self, handle: int, totals: dict[str, Any]) -> None:
        """End the count ``handle``; its totals join ``totals`` (new_totals())."""
        session = self._session(handle)
        if session.owner != threading.get_ident():
            raise RuntimeError(
                "a FlopCounter must be exited on the thread that entered it "
                "(its dispatch mode is thread-local)")
        for mode in reversed(session.modes):
            mode.__exit__(None, None, None)
        with self._lock:
            del self._sessions[handle]
        with session.lock:
            merge(totals, session.totals)

    @staticmethod
    def new_totals() -> dict[str, Any]:
        return zero_totals()

    def totals(self, held: dict[str, Any], handle: Any = None,
               tables: bool = False) -> dict[str, Any]:
        """``held`` (and the active count ``handle``'s so far) as a fresh dict."""
        out = zero_totals()
        merge(out, held)
        if handle is not None:
            session = self._session(handle)
            with session.lock:
                merge(out, session.totals)
        for key in BY_DTYPE_KEYS:
            out[key] = tuple(out[key])
        return out

    @staticmethod
    def reset_totals(held: dict[str, Any]) -> None:
        held.clear()
        held.update(zero_totals())

    @staticmethod
    def note_error(held: dict[str, Any], message: str) -> None:
        held["errors"] += 1
        if held["first_error"] is None:
            held["first_error"] = message

    def reset(self, handle: int) -> None:
        session = self._session(handle)
        with session.lock:
            session.totals = zero_totals()

    def module_enter(self, token: int) -> int:
        """``token`` is now this thread's innermost module; one call of it for
        each of the thread's sessions with a module table. The previous token."""
        import torch

        previous = getattr(_module, "token", 0)
        _module.token = token
        if torch._C._current_graph_task_id() != -1:
            return previous  # a recompute's module call is not a forward call
        me = threading.get_ident()
        for session in list(self._sessions.values()):
            if session.modules and session.owner == me:
                with session.lock:
                    f, m, c = session.totals["modules"].get(token, (0, 0, 0))
                    session.totals["modules"][token] = (f, m, c + 1)
        return previous

    @staticmethod
    def module_exit(previous: int) -> None:
        _module.token = previous
