"""The peer-compatible helpers of the flops layer (the pure-Python
``mfu-tracker``'s API): the 6N rule on a bare parameter count, a
FlashAttention call's FLOPs, and a model's parameter count and bytes.
Units: FLOPs (not per second), bytes, parameters. Re-exported by
:mod:`._analytic`.
"""
from __future__ import annotations

import types
from typing import Any

from .._native import _C
from .._validate import (
    CAUSAL_ATTENTION,
    check_choice,
    check_flag,
    check_int,
    check_positive_number,
)
from ._result import TransformerFlops


def params_flops(
    num_params: int | float,
    *,
    num_tokens: int = 1,
    lora: bool = False,
) -> TransformerFlops:
    """The 6N rule from a bare parameter count (no attention term).

    Model FLOPs per token are 6·N (forward 2·N + backward 4·N); with
    ``lora=True`` the frozen base costs forward + input gradient only, 4·N,
    and the adapters — unknown here — are not counted (their cost is ~6·N_a,
    negligible at usual ranks; use :func:`transformer_flops` with
    ``lora_rank`` to count them). Totals are for ``num_tokens`` tokens. The
    rule is the C core's (``mfu_params_flops``).

    Raises:
        TypeError: ``num_params`` / ``num_tokens`` not numbers / ints.
        ValueError: ``num_params`` not finite and > 0, ``num_tokens`` < 1.
    """
    n = check_positive_number(num_params, "num_params")
    num_tokens = check_int(num_tokens, "num_tokens", 1)
    lora = check_flag(lora, "lora")
    raw = _C.params_flops(n, num_tokens, lora=lora)
    conventions = {
        "formula": "6n",
        "causal_attention": "full",
        "include_lm_head": True,
        "include_embedding": True,
        "tie_word_embeddings": False,
        "bidirectional": False,
        "lora": {"rank": None, "targets": None} if lora else None,
        "activation_recompute": "none",
        "sequences": "num_tokens",
        "model_type": None,
    }
    text = ("formula 6n on a bare parameter count (N as given, no attention "
            "term) · " + ("LoRA: frozen base 4·N per token, adapters not counted"
                          if lora else "full training 6·N per token"))
    return TransformerFlops(
        model_flops=raw["model_flops"],
        hardware_flops=raw["model_flops"],
        forward_flops=raw["forward_flops"],
        attention_flops=0.0,
        flops_per_token=raw["model_flops"] / num_tokens,
        num_tokens=num_tokens,
        num_params=int(n),
        num_embedding_params=0,
        num_active_params=int(n),
        num_adapter_params=0,
        conventions=types.MappingProxyType(conventions),
        conventions_str=text,
        language_flops=raw["model_flops"],
    )


def _required_int(value: Any, name: str, minimum: int) -> int:
    if value is None:
        raise TypeError(f"flash_attn_flops() missing required argument {name!r}")
    return check_int(value, name, minimum)


def flash_attn_flops(
    batch: int | None = None,
    seq_len: int | None = None,
    num_heads: int | None = None,
    head_dim: int | None = None,
    *,
    causal: bool = True,
    with_backward: bool = False,
    causal_attention: str = "full",
    batch_size: int | None = None,
) -> int:
    """FLOPs of a FlashAttention call (self-attention, s_q = s_kv = seq_len).

    Forward: QKᵀ and AV, ``4 · batch · seq_len² · num_heads · head_dim``
    FLOPs; ``with_backward=True`` adds the model-convention backward
    (2× forward, the C core's ``MFU_ATTENTION_MODEL_BACKWARD``), giving 3×
    forward. Returns an int (FLOPs, not FLOP/s).

    The batch may be given as ``batch`` or, as in the pure-Python
    ``mfu-tracker`` README, ``batch_size`` (exactly one of them).

    NB: the pure-Python package halved the count whenever ``causal=True``.
    This package follows docs/conventions.md: causal attention counts the
    full s² by default (PaLM / torchtitan / FlopCounterMode), so
    ``causal=True`` with
    the default ``causal_attention="full"`` gives the full count; pass
    ``causal_attention="half"`` for the halved (Megatron / verl, and the
    peer's) number. ``causal=False`` is always the full count.
    """
    if batch is not None and batch_size is not None:
        raise TypeError("flash_attn_flops() takes batch or batch_size, not both")
    b = _required_int(batch if batch is not None else batch_size, "batch_size"
                      if batch is None else "batch", 0)
    s = _required_int(seq_len, "seq_len", 0)
    h = _required_int(num_heads, "num_heads", 1)
    d = _required_int(head_dim, "head_dim", 1)
    causal = check_flag(causal, "causal")
    with_backward = check_flag(with_backward, "with_backward")
    convention = check_choice(causal_attention, "causal_attention", CAUSAL_ATTENTION,
                              ignore_case=True)
    if not causal:
        convention = "full"
    return _C.sdpa_model_flop(b, h, h, s, s, d, d, causal_attention=convention,
                              with_backward=with_backward)


def _parameters(model: Any) -> list[Any]:
    """The model's parameters; a model without any is a ValueError, since its
    bytes (the MBU numerator) or count (6N) would be 0 by definition."""
    parameters = getattr(model, "parameters", None)
    if not callable(parameters):
        raise TypeError(
            f"model must be a torch.nn.Module (with .parameters()), not "
            f"{type(model).__name__}"
        )
    found = list(parameters())
    if not found:
        raise ValueError(
            f"model has no parameters ({type(model).__name__}): its weights' bytes and "
            "count would be 0, and MBU 0 by definition; pass the model whose weights the "
            "step reads (or param_bytes=None to leave MBU out)"
        )
    return found


def param_bytes(model: Any, trainable_only: bool = False) -> int:
    """Bytes held by ``model``'s parameters: Σ numel × element_size.

    Shared (tied) parameters count once. ``trainable_only=True`` counts only
    parameters with ``requires_grad`` (LoRA adapters, unfrozen layers).
    Works for models on the ``meta`` device. A model with no parameters at
    all is a ``ValueError`` (not 0, which would make MBU 0).
    """
    trainable_only = check_flag(trainable_only, "trainable_only")
    return sum(
        p.numel() * p.element_size()
        for p in _parameters(model)
        if not trainable_only or p.requires_grad
    )


def num_params(model: Any, trainable_only: bool = False) -> int:
    """Number of ``model``'s parameters (shared ones once); see param_bytes."""
    trainable_only = check_flag(trainable_only, "trainable_only")
    return sum(
        p.numel() for p in _parameters(model)
        if not trainable_only or p.requires_grad
    )

