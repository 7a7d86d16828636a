"""Token-by-token scans, batched for the meta count (:mod:`._meta`).

Transformers' torch reference of the Mamba-1 selective scan (the
``mamba_selective_scan`` of models/mamba, falcon_mamba, jamba and zamba,
transformers 5.24, its "Recurrent iteration" branch) walks the sequence one
token at a time: per token an elementwise state update and one matmul, the
state ``[b, I, N]`` read out by ``C[:, t]`` ``[b, N, 1]``. On the meta
device that is thousands of Python-level ops per layer, and a 24-layer
model at 2,048 tokens took minutes. The FLOPs do not depend on running it
token by token: the readouts of all tokens are one batched matmul
``[b, L, I, N] @ [b, L, N, 1]``, the same 2·b·L·I·N forward, and the same
backward (the states and ``C`` both need their gradients), and the state
update is elementwise (0 FLOPs) either way.

While a meta count runs, :func:`batched_scans` puts that batched form in
the place of each module's function; it runs only on meta tensors (a real
tensor, from any thread, takes transformers' own function), and the
original is back when the count ends. Units: FLOPs.
"""
from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator
from typing import Any

#: transformers modules whose ``mamba_selective_scan`` is the token loop.
MODULES = ("transformers.models.mamba.modeling_mamba",
           "transformers.models.falcon_mamba.modeling_falcon_mamba",
           "transformers.models.jamba.modeling_jamba",
           "transformers.models.zamba.modeling_zamba")
_NAME = "mamba_selective_scan"
_PARAMS = ("hidden_states", "dt", "A", "B", "C", "D", "z", "delta_bias", "delta_softplus",
           "return_last_state")

_lock = threading.Lock()
_depth = 0
_originals: dict[str, Any] = {}
_counts = threading.local()  # batched calls made on this thread


def batched_calls() -> int:
    """The scans this thread ran batched so far (a count's recipe says so)."""
    return getattr(_counts, "n", 0)


def _batched(hidden_states: Any, dt: Any, A: Any, B: Any, C: Any, D: Any = None,
             z: Any = None, delta_bias: Any = None, delta_softplus: bool = False,
             return_last_state: bool = False) -> Any:
    """The scan's counted ops on meta tensors (shapes only): hidden_states
    and dt ``[b, I, L]``, A ``[I, N]``, B and C ``[b, N, L]``. The states
    stand in as one elementwise product of the discretized A and B·x (their
    values do not exist on meta; their gradient reaches the same inputs)."""
    import torch
    import torch.nn.functional as F

    dtype = hidden_states.dtype
    if delta_bias is not None:
        dt = dt + delta_bias.to(dt.dtype)[..., None]
    if delta_softplus:
        dt = F.softplus(dt)
    B, C = B.transpose(1, 2), C.transpose(1, 2)                     # [b, L, N]
    discrete_a = torch.exp(A[None, :, None, :] * dt[..., None])     # [b, I, L, N]
    states = discrete_a * (dt[..., None] * B[:, None].float() * hidden_states[..., None].float())
    # every token's readout state[I, N] @ C[N, 1] in one batched matmul
    scan = torch.matmul(states.transpose(1, 2).to(dtype), C.unsqueeze(-1))
    scan = scan.squeeze(-1).transpose(1, 2)                         # [b, I, L]
    if D is not None:
        scan = scan + hidden_states * D[None, :, None]
    if z is not None:
        scan = scan * F.silu(z)
    return (scan, states[:, :, -1]) if return_last_state else scan


def _dispatch(original: Any) -> Any:
    def scan(hidden_states: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(hidden_states, "is_meta", False):
            _counts.n = batched_calls() + 1
            return _batched(hidden_states, *args,
                            **{k: v for k, v in kwargs.items() if k in _PARAMS})
        return original(hidden_states, *args, **kwargs)
    scan.__wrapped__ = original  # type: ignore[attr-defined]
    return scan


def _fits(function: Any) -> bool:
    """Whether ``function`` takes the arguments the batched form reads."""
    import inspect

    try:
        names = tuple(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return False
    return names[:len(_PARAMS)] == _PARAMS


@contextlib.contextmanager
def batched_scans() -> Iterator[None]:
    """The token-by-token scans of the imported :data:`MODULES` batched on
    meta tensors while the block runs (nested blocks share one swap)."""
    global _depth
    with _lock:
        if _depth == 0:
            for name in MODULES:
                module = sys.modules.get(name)
                function = getattr(module, _NAME, None)
                if function is not None and _fits(function):
                    _originals[name] = function
                    setattr(module, _NAME, _dispatch(function))
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                for name, function in _originals.items():
                    setattr(sys.modules[name], _NAME, function)
                _originals.clear()
