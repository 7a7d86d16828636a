"""The TorchDispatchMode fallback of the FLOP counter.

Used when the C++ observer (``mfu_tracker._torch``, csrc/torch) cannot load.
Like the observer, it only turns each dispatched op's torch arguments into
plain data and adds up the answers: which ops count and what a call costs is
the C core's (csrc/core/ops.h), reached through ``_C.op_count`` for the op
table's rows (``_C.op_table()``) and ``_C.flop_formula_count`` for the custom
formulas of ``_C``'s one registry. So on the same run both counters agree
(tests/test_counter_fallback.py checks every row).

NB: an op that is neither counted nor composite runs outside the mode, so the
ops its own kernel calls are not seen: the counted matmul inside a custom op
without a registered formula counts on the C++ observer, not here.

Higher-order operators (flex_attention, cond, ...) reach the mode too
(``supports_higher_order_operators``): the table's (flex_attention and its
backward) are counted, with their arguments flattened as the table's rows
read them (:func:`hop_args`); any other runs as an opaque op does (a
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
import weakref
from typing import Any

from ... import _C
from ..._dtypes import DTYPE_NAMES, normalize_dtype
from ..._validate import check_causal_attention
from ._audit import merge_uncounted

__all__ = ["DispatchBackend", "count_call", "hop_args", "hop_name", "is_compiling",
           "largest_input", "tf32_bits"]

# op name -> the arguments its count reads: ((position, role, need), ...)
_INPUTS: dict[str, tuple[tuple[int, str, str], ...]] = {
    row["name"]: row["inputs"] for row in _C.op_table()
}


class _CountError(Exception):
    """An argument could not be converted (recorded, never raised out)."""


# ---------------------------------------------------------------------------
# Torch arguments -> plain data
# ---------------------------------------------------------------------------

class _Args:
    """Positional access to a dispatched call, schema defaults filled in."""

    def __init__(self, func: Any, args: tuple, kwargs: dict) -> None:
        self.func, self.args, self.kwargs = func, args, kwargs

    def __getitem__(self, index: int) -> Any:
        if index < len(self.args):
            return self.args[index]
        schema_args = self.func._schema.arguments
        if index >= len(schema_args):
            return None
        arg = schema_args[index]
        if arg.name in self.kwargs:
            return self.kwargs[arg.name]
        return arg.default_value if arg.has_default_value() else None


def _shape(t: Any, what: str) -> tuple[int, ...]:
    if t.is_nested:
        raise _CountError(f"{what} is a nested tensor")
    shape = tuple(t.shape)
    if not all(isinstance(d, int) for d in shape):
        raise _CountError(f"{what} has symbolic sizes")
    return shape


_DTYPE_NAMES: dict[Any, str | None] = {}


def _dtype_name(t: Any) -> str | None:
    """A tensor's dtype as ``_C.op_count`` takes it: a name of
    ``_C.dtype_names()``, None for one without (bool, complex, integers
    other than int8)."""
    name = _DTYPE_NAMES.get(t.dtype, "")
    if name == "":
        try:
            name = normalize_dtype(t.dtype)
        except ValueError:
            name = None
        _DTYPE_NAMES[t.dtype] = name
    return name


def tf32_bits(args: Any) -> int:
    """Where fp32 may run as TF32 for a call (``_C.op_count``'s ``tf32``):
    CUDA and meta (a meta run stands for a GPU run) follow torch's settings;
    CPU has none (as csrc/torch/observer.cpp)."""
    import torch

    for value in args:
        if isinstance(value, torch.Tensor):
            if value.device.type not in ("cuda", "meta"):
                return 0
            return ((1 if torch.backends.cuda.matmul.allow_tf32 else 0)
                    | (2 if torch.backends.cudnn.allow_tf32 else 0))
    return 0


_VALUES: dict[int, tuple[Any, int, list[int]]] = {}  # id -> (weakref, _version, values)
_VALUES_LOCK = threading.Lock()


def _values(t: Any) -> list[int]:
    """A tensor's values as ints, row-major. NB: a device tensor is copied to
    the host, which waits for it (as the observer does); a block mask read
    by every layer of a step is copied once (kept until it changes or
    goes)."""
    try:
        version = t._version
    except RuntimeError:  # an inference tensor: no version counter, no reuse
        return [int(v) for v in t.reshape(-1).tolist()]
    with _VALUES_LOCK:
        hit = _VALUES.get(id(t))
        if hit is not None and hit[0]() is t and hit[1] == version:
            return hit[2]
    values = [int(v) for v in t.reshape(-1).tolist()]
    with _VALUES_LOCK:
        if len(_VALUES) >= 16:
            _VALUES.pop(next(iter(_VALUES)))
        _VALUES[id(t)] = (weakref.ref(t), version, values)
    return values


def _plain(value: Any, role: str, need: str) -> Any:
    """One argument as ``_C.op_count`` takes it (None: absent)."""
    import torch

    if need in ("tensor", "offsets", "values"):
        if not isinstance(value, torch.Tensor):
            return None
        shape = _shape(value, role)
        if (need == "values" or (need == "offsets" and value.dim() == 1)) \
                and value.device.type != "meta":
            return (shape, value.requires_grad, _values(value))
        return (shape, value.requires_grad, None, _dtype_name(value))
    if need == "int":
        return int(value) if isinstance(value, (bool, int, torch.SymInt)) else None
    if isinstance(value, (bool, int, torch.SymInt)):  # an int list given as one int
        return (int(value),)
    if isinstance(value, (list, tuple)):
        return tuple(int(v) for v in value)
    return None


def _formula_args(func: Any, args: tuple, kwargs: dict) -> tuple[tuple, bool, str | None]:
    """A custom formula's arguments (tensors as shapes, as the observer passes
    them), whether a tensor among them requires grad, and the dtype of the
    first tensor that has one."""
    import torch

    a = _Args(func, args, kwargs)
    values = []
    any_grad = False
    dtype = None
    for i in range(len(func._schema.arguments)):
        item = a[i]
        if isinstance(item, torch.Tensor):
            any_grad = any_grad or item.requires_grad
            dtype = dtype or _dtype_name(item)
            item = _shape(item, "a tensor argument")
        elif isinstance(item, (list, tuple)) and all(isinstance(x, int) for x in item):
            item = tuple(item)
        elif not isinstance(item, (bool, int, float)) and item is not None:
            item = None
        values.append(item)
    return tuple(values), any_grad, dtype


def is_compiling() -> bool:
    """Whether torch.compile is tracing (older torch: torch._dynamo's flag)."""
    import torch

    check = getattr(torch.compiler, "is_compiling", None) or torch._dynamo.is_compiling
    return bool(check())


def hop_name(hop: Any) -> str:
    """A higher-order operator's name as the op table spells it
    (``"higher_order::flex_attention"``)."""
    return f"{hop.namespace}::{hop._name}"


# where a higher-order op of the table takes its BlockMask tuple
_BLOCK_MASK_AT = {"higher_order::flex_attention": 4, "higher_order::flex_attention_backward": 9}


def hop_args(name: str, args: tuple, kwargs: dict) -> list[Any]:
    """A flex_attention (or backward) call flattened as its op-table row
    reads it (csrc/core/op_table.c): q, k, v, the BlockMask's partial and
    full key blocks, its block sizes. The tuple starts with the sequence
    lengths since torch 2.6 and ends with (Q_BLOCK_SIZE, KV_BLOCK_SIZE,
    mask_mod) in every version."""
    at = _BLOCK_MASK_AT[name]
    mask = args[at] if len(args) > at else kwargs["block_mask"]
    skip = 2 if isinstance(mask[0], int) else 0
    return [*args[:3], *mask[skip:skip + 4], mask[-3], mask[-2]]


def largest_input(args: Any) -> tuple[int, ...] | None:
    """The shape of the largest tensor among ``args`` (nested in lists,
    tuples and dicts), None without one (the audit's "took tensors")."""
    import torch

    best: tuple[int, ...] | None = None
    best_numel = -1
    todo = [args]
    while todo:
        value = todo.pop()
        if isinstance(value, torch.Tensor):
            shape = tuple(value.shape)
            if all(isinstance(d, int) for d in shape) and value.numel() > best_numel:
                best, best_numel = shape, value.numel()
        elif isinstance(value, (list, tuple)):
            todo.extend(value)
        elif isinstance(value, dict):
            todo.extend(value.values())
    return best


def count_call(name: str, func: Any, args: tuple, kwargs: dict, causal: str,
               backward_phase: bool, grad_enabled: bool) -> tuple[int, int, bool, str] | None:
    """(executed, model backward, approximate, compute dtype name) of one
    call; None: not counted. Raises when the call cannot be counted (the
    caller records it)."""
    inputs = _INPUTS.get(name)
    if inputs is not None:
        a: Any = hop_args(name, args, kwargs) if name in _BLOCK_MASK_AT \
            else _Args(func, args, kwargs)
        plain: list[Any] = [None] * (inputs[-1][0] + 1)
        for position, role, need in inputs:
            plain[position] = _plain(a[position], role, need)
        return _C.op_count(name, plain, causal_attention=causal,
                           backward_phase=backward_phase, grad_enabled=grad_enabled,
                           tf32=tf32_bits(args))
    if _C.has_flop_formula(name):
        values, any_grad, dtype = _formula_args(func, args, kwargs)
        return _C.flop_formula_count(name, values, any_grad, backward_phase, grad_enabled,
                                     dtype, tf32_bits(args))
    return None


# ---------------------------------------------------------------------------
# The backend: sessions over a TorchDispatchMode
# ---------------------------------------------------------------------------

def _new_totals() -> dict[str, Any]:
    return {
        "executed_flops": 0, "forward_flops": 0, "model_flops": 0,
        "backward_flops": 0, "counted_calls": 0, "errors": 0,
        "approximate_calls": 0, "first_error": None, "ops": {},
        "model_flops_by_dtype": [0] * len(DTYPE_NAMES),
        "executed_flops_by_dtype": [0] * len(DTYPE_NAMES),
        "uncounted": {},
    }


_DTYPE_INDEX = {name: i for i, name in enumerate(DTYPE_NAMES)}


class _Session:
    def __init__(self, causal: str) -> None:
        self.causal = causal
        self.owner = threading.get_ident()
        self.lock = threading.Lock()
        self.totals = _new_totals()
        self.modes: tuple[Any, ...] = ()
        self.audit = False
        # per thread: "stack", (op name, grad mode) of the counted ops called
        # from Python that are running (see _make_modes); "counted", the
        # calls counted so far (an op during which it does not move was
        # not covered: the audit)
        self.calls = threading.local()

    def counted(self) -> int:
        return self.calls.__dict__.get("counted", 0)

    def commit(self, name: str, backward_phase: bool, result: Any) -> None:
        """Add one counted call (or the exception its count raised)."""
        self.calls.counted = self.counted() + 1
        with self.lock:
            t = self.totals
            if isinstance(result, Exception):
                t["errors"] += 1
                if t["first_error"] is None:
                    t["first_error"] = f"{name}: {result}"
                return
            executed, model_backward, approximate, dtype = result
            d = _DTYPE_INDEX[dtype]
            t["counted_calls"] += 1
            t["executed_flops"] += executed
            t["executed_flops_by_dtype"][d] += executed
            if backward_phase:
                t["backward_flops"] += executed
            else:
                t["forward_flops"] += executed
                t["model_flops"] += executed + model_backward
                t["model_flops_by_dtype"][d] += executed + model_backward
            t["approximate_calls"] += int(approximate)
            calls, flops = t["ops"].get(name, (0, 0))
            t["ops"][name] = (calls + 1, flops + executed)

    def record_uncounted(self, name: str, shape: tuple[int, ...]) -> None:
        with self.lock:
            merge_uncounted(self.totals["uncounted"], {name: (1, shape)})


def _counted(name: str) -> bool:
    return name in _INPUTS or _C.has_flop_formula(name)


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
    plain = (torch.Tensor, torch.nn.Parameter)
    names: dict[Any, str] = {}
    prim_device = torch.ops.prim.device.default

    def grad_mode_of(name: str) -> bool:
        stack = calls.__dict__.get("stack")
        return stack[-1][1] if stack and stack[-1][0] == name else torch.is_grad_enabled()

    def count_and_run(name: str, func: Any, args: tuple, kwargs: dict) -> Any:
        backward_phase = torch._C._current_graph_task_id() != -1
        try:
            result = count_call(name, func, args, kwargs, session.causal, backward_phase,
                                grad_mode_of(name))
        except Exception as exc:  # noqa: BLE001 - never raise into the op
            result = exc
        out = func(*args, **kwargs)
        if result is not None:
            session.commit(name, backward_phase, result)  # only once the op ran
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
                if any(isinstance(x, torch.Tensor) and type(x) not in plain for x in args):
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
    limits as the C++ ``_torch`` module: start / stop / read / reset /
    snapshot)."""

    name = "dispatch"

    def __init__(self) -> None:
        self._sessions: dict[int, _Session] = {}
        self._next = 0
        self._lock = threading.Lock()

    def start(self, causal: str) -> int:
        check_causal_attention(causal, type_error=False)
        limit = _C.LIMIT_COUNTERS_MAX
        with self._lock:
            if len(self._sessions) >= limit:
                raise RuntimeError(
                    f"too many FLOP counters active at once (at most {limit}, nested "
                    "or on other threads)")
        session = _Session(causal)
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

    def stop(self, handle: int) -> dict[str, Any]:
        session = self._session(handle)
        if session.owner != threading.get_ident():
            raise RuntimeError(
                "a FlopCounter must be exited on the thread that entered it "
                "(its dispatch mode is thread-local)")
        for mode in reversed(session.modes):
            mode.__exit__(None, None, None)
        with self._lock:
            del self._sessions[handle]
        return self._copy(session)

    @staticmethod
    def _copy(session: _Session) -> dict[str, Any]:
        with session.lock:
            out = dict(session.totals)
            out["ops"] = dict(session.totals["ops"])
            out["uncounted"] = dict(session.totals["uncounted"])
            for key in ("model_flops_by_dtype", "executed_flops_by_dtype"):
                out[key] = tuple(session.totals[key])
        return out

    def read(self, handle: int) -> dict[str, Any]:
        return self._copy(self._session(handle))

    def reset(self, handle: int) -> None:
        session = self._session(handle)
        with session.lock:
            session.totals = _new_totals()

    def snapshot(self, handle: int) -> tuple[int, int]:
        session = self._session(handle)
        with session.lock:
            return session.totals["forward_flops"], session.totals["model_flops"]
