"""A dispatched call's torch arguments as the C core takes them.

Both backends hand the core (``_C.op_count``, csrc/core/ops/ops.h) plain data:
shapes, ints, int lists, cumulative lengths' values. The C++ observer
converts in C++ (csrc/torch/convert.cpp); this module is the same
conversion for the TorchDispatchMode fallback and the higher-order
operators' kernels (:mod:`._hops`): :func:`count_call` counts one call of an
op of the table or with a custom formula at a :class:`~._sites.Site`.
"""
from __future__ import annotations

import threading
import weakref
from typing import Any

from ..._native import _C
from ..._dtypes import normalize_dtype

__all__ = ["BLOCK_MASK_AT", "INPUTS", "Args", "compiling_internally", "count_call", "hop_args",
           "hop_name", "is_compiling", "largest_input", "one_line", "tf32_bits"]

# op name -> the arguments its count reads: ((position, role, need), ...)
INPUTS: dict[str, tuple[tuple[int, str, str], ...]] = {
    row["name"]: row["inputs"] for row in _C.op_table()
}


class _CountError(Exception):
    """An argument could not be converted (recorded, never raised out)."""


# ---------------------------------------------------------------------------
# Torch arguments -> plain data
# ---------------------------------------------------------------------------

class Args:
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


def _readable(t: Any) -> bool:
    """Whether a tensor's values can be read: not on meta, not a fake or
    other subclass tensor (their values are unknown: the core counts the
    worst case, max_seqlen per sequence, as FlopCounterMode does)."""
    import torch

    return t.device.type != "meta" and type(t) in (torch.Tensor, torch.nn.Parameter)


def one_line(exc: BaseException) -> str:
    """An exception as one line of a warning: its first line (a torch error
    built with C++ stack traces on carries them after it)."""
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def _plain(value: Any, role: str, need: str) -> Any:
    """One argument as ``_C.op_count`` takes it (None: absent)."""
    import torch

    if need in ("tensor", "offsets", "values"):
        if not isinstance(value, torch.Tensor):
            return None
        shape = _shape(value, role)
        if (need == "values" or (need == "offsets" and value.dim() == 1)) \
                and _readable(value):
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

    a = Args(func, args, kwargs)
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


def compiling_internally() -> bool:
    """Whether torch.compile is at work on this thread -- tracing (dynamo,
    make_fx) or compiling a graph (inductor; a backward compiled lazily at
    its first call, inside the tracing context it saved): the fake tensors it
    runs ops on are its own, not a user's fake run."""
    import torch

    return bool(is_compiling()) or torch._guards.TracingContext.try_get() is not None


def hop_name(hop: Any) -> str:
    """A higher-order operator's name as the op table spells it
    (``"higher_order::flex_attention"``)."""
    return f"{hop.namespace}::{hop._name}"


# where a higher-order op of the table takes its BlockMask tuple
BLOCK_MASK_AT = {"higher_order::flex_attention": 4, "higher_order::flex_attention_backward": 9}


def hop_args(name: str, args: tuple, kwargs: dict) -> list[Any]:
    """A flex_attention (or backward) call flattened as its op-table row
    reads it (csrc/core/ops/op_table.c): q, k, v, the BlockMask's partial and
    full key blocks, its block sizes. The tuple starts with the sequence
    lengths since torch 2.6 and ends with (Q_BLOCK_SIZE, KV_BLOCK_SIZE,
    mask_mod) in every version."""
    at = BLOCK_MASK_AT[name]
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
               site: Any) -> Any:
    """The ``_C.OpFlops`` of one call at ``site`` (a :class:`~._sites.Site`);
    None: not counted. Raises when the call cannot be counted (the caller
    records it)."""
    inputs = INPUTS.get(name)
    if inputs is not None:
        a: Any = hop_args(name, args, kwargs) if name in BLOCK_MASK_AT \
            else Args(func, args, kwargs)
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
