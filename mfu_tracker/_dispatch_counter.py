"""The op table, and the TorchDispatchMode fallback of the FLOP counter.

``OP_TABLE`` is the one list of counted ops: the C++ observer
(``mfu_tracker._torch``, csrc/torch) loads it at start-up, and
:class:`DispatchBackend` (used when ``_torch`` cannot load) reads it directly.
Both count with the same compiled formulas of the C core (``_C``), so on
the same run they agree.

Row format: ``(op name, kind, params)``.

* matmul kinds (``MM``, ``ADDMM``, ``BMM``, ``BADDBMM``, ``GROUPED_MM``) and
  ``CONV_BACKWARD``: no params (positions are fixed by the schema).
* ``CONV``: ``(stride, padding, dilation, transposed, output_padding)``
  argument positions, -1 = absent (stride / dilation 1, padding 0, not
  transposed).
* ``ATTENTION``: ``(backward, layout, grad_out, q, k, v, cu_q, cu_k, max_q,
  max_k, causal, causal_is_mask_type)``; positions -1 = absent; layout
  ``BHSD`` (q: [b, h, s, d], the SDPA family), ``BSHD`` (q: [b, s, h, d],
  ``_flash_attention_*`` / ``_efficient_attention_*``; packed with
  cumulative lengths: [total, h, d] / [1, total, h, d]), ``THD`` (varlen:
  [total, h, d]).

Argument positions are those of torch 2.13's schemas (tests check every row
against ``torch.ops``). Kinds and layouts are the values of ``OpKind`` and
``AttnLayout`` in csrc/torch/mfu_torch.h.
"""
from __future__ import annotations

import threading
from typing import Any, Callable

from . import _C

__all__ = ["OP_TABLE", "DispatchBackend"]

# OpKind values (csrc/torch/mfu_torch.h)
MM, ADDMM, BMM, BADDBMM, GROUPED_MM, CONV, CONV_BACKWARD, ATTENTION, CUSTOM = range(1, 10)
# AttnLayout values
BHSD, BSHD, THD = 0, 1, 2
_F, _B = 0, 1

OP_TABLE: tuple[tuple[str, int, tuple[int, ...]], ...] = (
    # Matmul family: 2*m*n*k each, bias ignored.
    ("aten::mm", MM, ()),
    ("aten::_scaled_mm", MM, ()),
    ("aten::addmm", ADDMM, ()),
    ("aten::bmm", BMM, ()),
    ("aten::baddbmm", BADDBMM, ()),
    ("aten::_grouped_mm", GROUPED_MM, ()),
    ("aten::_scaled_grouped_mm", GROUPED_MM, ()),
    # Convolutions (input, weight, bias, stride, padding, dilation,
    # transposed, output_padding, groups, ...)
    ("aten::convolution", CONV, (3, 4, 5, 6, 7)),
    ("aten::_convolution", CONV, (3, 4, 5, 6, 7)),
    ("aten::convolution_overrideable", CONV, (3, 4, 5, 6, 7)),
    # cudnn_convolution(self, weight, padding, stride, dilation, groups, ...)
    ("aten::cudnn_convolution", CONV, (3, 2, 4, -1, -1)),
    # _slow_conv2d_forward(self, weight, kernel_size, bias, stride, padding)
    ("aten::_slow_conv2d_forward", CONV, (4, 5, -1, -1, -1)),
    ("aten::convolution_backward", CONV_BACKWARD, ()),
    # SDPA family, q: [b, h, s, d]     bwd lay  go q  k  v cuq cuk mq mk causal mask
    ("aten::_scaled_dot_product_flash_attention", ATTENTION, (_F, BHSD, -1, 0, 1, 2, -1, -1, -1, -1, 4, 0)),
    ("aten::_scaled_dot_product_flash_attention_for_cpu", ATTENTION, (_F, BHSD, -1, 0, 1, 2, -1, -1, -1, -1, 4, 0)),
    ("aten::_scaled_dot_product_efficient_attention", ATTENTION, (_F, BHSD, -1, 0, 1, 2, -1, -1, -1, -1, 6, 0)),
    ("aten::_scaled_dot_product_cudnn_attention", ATTENTION, (_F, BHSD, -1, 0, 1, 2, -1, -1, -1, -1, 6, 0)),
    ("aten::_scaled_dot_product_fused_attention_overrideable", ATTENTION, (_F, BHSD, -1, 0, 1, 2, -1, -1, -1, -1, 5, 0)),
    # The math path (meta tensors, CPU fallbacks): composite, so its inner
    # bmms are skipped and its backward is theirs. NB: the TorchDispatchMode
    # fallback only sees it under inference_mode (otherwise it decomposes
    # first, and its bmms count: the same FLOPs, but never halved).
    ("aten::_scaled_dot_product_attention_math", ATTENTION, (_F, BHSD, -1, 0, 1, 2, -1, -1, -1, -1, 5, 0)),
    ("aten::_scaled_dot_product_flash_attention_backward", ATTENTION, (_B, BHSD, 0, 1, 2, 3, -1, -1, -1, -1, 11, 0)),
    ("aten::_scaled_dot_product_flash_attention_for_cpu_backward", ATTENTION, (_B, BHSD, 0, 1, 2, 3, -1, -1, -1, -1, 7, 0)),
    ("aten::_scaled_dot_product_efficient_attention_backward", ATTENTION, (_B, BHSD, 0, 1, 2, 3, -1, -1, -1, -1, 11, 0)),
    ("aten::_scaled_dot_product_cudnn_attention_backward", ATTENTION, (_B, BHSD, 0, 1, 2, 3, -1, -1, -1, -1, 14, 0)),
    ("aten::_scaled_dot_product_fused_attention_overrideable_backward", ATTENTION, (_B, BHSD, 0, 1, 2, 3, -1, -1, -1, -1, 13, 0)),
    # Kernel-level attention, q: [b, s, h, d], or packed with cu_seqlens.
    ("aten::_flash_attention_forward", ATTENTION, (_F, BSHD, -1, 0, 1, 2, 3, 4, 5, 6, 8, 0)),
    ("aten::_flash_attention_backward", ATTENTION, (_B, BSHD, 0, 1, 2, 3, 6, 7, 8, 9, 11, 0)),
    ("aten::_efficient_attention_forward", ATTENTION, (_F, BSHD, -1, 0, 1, 2, 4, 5, 6, 7, 9, 1)),
    ("aten::_efficient_attention_backward", ATTENTION, (_B, BSHD, 0, 1, 2, 3, 6, 7, 8, 9, 14, 1)),
    # torch.nn.attention.varlen, q: [total, h, d].
    ("torch_attn::_varlen_attn", ATTENTION, (_F, THD, -1, 0, 1, 2, 3, 4, 5, 6, 7, 0)),
    ("torch_attn::_varlen_attn_backward", ATTENTION, (_B, THD, 0, 1, 2, 3, 6, 7, 8, 9, 10, 0)),
)

_ROWS = {name: (kind, params) for name, kind, params in OP_TABLE}

# Custom formulas (register_flop_formula): op name -> callable. Shared with
# the C++ observer, which keeps its own reference.
CUSTOM_FORMULAS: dict[str, Callable[..., Any]] = {}


class _CountError(Exception):
    """A formula could not count one call (recorded, never raised out)."""


# ---------------------------------------------------------------------------
# One call -> (executed, model backward, approximate)
# ---------------------------------------------------------------------------

def _shape(t: Any, ndim: int, what: str) -> tuple[int, ...]:
    import torch

    if not isinstance(t, torch.Tensor):
        raise _CountError(f"{what} is not a tensor")
    if t.is_nested:
        raise _CountError(f"{what} is a nested tensor")
    shape = tuple(t.shape)
    if ndim and len(shape) != ndim:
        raise _CountError(f"{what}: expected {ndim} dims, got {len(shape)}")
    if not all(isinstance(d, int) for d in shape):
        raise _CountError(f"{what} has symbolic sizes")
    return shape


def _grad(t: Any) -> bool:
    return bool(getattr(t, "requires_grad", False))


class _Args:
    """Positional access to a dispatched call, schema defaults filled in."""

    def __init__(self, func: Any, args: tuple, kwargs: dict) -> None:
        self.func, self.args, self.kwargs = func, args, kwargs

    def __getitem__(self, index: int) -> Any:
        if index < 0:
            return None
        if index < len(self.args):
            return self.args[index]
        schema_args = self.func._schema.arguments
        if index >= len(schema_args):
            return None
        arg = schema_args[index]
        if arg.name in self.kwargs:
            return self.kwargs[arg.name]
        return arg.default_value if arg.has_default_value() else None


def _int_list(value: Any, n: int, fallback: int) -> list[int]:
    if value is None:
        return [fallback] * n
    values = [int(v) for v in value]
    if len(values) == 1:
        return values * n
    if len(values) != n:
        raise _CountError(f"a convolution parameter has {len(values)} values for {n} dims")
    return values


def _matmul(kind: int, a: _Args, grad: bool) -> tuple[int, int, bool]:
    first = 1 if kind in (ADDMM, BADDBMM) else 0
    x, y = a[first], a[first + 1]
    if kind in (MM, ADDMM):
        (m, k), (k2, n) = _shape(x, 2, "a"), _shape(y, 2, "b")
        if k != k2:
            raise _CountError("matmul: inner dims differ")
        flops = _C.mm_flop(m, k, n)
    elif kind in (BMM, BADDBMM):
        (b, m, k), (b2, k2, n) = _shape(x, 3, "a"), _shape(y, 3, "b")
        if b != b2 or k != k2:
            raise _CountError("bmm: batch or inner dims differ")
        flops = _C.bmm_flop(b, m, k, n)
    else:
        flops = _C.grouped_mm_flop(_shape(x, 0, "a"), _shape(y, 0, "b"))
    backward = flops * (_grad(x) + _grad(y)) if grad else 0
    return flops, backward, False


def _conv(params: tuple[int, ...], a: _Args, grad: bool) -> tuple[int, int, bool]:
    x, w = a[0], a[1]
    xs = _shape(x, 0, "input")
    ws = _shape(w, len(xs), "weight")
    sp = len(xs) - 2
    stride_i, padding_i, dilation_i, transposed_i, _ = params
    transposed = bool(a[transposed_i]) if transposed_i >= 0 else False
    ys = list(xs)
    if not transposed:
        # out spatial = (in + 2p - d(k - 1) - 1) / s + 1
        stride = _int_list(a[stride_i] if stride_i >= 0 else None, sp, 1)
        padding = _int_list(a[padding_i] if padding_i >= 0 else None, sp, 0)
        dilation = _int_list(a[dilation_i] if dilation_i >= 0 else None, sp, 1)
        ys[1] = ws[0]
        for i in range(sp):
            span = xs[i + 2] + 2 * padding[i] - dilation[i] * (ws[i + 2] - 1) - 1
            ys[i + 2] = 0 if span < 0 else span // stride[i] + 1
    flops = _C.convolution_flop(xs, ws, ys, transposed)
    backward = flops * (_grad(x) + _grad(w)) if grad else 0
    return flops, backward, False


def _conv_backward(a: _Args) -> tuple[int, int, bool]:
    gs = _shape(a[0], 0, "grad_output")
    xs = _shape(a[1], len(gs), "input")
    ws = _shape(a[2], len(gs), "weight")
    mask = a[10] or (True, True, True)
    flops = _C.convolution_backward_flop(
        gs, xs, ws, bool(a[7]), int(a[9]), bool(mask[0]), bool(mask[1]))
    return flops, 0, False


def _offsets(t: Any) -> list[int] | None:
    if t.dim() != 1:
        raise _CountError("cumulative sequence lengths are not 1-D")
    if t.device.type == "meta":
        return None
    return [int(v) for v in t.tolist()]


def _attention(params: tuple[int, ...], a: _Args, convention: str,
               grad: bool) -> tuple[int, int, bool]:
    (backward, layout, _go, qi, ki, vi, cu_qi, cu_ki, max_qi, max_ki,
     causal_i, mask_type) = params
    q, k, v = a[qi], a[ki], a[vi]
    causal_arg = a[causal_i]
    causal_call = bool(int(causal_arg)) if mask_type else bool(causal_arg)
    causal = "half" if causal_call and convention == "half" else "full"
    cu_q = a[cu_qi] if cu_qi >= 0 else None
    approximate = False
    if cu_q is not None:
        qs = _shape(q, 0, "query")
        ks = _shape(k, len(qs), "key")
        vs = _shape(v, len(qs), "value")
        if len(qs) not in (3, 4):
            raise _CountError(f"packed attention query has {len(qs)} dims")
        hd = len(qs) - 2
        cu_k = a[cu_ki] if cu_ki >= 0 else None
        oq = _offsets(cu_q)
        ok = _offsets(cu_k) if cu_k is not None else oq
        if oq is None or ok is None:
            # meta: lengths unknown; every sequence counts max_seqlen
            n = cu_q.shape[0]
            max_q = int(a[max_qi] or 0)
            max_k = int(a[max_ki] or max_q)
            oq = [i * max_q for i in range(n)]
            ok = [i * max_k for i in range(n)]
            approximate = True
        flops = _C.varlen_attention_flop(
            oq, ok, qs[hd], ks[hd], qs[hd + 1], vs[hd + 1],
            causal_attention=causal, backward=bool(backward))
    else:
        if layout == THD:
            raise _CountError("varlen attention without cumulative lengths")
        qs, ks, vs = _shape(q, 4, "query"), _shape(k, 4, "key"), _shape(v, 4, "value")
        if layout == BHSD:
            dims = (qs[0], qs[1], ks[1], qs[2], ks[2], qs[3], vs[3])
        else:
            dims = (qs[0], qs[2], ks[2], qs[1], ks[1], qs[3], vs[3])
        if ks[0] != qs[0] or vs[0] != qs[0] or ks[3] != qs[3]:
            raise _CountError("attention: query / key / value shapes disagree")
        fn = _C.sdpa_backward_flop if backward else _C.sdpa_flop
        flops = fn(*dims, causal_attention=causal)
    model_backward = 2 * flops if (not backward and grad and (_grad(q) or _grad(k) or _grad(v))) else 0
    return flops, model_backward, approximate


def _custom(fn: Callable[..., Any], func: Any, args: tuple, kwargs: dict,
            grad: bool) -> tuple[int, int, bool]:
    import torch

    a = _Args(func, args, kwargs)
    values = []
    any_grad = False
    for i in range(len(func._schema.arguments)):
        item = a[i]
        if isinstance(item, torch.Tensor):
            any_grad = any_grad or item.requires_grad
            item = tuple(item.shape)
        elif isinstance(item, (list, tuple)) and all(isinstance(x, int) for x in item):
            item = tuple(item)
        elif not isinstance(item, (bool, int, float)) and item is not None:
            item = None
        values.append(item)
    result = fn(*values)
    backward = None
    if isinstance(result, tuple) and len(result) == 2:
        result, backward = result
    for value in (result, backward):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise _CountError("custom formula must return an int >= 0 or a pair of them")
    flops = result
    model_backward = 0
    if grad and any_grad:
        model_backward = backward if backward is not None else 2 * flops
    return flops, model_backward, False


def count_call(name: str, func: Any, args: tuple, kwargs: dict, convention: str,
               grad: bool) -> tuple[int, int, bool] | None:
    """(executed, model backward, approximate) of one call; None: not counted."""
    custom = CUSTOM_FORMULAS.get(name)
    if custom is not None:
        return _custom(custom, func, args, kwargs, grad)
    row = _ROWS.get(name)
    if row is None:
        return None
    kind, params = row
    a = _Args(func, args, kwargs)
    if kind in (MM, ADDMM, BMM, BADDBMM, GROUPED_MM):
        return _matmul(kind, a, grad)
    if kind == CONV:
        return _conv(params, a, grad)
    if kind == CONV_BACKWARD:
        return _conv_backward(a)
    return _attention(params, a, convention, grad)


# ---------------------------------------------------------------------------
# The backend: sessions over a TorchDispatchMode
# ---------------------------------------------------------------------------

def _new_totals() -> dict[str, Any]:
    return {
        "executed_flops": 0, "forward_flops": 0, "model_flops": 0,
        "backward_flops": 0, "counted_calls": 0, "errors": 0,
        "approximate_calls": 0, "first_error": None, "ops": {},
    }


class _Session:
    def __init__(self, causal: str) -> None:
        self.causal = causal
        self.owner = threading.get_ident()
        self.lock = threading.Lock()
        self.totals = _new_totals()
        self.mode: Any = None


def _make_mode(session: _Session) -> Any:
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    plain = (torch.Tensor, torch.nn.Parameter)
    names: dict[Any, str] = {}
    prim_device = torch.ops.prim.device.default

    def commit(name: str, backward_phase: bool, result: Any) -> None:
        with session.lock:
            t = session.totals
            if isinstance(result, Exception):
                t["errors"] += 1
                if t["first_error"] is None:
                    t["first_error"] = f"{name}: {result}"
                return
            executed, model_backward, approximate = result
            t["counted_calls"] += 1
            t["executed_flops"] += executed
            if backward_phase:
                t["backward_flops"] += executed
            else:
                t["forward_flops"] += executed
                t["model_flops"] += executed + model_backward
            t["approximate_calls"] += int(approximate)
            calls, flops = t["ops"].get(name, (0, 0))
            t["ops"][name] = (calls + 1, flops + executed)

    class _CountingMode(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            name = names.get(func)
            if name is None:
                name = names.setdefault(func, func._schema.name)
            if name in _ROWS or name in CUSTOM_FORMULAS:
                if any(isinstance(x, torch.Tensor) and type(x) not in plain for x in args):
                    return func(*args, **kwargs)  # a subclass: the op it becomes counts
                backward_phase = torch._C._current_graph_task_id() != -1
                grad = not backward_phase and torch.is_grad_enabled()
                try:
                    result = count_call(name, func, args, kwargs, session.causal, grad)
                except Exception as exc:  # noqa: BLE001 - never raise into the op
                    result = exc
                out = func(*args, **kwargs)
                if result is not None:
                    commit(name, backward_phase, result)  # only once the op ran
                return out
            if func is not prim_device:
                # Composite ops reach a mode undecomposed when autograd is
                # off (inference_mode): count what they decompose into, as
                # FlopCounterMode does.
                with self:
                    r = func.decompose(*args, **kwargs)
                if r is not NotImplemented:
                    return r
            return func(*args, **kwargs)

    return _CountingMode()


MAX_COUNTERS = 8  # as the C++ observer's slots (kMaxSlots)


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
        if causal not in ("full", "half"):
            raise ValueError(f"causal_attention must be 'full' or 'half', not {causal!r}")
        with self._lock:
            if len(self._sessions) >= MAX_COUNTERS:
                raise RuntimeError(
                    f"too many FLOP counters active at once (at most {MAX_COUNTERS}, nested "
                    "or on other threads)")
        session = _Session(causal)
        session.mode = _make_mode(session)
        session.mode.__enter__()
        with self._lock:
            handle = self._next
            self._next += 1
            self._sessions[handle] = session
        return handle

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
        session.mode.__exit__(None, None, None)
        with self._lock:
            del self._sessions[handle]
        return self._copy(session)

    @staticmethod
    def _copy(session: _Session) -> dict[str, Any]:
        with session.lock:
            out = dict(session.totals)
            out["ops"] = dict(session.totals["ops"])
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
