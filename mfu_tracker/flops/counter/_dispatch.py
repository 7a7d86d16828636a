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
from typing import Any, NamedTuple

from ..._native import _C
from ..._dtypes import DTYPE_NAMES, normalize_dtype
from ..._validate import check_causal_attention
from ._audit import merge_uncounted

__all__ = ["DispatchBackend", "NodeSites", "Site", "count_call", "hop_args", "hop_name",
           "is_compiling", "largest_input", "tf32_bits"]

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


class Site(NamedTuple):
    """Where a call runs (``_C.op_count``'s phase and autograd keywords;
    csrc/core/ops.h "Sites")."""

    backward_phase: bool = False
    grad_enabled: bool = True
    node: str = "unknown"
    saved_tensor_hooks: bool = False
    recomputed: bool = False


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
               site: Site) -> Any:
    """The ``_C.OpFlops`` of one call; None: not counted. Raises when the
    call cannot be counted (the caller records it)."""
    inputs = _INPUTS.get(name)
    if inputs is not None:
        a: Any = hop_args(name, args, kwargs) if name in _BLOCK_MASK_AT \
            else _Args(func, args, kwargs)
        plain: list[Any] = [None] * (inputs[-1][0] + 1)
        for position, role, need in inputs:
            plain[position] = _plain(a[position], role, need)
        return _C.op_count(name, plain, causal_attention=causal,
                           backward_phase=site.backward_phase, grad_enabled=site.grad_enabled,
                           tf32=tf32_bits(args), node=site.node,
                           saved_tensor_hooks=site.saved_tensor_hooks,
                           recomputed=site.recomputed)
    if _C.has_flop_formula(name):
        values, any_grad, dtype = _formula_args(func, args, kwargs)
        return _C.flop_formula_count(name, values, any_grad, site.backward_phase,
                                     site.grad_enabled, dtype, tf32_bits(args), site.node,
                                     site.saved_tensor_hooks, site.recomputed)
    return None


class NodeSites:
    """Per thread: the autograd node being evaluated, what it is (as
    csrc/torch/site.cpp tells it) and the recomputed calls of its compiled
    backward still to run (``_compiled.recompute_plan``)."""

    def __init__(self) -> None:
        self.local = threading.local()
        self.plans: dict[type, Any] = {}

    def site(self, torch: Any, name: str, args: tuple, kwargs: dict, func: Any,
             grad_enabled: bool) -> Site:
        if torch._C._current_graph_task_id() == -1:
            return Site(grad_enabled=grad_enabled)
        hooks = torch._C._autograd._top_saved_tensors_default_hooks(True) is not None
        node = torch._C._current_autograd_node()
        local = self.local
        if getattr(local, "node", None) is not node:
            local.node = node  # held: its id is not reused meanwhile
            local.kind, local.budget = self._classify(torch, node)
        recomputed = bool(local.budget) and _take(local.budget, name, args, kwargs, func)
        return Site(True, grad_enabled, local.kind, hooks, recomputed)

    def _classify(self, torch: Any, node: Any) -> tuple[str, list]:
        if not isinstance(node, torch._C._FunctionBase):  # autograd's own node, or none
            return "builtin", []
        if type(node).__name__.endswith("CheckpointFunctionBackward"):
            return "checkpoint", []
        forward_cls = getattr(type(node), "_forward_cls", None)
        if getattr(forward_cls, "__module__", "").startswith("torch._higher_order_ops."):
            # a higher-order op's own autograd (flex_attention's): the op was
            # counted above it, at its forward site, with the backward its
            # inputs need -- its backward is autograd's, executed only
            return "builtin", []
        from ._compiled import recompute_plan

        cls = type(node)
        if cls not in self.plans:
            self.plans[cls] = recompute_plan(node)
        return "custom", list(self.plans[cls] or ())


def _take(budget: list, name: str, args: tuple, kwargs: dict, func: Any) -> bool:
    """Whether the call is one of the node's recomputed calls still to run
    (and then consume it): the same op kind and role tensor shapes (-1: any)."""
    from ._compiled import kind_of

    kind = kind_of(name)
    if kind is None:
        return False
    a: Any = hop_args(name, args, kwargs) if name in _BLOCK_MASK_AT else _Args(func, args, kwargs)
    shapes = [getattr(a[pos], "shape", None) for pos, _role, need in _INPUTS[name]
              if need == "tensor"]
    for i, (want_kind, want) in enumerate(budget):
        if want_kind != kind or len(want) != len(shapes):
            continue
        if all(w == (-2,) or (s is not None and len(s) == len(w)
                                and all(x < 0 or x == y for x, y in zip(w, s)))
               for s, w in zip(shapes, want)):
            del budget[i]
            return True
    return False


# ---------------------------------------------------------------------------
# The backend: sessions over a TorchDispatchMode
# ---------------------------------------------------------------------------

def _new_totals() -> dict[str, Any]:
    return {
        "executed_flops": 0, "forward_flops": 0, "model_flops": 0,
        "backward_flops": 0, "recompute_flops": 0, "overcompute_flops": 0,
        "counted_calls": 0, "errors": 0,
        "approximate_calls": 0, "first_error": None, "ops": {}, "modules": {},
        "model_flops_by_dtype": [0] * len(DTYPE_NAMES),
        "executed_flops_by_dtype": [0] * len(DTYPE_NAMES),
        "uncounted": {},
    }


_DTYPE_INDEX = {name: i for i, name in enumerate(DTYPE_NAMES)}


# Per thread: the innermost module token of its forward (module_enter).
_module = threading.local()


class _Session:
    def __init__(self, causal: str, count_fake: bool, modules: bool) -> None:
        self.causal = causal
        self.count_fake = count_fake
        self.modules = modules
        self.sites = NodeSites()
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

    def commit(self, name: str, result: Any) -> None:
        """Add one counted call (an ``_C.OpFlops``, or the exception it
        raised) by its site: the core decided what it counts
        (csrc/core/ops.h)."""
        self.calls.counted = self.counted() + 1
        with self.lock:
            t = self.totals
            if isinstance(result, Exception):
                t["errors"] += 1
                if t["first_error"] is None:
                    t["first_error"] = f"{name}: {result}"
                return
            executed, d = result.executed, _DTYPE_INDEX[result.dtype]
            model = result.model_self + result.model_backward
            t["counted_calls"] += 1
            t["executed_flops"] += executed
            t["executed_flops_by_dtype"][d] += executed
            t["forward_flops" if result.site == "forward" else "backward_flops"] += executed
            if result.site in ("recompute", "recompute_backprop"):
                t["recompute_flops"] += executed
            t["model_flops"] += model
            t["model_flops_by_dtype"][d] += model
            t["overcompute_flops"] += result.overcompute
            t["approximate_calls"] += int(result.approximate)
            calls, flops = t["ops"].get(name, (0, 0))
            t["ops"][name] = (calls + 1, flops + executed)
            token = getattr(_module, "token", 0)
            if self.modules and token and result.site == "forward":
                f, m, c = t["modules"].get(token, (0, 0, 0))
                t["modules"][token] = (f + executed, m + model, c)

    def record_uncounted(self, name: str, shape: tuple[int, ...]) -> None:
        with self.lock:
            merge_uncounted(self.totals["uncounted"], {name: (1, shape)})


def _counted(name: str) -> bool:
    return name in _INPUTS or _C.has_flop_formula(name)


def _skip_subclass(session: _Session, args: tuple) -> bool:
    """A tensor subclass among the arguments: the op it becomes counts --
    unless they are fake tensors of the user's FakeTensorMode (the counter
    was entered under it) and nothing traces."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensor

    odd = [x for x in args
           if isinstance(x, torch.Tensor) and type(x) not in (torch.Tensor, torch.nn.Parameter)]
    if not odd:
        return False
    return not (session.count_fake and all(isinstance(x, FakeTensor) for x in odd)
                and torch._C._get_dispatch_mode(torch._C._TorchDispatchModeKey.PROXY) is None)


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
                if _skip_subclass(session, args):
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
    module_enter / module_exit)."""

    name = "dispatch"

    def __init__(self) -> None:
        self._sessions: dict[int, _Session] = {}
        self._next = 0
        self._lock = threading.Lock()

    def start(self, causal: str, count_fake: bool = False, modules: bool = False) -> int:
        check_causal_attention(causal, type_error=False)
        limit = _C.LIMIT_COUNTERS_MAX
        with self._lock:
            if len(self._sessions) >= limit:
                raise RuntimeError(
                    f"too many FLOP counters active at once (at most {limit}, nested "
                    "or on other threads)")
        session = _Session(causal, count_fake, modules)
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
            out["modules"] = dict(session.totals["modules"])
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
