"""FLOPs without a model: analytic transformer counts and peer helpers.

Units: FLOPs are floating-point operations (one multiply-add = 2 FLOPs), not
per second; bytes are bytes. The arithmetic lives in the C core
(``csrc/core/flops.c``); this module turns configs, tensors and keyword
arguments into its inputs.

Conventions (DESIGN §3):

* **model FLOPs** (MFU numerator): forward + the backward the trainable
  weights and activations need; activation recompute never counts; a frozen
  base under LoRA gets forward + input gradient only.
* **hardware FLOPs** (HFU numerator): model FLOPs + activation recompute.
* **causal attention** counts the full s² by default (PaLM / torchtitan /
  FlopCounterMode); ``causal_attention="half"`` halves it (Megatron / verl).
* **packed / padded batches**: the attention term uses Σ sᵢ² over the *real*
  sequence lengths (Σ sᵢ·min(sᵢ, window) with a sliding window).

This module does not import transformers; torch is imported only by
:func:`param_bytes` / :func:`num_params` (through the model you pass).
"""
from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping
from typing import Any

from .. import _C
from .._validate import (
    CAUSAL_ATTENTION,
    check_choice,
    check_flag,
    check_int,
    check_positive_number,
)
from ._hf_config import dims_from_config, lora_target_names
from ._sequences import sequence_lengths

__all__ = [
    "TransformerFlops",
    "transformer_flops",
    "params_flops",
    "flash_attn_flops",
    "param_bytes",
    "num_params",
]

_FORMULAS = ("6n", "palm", "matmul")
_RECOMPUTE = ("none", "full", "selective")

# Keyword dims accepted by transformer_flops(**dims), with their C meaning.
_DIM_FIELDS = (
    "hidden_size",
    "num_layers",
    "num_heads",
    "num_kv_heads",
    "head_dim",
    "intermediate_size",
    "vocab_size",
    "mlp",
    "norm",
    "num_experts",
    "experts_per_token",
    "moe_intermediate_size",
    "shared_expert_intermediate_size",
    "shared_expert_gate",
    "num_dense_layers",
    "qkv_bias",
    "attention_out_bias",
    "mlp_bias",
    "qk_norm",
    "num_positions",
    "sliding_window",
    "num_sliding_layers",
)


@dataclasses.dataclass(frozen=True)
class TransformerFlops:
    """Analytic FLOPs of one batch (all in FLOPs, not FLOP/s).

    Attributes:
        model_flops: MFU numerator for the batch (forward + backward the
            training needs; recompute excluded).
        hardware_flops: HFU numerator: model FLOPs + activation recompute.
        forward_flops: one forward pass over the batch (inference cost).
        attention_flops: the attention core (QKᵀ and AV) inside
            ``forward_flops``; 0 with the ``"6n"`` formula.
        flops_per_token: ``model_flops / num_tokens``.
        num_tokens: real (unpadded) tokens in the batch.
        num_params: every parameter once (tied embeddings once), as
            ``model.num_parameters()`` counts them.
        num_embedding_params: N_emb: the token (and learned position)
            embedding tables.
        num_active_params: ``num_params`` with only the active experts.
        num_adapter_params: LoRA A and B matrices (0 without LoRA).
        conventions: how the numbers were counted (formula, causal
            convention, lm_head / embedding handling, LoRA, recompute,
            sequence source), as a read-only mapping.
        conventions_str: the same as one readable line.
    """

    model_flops: float
    hardware_flops: float
    forward_flops: float
    attention_flops: float
    flops_per_token: float
    num_tokens: int
    num_params: int
    num_embedding_params: int
    num_active_params: int
    num_adapter_params: int
    conventions: Mapping[str, Any]
    conventions_str: str

    def __str__(self) -> str:
        return (
            f"{self.flops_per_token / 1e9:.2f} GFLOP/token x {self.num_tokens:,} "
            f"tokens = {self.model_flops:.4g} model FLOPs "
            f"({self.hardware_flops:.4g} hardware); {self.conventions_str}"
        )


# ---------------------------------------------------------------------------
# transformer_flops
# ---------------------------------------------------------------------------

def _conventions_str(conv: Mapping[str, Any]) -> str:
    formula = {
        "6n": "formula 6n (6·N·T, no attention term)",
        "palm": "formula palm (6·N·T + 12·L·H·Q·Σs·ctx)",
        "matmul": "formula matmul (every matmul 2·m·n·k)",
    }[conv["formula"]]
    parts = [formula]
    parts.append("causal attention: full s²" if conv["causal_attention"] == "full"
                 else "causal attention: half s² (Megatron)")
    parts.append("lm_head counted" if conv["include_lm_head"] else "lm_head excluded")
    parts.append("embedding counted" if conv["include_embedding"]
                 else "embedding excluded")
    if conv["tie_word_embeddings"]:
        parts.append("tied embeddings")
    lora = conv["lora"]
    if lora is None:
        parts.append("full training")
    else:
        parts.append(f"LoRA r={lora['rank']} on {'/'.join(lora['targets'])} "
                     "(frozen base: no weight gradients)")
    parts.append(f"recompute: {conv['activation_recompute']} (HFU only)")
    parts.append(f"sequences from {conv['sequences']}")
    return " · ".join(parts)


def transformer_flops(
    config: Any = None,
    *,
    seq_len: int | None = None,
    batch_size: int = 1,
    seq_lens: Any = None,
    cu_seqlens: Any = None,
    position_ids: Any = None,
    attention_mask: Any = None,
    formula: str = "palm",
    causal_attention: str = "full",
    include_lm_head: bool = True,
    include_embedding: bool = False,
    tie_word_embeddings: bool | None = None,
    lora_rank: int | None = None,
    lora_targets: Any = None,
    activation_recompute: str = "none",
    **dims: Any,
) -> TransformerFlops:
    """Analytic FLOPs of a training step of a decoder-only transformer.

    Args:
        config: a HuggingFace config (``PretrainedConfig`` or any object with
            the attributes), a ``config.json`` dict, a preset name
            (``"llama-3.1-8b"``, :func:`~mfu_tracker.preset_names`) or a path to
            a ``config.json``, of model type gpt2,
            llama, mistral, qwen2, qwen3, mixtral, qwen2_moe or qwen3_moe; or
            None with the dimensions given as keywords (``hidden_size``,
            ``num_layers``, ``num_heads``, ``vocab_size``,
            ``intermediate_size`` and optionally ``num_kv_heads``,
            ``head_dim``, ``mlp`` ("swiglu" | "gelu"), ``norm`` ("rmsnorm" |
            "layernorm"), ``num_experts``, ``experts_per_token``,
            ``moe_intermediate_size``, ``shared_expert_intermediate_size``,
            ``shared_expert_gate``, ``num_dense_layers``, ``qkv_bias``,
            ``attention_out_bias``, ``mlp_bias``, ``qk_norm``,
            ``num_positions``, ``sliding_window``, ``num_sliding_layers``).
            Keywords override fields read from ``config``.
        seq_len, batch_size: ``batch_size`` sequences of ``seq_len`` tokens.
        seq_lens: real lengths of the (packed or padded) sequences.
        cu_seqlens: cumulative lengths ``[0, s0, s0+s1, ...]`` (tensor/list).
        position_ids: ``[T]`` or ``[B, T]``; a sequence starts wherever the
            position is 0 (packed batches).
        attention_mask: ``[B, T]`` 0/1 padding mask; each row is one
            sequence of its real tokens.
            Give exactly one of seq_len, seq_lens, cu_seqlens, position_ids,
            attention_mask.
        formula: ``"palm"`` (6·N_c·T + 12·L·H·Q·Σ sᵢ·ctxᵢ; torchtitan's and
            Lambda's), ``"6n"`` (6·N_c·T) or ``"matmul"`` (every matmul's
            2·m·n·k: projections with GQA, MLP, router + active experts,
            attention QKᵀ and AV, lm_head — what an op counter sees).
            N_c is the active parameter count without the embedding tables,
            plus V·d for the lm_head when included (also when tied).
        causal_attention: ``"full"`` counts the whole s² (default) or
            ``"half"`` halves the attention term.
        include_lm_head: count the lm_head matmul.
        include_embedding: count the embedding tables as if they were
            matmul weights (the "6N with total N" habit).
        tie_word_embeddings: override the config's value (parameter count).
        lora_rank, lora_targets: LoRA on a frozen base: base weights cost
            forward + input gradient (4·N per token), adapters full 6·N_a.
            Targets are peft module names (``q_proj``, ``v_proj``, ...,
            ``c_attn``, ``all-linear``); default q/v (GPT-2: c_attn).
        activation_recompute: ``"none"``, ``"selective"`` (the attention
            core runs again) or ``"full"`` (every layer's forward runs
            again). Changes ``hardware_flops`` only.

    Returns:
        TransformerFlops; FLOPs totals are for the whole batch.

    NB: with a padding mask only real tokens are counted, in model and
    hardware FLOPs alike (the padded positions the kernels also compute are
    not). NB (LoRA): autograd skips the input gradient of the first layer's
    frozen projections (their input does not require grad); this count keeps
    it, an over-count of at most 2·(those weights) FLOPs per token. NB
    (``"matmul"`` vs FlopCounterMode): equal on a forward+backward run of
    GPT-2, Llama, Mixtral (experts ``eager`` / ``batched_mm``) and Qwen2-MoE
    with eager attention; on CPU, FlopCounterMode has no formula for
    ``_scaled_dot_product_flash_attention_for_cpu`` (SDPA) nor for
    ``_grouped_mm`` (transformers' default MoE experts), so its total lacks
    those terms.

    Raises:
        TypeError: wrong types, unknown keywords, not exactly one sequence
            source.
        ValueError: malformed config or impossible values, naming the field.
    """
    unknown = sorted(set(dims) - set(_DIM_FIELDS))
    if unknown:
        raise TypeError(
            f"transformer_flops() got unknown keyword(s) {', '.join(unknown)}; "
            f"dimensions are: {', '.join(_DIM_FIELDS)}"
        )
    if config is not None:
        base, sources, tie, model_type = dims_from_config(config)
    else:
        base, sources, tie, model_type = {}, {}, False, None
        missing = [f for f in ("hidden_size", "num_layers", "num_heads", "vocab_size")
                   if f not in dims]
        if missing:
            raise TypeError(
                "transformer_flops() needs a config or the dimensions "
                f"{', '.join(missing)}"
            )
    merged: dict[str, Any] = {**base, **dims}
    for key in dims:
        sources.pop(key, None)
    if "num_kv_heads" not in merged and "num_heads" in merged:
        merged["num_kv_heads"] = merged["num_heads"]
    if "intermediate_size" not in merged:
        merged["intermediate_size"] = 0
    if merged.get("sliding_window") and "num_sliding_layers" not in merged:
        merged["num_sliding_layers"] = merged.get("num_layers", 0)
    if merged.get("head_dim") is None:
        merged.pop("head_dim", None)
    if tie_word_embeddings is not None:
        tie = check_flag(tie_word_embeddings, "tie_word_embeddings")
    merged["tie_word_embeddings"] = tie

    formula = check_choice(formula, "formula", _FORMULAS, ignore_case=True)
    causal_attention = check_choice(causal_attention, "causal_attention", CAUSAL_ATTENTION,
                                    ignore_case=True)
    activation_recompute = check_choice(activation_recompute, "activation_recompute",
                                        _RECOMPUTE, ignore_case=True)
    include_lm_head = check_flag(include_lm_head, "include_lm_head")
    include_embedding = check_flag(include_embedding, "include_embedding")

    options: dict[str, Any] = {
        "formula": formula,
        "causal_attention": causal_attention,
        "include_lm_head": include_lm_head,
        "include_embedding": include_embedding,
        "activation_recompute": activation_recompute,
    }
    lora = None
    if lora_rank is not None:
        if isinstance(lora_rank, bool) or not isinstance(lora_rank, int):
            raise TypeError(f"lora_rank must be an int, not {type(lora_rank).__name__}")
        if lora_rank < 1:
            raise ValueError(f"lora_rank must be >= 1, got {lora_rank}")
        targets = lora_target_names(lora_targets, merged.get("mlp", "swiglu"), model_type)
        if not targets:
            raise ValueError("lora_targets must name at least one module")
        options["lora_rank"] = lora_rank
        options["lora_targets"] = targets
        lora = {"rank": lora_rank, "targets": tuple(targets)}
    elif lora_targets is not None:
        raise TypeError("lora_targets needs lora_rank")

    lengths, source = sequence_lengths(seq_len, batch_size, seq_lens, cu_seqlens,
                                        position_ids, attention_mask)
    try:
        if lengths is None:
            raw = _C.transformer_flops(merged, options, batch_size=batch_size,
                                       seq_len=seq_len)
        else:
            raw = _C.transformer_flops(merged, options, seq_lens=lengths)
    except (ValueError, TypeError) as exc:
        field, _, rest = str(exc).partition(":")
        if field in sources:
            raise type(exc)(f"config.{sources[field]} ({field}):{rest}") from None
        raise

    conventions = {
        "formula": formula,
        "causal_attention": causal_attention,
        "include_lm_head": include_lm_head,
        "include_embedding": include_embedding,
        "tie_word_embeddings": tie,
        "lora": lora,
        "activation_recompute": activation_recompute,
        "sequences": source,
        "model_type": model_type,
    }
    tokens = raw["num_tokens"]
    return TransformerFlops(
        model_flops=raw["model_flops"],
        hardware_flops=raw["hardware_flops"],
        forward_flops=raw["forward_flops"],
        attention_flops=raw["attention_flops"],
        flops_per_token=raw["model_flops"] / tokens,
        num_tokens=int(tokens),
        num_params=int(raw["num_params"]),
        num_embedding_params=int(raw["num_embedding_params"]),
        num_active_params=int(raw["num_active_params"]),
        num_adapter_params=int(raw["num_adapter_params"]),
        conventions=types.MappingProxyType(conventions),
        conventions_str=_conventions_str(conventions),
    )


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
    ``lora_rank`` to count them). Totals are for ``num_tokens`` tokens.

    Raises:
        TypeError: ``num_params`` / ``num_tokens`` not numbers / ints.
        ValueError: ``num_params`` not finite and > 0, ``num_tokens`` < 1.
    """
    n = check_positive_number(num_params, "num_params")
    num_tokens = check_int(num_tokens, "num_tokens", 1)
    lora = check_flag(lora, "lora")
    per_token = (4.0 if lora else 6.0) * n
    conventions = {
        "formula": "6n",
        "causal_attention": "full",
        "include_lm_head": True,
        "include_embedding": True,
        "tie_word_embeddings": False,
        "lora": {"rank": None, "targets": None} if lora else None,
        "activation_recompute": "none",
        "sequences": "num_tokens",
        "model_type": None,
    }
    text = ("formula 6n on a bare parameter count (N as given, no attention "
            "term) · " + ("LoRA: frozen base 4·N per token, adapters not counted"
                          if lora else "full training 6·N per token"))
    return TransformerFlops(
        model_flops=per_token * num_tokens,
        hardware_flops=per_token * num_tokens,
        forward_flops=2.0 * n * num_tokens,
        attention_flops=0.0,
        flops_per_token=per_token,
        num_tokens=num_tokens,
        num_params=int(n),
        num_embedding_params=0,
        num_active_params=int(n),
        num_adapter_params=0,
        conventions=types.MappingProxyType(conventions),
        conventions_str=text,
    )


# ---------------------------------------------------------------------------
# Peer-compatible helpers
# ---------------------------------------------------------------------------

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
    (2× forward), giving 3× forward. Returns an int (FLOPs, not FLOP/s).

    The batch may be given as ``batch`` or, as in the pure-Python
    ``mfu-tracker`` README, ``batch_size`` (exactly one of them).

    NB: the pure-Python package halved the count whenever ``causal=True``.
    This package follows DESIGN §3: causal attention counts the full s² by
    default (PaLM / torchtitan / FlopCounterMode), so ``causal=True`` with
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
    forward = _C.sdpa_flop(b, h, h, s, s, d, d, causal_attention=convention)
    return 3 * forward if with_backward else forward


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

