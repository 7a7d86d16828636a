"""FLOPs without a model: analytic transformer counts and peer helpers.

Units: FLOPs are floating-point operations (one multiply-add = 2 FLOPs), not
per second; bytes are bytes. The arithmetic lives in the C core
(``csrc/core/transformer.c`` and its blocks, spans, vision towers and family
table; ``flops.c`` for attention calls); this module turns configs, tensors
and keyword arguments into its inputs.

Conventions (DESIGN §3):

* **model FLOPs** (MFU numerator): forward + the backward the trainable
  weights and activations need; activation recompute never counts; a frozen
  base under LoRA gets forward + input gradient only.
* **hardware FLOPs** (HFU numerator): model FLOPs + activation recompute.
* **causal attention** counts the full s² by default (PaLM / torchtitan /
  FlopCounterMode); ``causal_attention="half"`` halves it (Megatron / verl).
  Windowed layers: ``"full"`` charges sᵢ·min(sᵢ, w) (a chunk of c: Σ over
  chunks of len²), ``"half"`` the unmasked pairs, Σ over queries of
  min(position + 1, w) (chunks: Σ len·(len + 1)/2); ``csrc/core/spans.h``.
* **packed / padded batches**: the attention term uses the *real* sequence
  lengths.
* **VLMs**: the vision tower (bidirectional: never halved) is added for the
  batch's ``image_grid_thw`` / ``video_grid_thw``; ``language_flops`` and
  ``vision_flops`` split the model FLOPs.

This module does not import transformers; torch is imported only by
:func:`param_bytes` / :func:`num_params` (through the model you pass).
"""
from __future__ import annotations

import dataclasses
import difflib
import types
from collections.abc import Mapping
from typing import Any

from .._native import _C
from .._validate import (
    CAUSAL_ATTENTION,
    check_choice,
    check_flag,
    check_int,
    check_positive_number,
)
from ._hf_config import ConfigDims, dims_from_config, lora_target_names
from ._sequences import grid_rows, sequence_lengths

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

# Keyword dims accepted by transformer_flops(**dims): the C core's fields.
_DIM_FIELDS = tuple(_C.transformer_dim_names())


@dataclasses.dataclass(frozen=True)
class TransformerFlops:
    """Analytic FLOPs of one batch (all in FLOPs, not FLOP/s).

    Attributes:
        model_flops: MFU numerator for the batch (forward + backward the
            training needs; recompute excluded), vision tower included.
        hardware_flops: HFU numerator: model FLOPs + activation recompute.
        forward_flops: one forward pass over the batch (inference cost).
        attention_flops: the attention core (QKᵀ and AV) inside
            ``forward_flops``; 0 with the ``"6n"`` formula.
        flops_per_token: ``model_flops / num_tokens``.
        num_tokens: real (unpadded) language tokens in the batch.
        num_params: every parameter once (tied embeddings once), as
            ``model.num_parameters()`` counts them.
        num_embedding_params: N_emb: the token (and learned position)
            embedding tables.
        num_active_params: ``num_params`` with only the active experts.
        num_adapter_params: LoRA A and B matrices (0 without LoRA).
        conventions: how the numbers were counted (formula, causal
            convention, attention spans, lm_head / embedding handling, LoRA,
            recompute, sequence source, vision inputs), as a read-only
            mapping.
        conventions_str: the same as one readable line.
        language_flops: the model FLOPs of the language model (the
            lmms-engine convention's numerator).
        vision_flops: the model FLOPs of the vision tower (0 without
            images or videos); ``language_flops + vision_flops ==
            model_flops``.
        scan_flops: the forward matmuls of chunked linear-attention / SSM
            scans inside ``forward_flops`` (0 without such layers).
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
    language_flops: float = 0.0
    vision_flops: float = 0.0
    scan_flops: float = 0.0

    def __str__(self) -> str:
        return (
            f"{self.flops_per_token / 1e9:.2f} GFLOP/token x {self.num_tokens:,} "
            f"tokens = {self.model_flops:.4g} model FLOPs "
            f"({self.hardware_flops:.4g} hardware); {self.conventions_str}"
        )


# ---------------------------------------------------------------------------
# transformer_flops
# ---------------------------------------------------------------------------

_FORMULA_TEXT = {
    "6n": "formula 6n (6·N·T, no attention term)",
    "palm": "formula palm (6·N·T + 12·L·H·Q·Σs·ctx)",
    "matmul": "formula matmul (every matmul 2·m·n·k)",
}


def _spans_text(conv: Mapping[str, Any]) -> str:
    """The attention convention, with the windows it applied."""
    half = conv["causal_attention"] == "half"
    parts = ["causal attention: half s² (Megatron)" if half else "causal attention: full s²"]
    if conv.get("bidirectional"):
        parts = ["bidirectional attention: full s² (nothing to halve)"]
    windows = conv.get("windows") or {}
    if "sliding" in windows:
        parts.append(f"sliding window {windows['sliding']}: "
                     + ("Σ min(pos+1, w) per query" if half else "s·min(s, w)"))
    if "chunked" in windows:
        parts.append(f"chunked attention {windows['chunked']}: "
                     + ("Σ len·(len+1)/2 per chunk" if half else "Σ len² per chunk"))
    return " · ".join(parts)


def _conventions_str(conv: Mapping[str, Any]) -> str:
    parts = [_FORMULA_TEXT[conv["formula"]], _spans_text(conv)]
    parts.append("lm_head counted" if conv["include_lm_head"] else "lm_head excluded")
    parts.append("embedding counted" if conv["include_embedding"] else "embedding excluded")
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
    if conv.get("vision"):
        parts.append(f"vision tower: {conv['vision']} (bidirectional, not halved)")
    return " · ".join(parts)


def _model_dims(config: Any, dims: Mapping[str, Any],
                tie_word_embeddings: bool | None) -> ConfigDims:
    """The config's dims (if any) with the explicit keyword dims over them."""
    unknown = sorted(set(dims) - set(_DIM_FIELDS))
    if unknown:
        close = sorted({m for u in unknown for m in difflib.get_close_matches(u, _DIM_FIELDS, 2)})
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise TypeError(f"transformer_flops() got unknown keyword(s) {', '.join(unknown)}{hint}; "
                        "the dimensions are mfu_tracker._C.transformer_dim_names()")
    if isinstance(config, ConfigDims):  # read once by a caller that counts often
        read = ConfigDims(dict(config.dims), dict(config.sources), config.vision,
                          config.model_type)
    elif config is not None:
        read = dims_from_config(config)
    else:
        missing = [f for f in ("hidden_size", "num_layers", "num_heads", "vocab_size")
                   if f not in dims]
        if missing:
            raise TypeError(f"transformer_flops() needs a config or the dimensions "
                            f"{', '.join(missing)}")
        read = ConfigDims({}, {}, None, None)
    merged = {**read.dims, **dims}
    for key in dims:
        read.sources.pop(key, None)
    if isinstance(merged.get("qk_norm"), bool):  # True: one RMSNorm per head (Qwen3)
        merged["qk_norm"] = "head" if merged["qk_norm"] else "none"
    if merged.get("sliding_window") and "num_sliding_layers" not in merged:
        merged["num_sliding_layers"] = merged.get("num_layers", 0)
    if merged.get("head_dim") is None:
        merged.pop("head_dim", None)
    if "ssm_proj_bias" in dims and "ssm_out_proj_bias" not in dims:
        merged["ssm_out_proj_bias"] = dims["ssm_proj_bias"]  # one keyword for both, as before
    if tie_word_embeddings is not None:
        merged["tie_word_embeddings"] = check_flag(tie_word_embeddings, "tie_word_embeddings")
    return ConfigDims(merged, read.sources, read.vision, read.model_type)


def _lora(lora_rank: Any, lora_targets: Any, mlp: str, model_type: str | None) -> dict | None:
    if lora_rank is None:
        if lora_targets is not None:
            raise TypeError("lora_targets needs lora_rank")
        return None
    rank = check_int(lora_rank, "lora_rank", 1)
    targets = lora_target_names(lora_targets, mlp, model_type)
    check_int(len(targets), "lora_targets (module names)", 1)
    return {"rank": rank, "targets": tuple(targets)}


def _grids(image_grid_thw: Any, video_grid_thw: Any) -> tuple[list[list[int]], str | None]:
    """Every image and video grid of the batch, and their description."""
    images = grid_rows(image_grid_thw, "image_grid_thw") if image_grid_thw is not None else []
    videos = grid_rows(video_grid_thw, "video_grid_thw") if video_grid_thw is not None else []
    if not images and not videos:
        return [], None
    patches = sum(t * h * w for t, h, w in images + videos)
    return images + videos, f"{len(images)} image(s), {len(videos)} video(s), {patches:,} patches"


def _call_core(model: ConfigDims, options: Mapping[str, Any], lengths: list[int] | None,
               seq_len: int | None, batch_size: int, grids: list[list[int]]) -> dict:
    """The C count, its errors named by the config key a field came from."""
    batch = ({"seq_lens": lengths} if lengths is not None
             else {"batch_size": batch_size, "seq_len": seq_len})
    vision = {"vision": model.vision, "grids": grids} if model.vision else {}
    try:
        return _C.transformer_flops(model.dims, dict(options), **batch, **vision)
    except (ValueError, TypeError) as exc:
        field, _, rest = str(exc).partition(":")
        if field in model.sources:
            raise type(exc)(f"{model.sources[field]} ({field}):{rest}") from None
        raise


def _windows(dims: Mapping[str, Any]) -> dict[str, int]:
    out = {}
    if dims.get("num_sliding_layers"):
        out["sliding"] = dims["sliding_window"]
    if dims.get("num_chunked_layers"):
        out["chunked"] = dims["attention_chunk_size"]
    return out


def transformer_flops(
    config: Any = None,
    *,
    seq_len: int | None = None,
    batch_size: int = 1,
    seq_lens: Any = None,
    cu_seqlens: Any = None,
    position_ids: Any = None,
    attention_mask: Any = None,
    image_grid_thw: Any = None,
    video_grid_thw: Any = None,
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
    """Analytic FLOPs of a training step of a language model (or a VLM).

    Args:
        config: a HuggingFace config (``PretrainedConfig`` or any object with
            the attributes), a ``config.json`` dict as transformers 4 or 5
            saves it, a preset name (``"llama-3.1-8b"``,
            :func:`~mfu_tracker.preset_names`) or a path to a ``config.json``,
            of a model type in ``_C.transformer_families()``: dense
            (gpt2, llama, mistral, phi3, qwen2, qwen3, gemma, gemma2,
            gemma3_text, olmo2, olmo3, smollm3, ministral3, seed_oss, glm4,
            ernie4_5, exaone4, cohere2, apertus, arcee, starcoder2), MoE
            (mixtral, qwen2_moe, qwen3_moe, gpt_oss, deepseek_v3, glm4_moe,
            llama4_text, deepseek_v2, glm4_moe_lite, olmoe, minimax_m2, phimoe,
            ernie4_5_moe, hunyuan_v1_moe, dots1, afmoe), hybrid / SSM
            (qwen3_next, qwen3_5, qwen3_5_moe, kimi_linear, mamba2,
            granitemoehybrid, nemotron_h, falcon_h1, jamba, lfm2), VLM
            (qwen2_5_vl, qwen3_vl, qwen3_5), or a nanoGPT ``GPTConfig`` dict; or None
            with the dimensions given as keywords (every field of
            ``_C.transformer_dim_names()``: ``hidden_size``, ``num_layers``,
            ``num_heads``, ``vocab_size``, ``intermediate_size``,
            ``num_kv_heads``, ``head_dim``, ``mlp`` ("swiglu" | "gelu" |
            "none"), ``norm`` ("rmsnorm" | "layernorm" | "layernorm_nobias"),
            ``num_experts``, ..., ``sliding_window``, ``num_sliding_layers``,
            ``attention_chunk_size``, ``num_mtp_layers``). Keywords override
            fields read from ``config`` (e.g. ``num_mtp_layers=0``: transformers
            builds no MTP layers).
        seq_len, batch_size: ``batch_size`` sequences of ``seq_len`` tokens.
        seq_lens: real lengths of the (packed or padded) sequences.
        cu_seqlens: cumulative lengths ``[0, s0, s0+s1, ...]`` (tensor/list).
        position_ids: ``[T]`` or ``[B, T]``; a sequence starts wherever the
            position is 0 (packed batches).
        attention_mask: ``[B, T]`` 0/1 padding mask; each row is one
            sequence of its real tokens.
            Give exactly one of seq_len, seq_lens, cu_seqlens, position_ids,
            attention_mask; the lengths count every language token, image
            and video placeholder tokens included.
        image_grid_thw, video_grid_thw: a VLM batch's grids, rows
            ``[t, h, w]`` in patches (the processor's outputs): the vision
            tower runs on them and its FLOPs are added (``vision_flops``).
        formula: ``"palm"`` (6·N_c·T + the attention and scan terms;
            torchtitan's and Lambda's), ``"6n"`` (6·N_c·T) or ``"matmul"``
            (every matmul's 2·m·n·k and every convolution: what an op
            counter sees). N_c is the active parameter count without the
            embedding tables, plus V·d per lm_head application when included
            (also when tied).
        causal_attention: ``"full"`` (default) or ``"half"``; see the module
            docstring for windows and chunks. Bidirectional attention
            (Gemma's ``use_bidirectional_attention``) is never halved.
        include_lm_head: count the lm_head matmul.
        include_embedding: count the embedding tables as if they were
            matmul weights (the "6N with total N" habit).
        tie_word_embeddings: override the config's value (parameter count).
        lora_rank, lora_targets: LoRA on a frozen base: base weights cost
            forward + input gradient (4·N per token), adapters full 6·N_a.
            Targets are peft module names (``q_proj``, ``v_proj``, ...,
            ``c_attn``, ``all-linear``); default q/v (GPT-2: c_attn). Counted
            on GQA attention and MLP layers only.
        activation_recompute: ``"none"``, ``"selective"`` (the attention
            core runs again) or ``"full"`` (every layer's forward runs
            again). Changes ``hardware_flops`` only.

    Returns:
        TransformerFlops; FLOPs totals are for the whole batch.

    NB: with a padding mask only real tokens are counted. NB (LoRA):
    autograd skips the input gradient of the first layer's frozen
    projections; this count keeps it (at most 2·(those weights) FLOPs per
    token). NB (HF Llama 4): transformers' Llama4TextMoe runs every expert
    on every token (routing by zero scores), so an op counter on it sees
    num_experts / experts_per_token times the experts' FLOPs this count
    charges (model FLOPs: the active experts only).

    Raises:
        TypeError: wrong types, unknown keywords, not exactly one sequence
            source.
        ValueError: malformed config or impossible values, naming the field
            (and the config key it came from).
    """
    model = _model_dims(config, dims, tie_word_embeddings)
    options: dict[str, Any] = {
        "formula": check_choice(formula, "formula", _FORMULAS, ignore_case=True),
        "causal_attention": check_choice(causal_attention, "causal_attention",
                                         CAUSAL_ATTENTION, ignore_case=True),
        "include_lm_head": check_flag(include_lm_head, "include_lm_head"),
        "include_embedding": check_flag(include_embedding, "include_embedding"),
        "activation_recompute": check_choice(activation_recompute, "activation_recompute",
                                             _RECOMPUTE, ignore_case=True),
    }
    lora = _lora(lora_rank, lora_targets, model.dims.get("mlp", "swiglu"), model.model_type)
    if lora is not None:
        options.update(lora_rank=lora["rank"], lora_targets=list(lora["targets"]))
    lengths, source = sequence_lengths(seq_len, batch_size, seq_lens, cu_seqlens,
                                       position_ids, attention_mask)
    grids, vision_text = _grids(image_grid_thw, video_grid_thw)
    raw = _call_core(model, options, lengths, seq_len, batch_size, grids)
    conventions = {
        **{k: options[k] for k in ("formula", "causal_attention", "include_lm_head",
                                   "include_embedding", "activation_recompute")},
        "tie_word_embeddings": bool(model.dims.get("tie_word_embeddings", False)),
        "bidirectional": bool(model.dims.get("bidirectional", False)),
        "lora": lora, "sequences": source, "model_type": model.model_type,
        "windows": types.MappingProxyType(_windows(model.dims)),
        "vision": vision_text if raw["vision_flops"] else None,
    }
    return _result(raw, conventions)


def _result(raw: Mapping[str, float], conventions: dict[str, Any]) -> TransformerFlops:
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
        language_flops=raw["language_flops"],
        vision_flops=raw["vision_flops"],
        scan_flops=raw["scan_flops"],
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
    (2× forward, the C core's ``MFU_ATTENTION_MODEL_BACKWARD``), giving 3×
    forward. Returns an int (FLOPs, not FLOP/s).

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

