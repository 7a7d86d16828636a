"""FLOPs without a model: analytic transformer counts and peer helpers.

Units: FLOPs are floating-point operations (one multiply-add = 2 FLOPs), not
per second; bytes are bytes. The arithmetic lives in the C core
(``csrc/core/model/transformer.c`` and its blocks, spans, vision towers and family
table; ``flops.c`` for attention calls); this module turns configs, tensors
and keyword arguments into its inputs.

Conventions (docs/conventions.md):

* **model FLOPs** (MFU numerator): forward + the backward the trainable
  weights and activations need; activation recompute never counts; a frozen
  base under LoRA gets forward + input gradient only.
* **hardware FLOPs** (HFU numerator): model FLOPs + activation recompute.
* **causal attention** counts the full s² by default (PaLM / torchtitan /
  FlopCounterMode); ``causal_attention="half"`` halves it (Megatron / verl).
  Windowed layers: ``"full"`` charges sᵢ·min(sᵢ, w) (a chunk of c: Σ over
  chunks of len²), ``"half"`` the unmasked pairs, Σ over queries of
  min(position + 1, w) (chunks: Σ len·(len + 1)/2); ``csrc/core/model/spans.h``.
* **packed / padded batches**: the attention term uses the *real* sequence
  lengths.
* **VLMs**: the vision tower (bidirectional: never halved) is added for the
  batch's ``image_grid_thw`` / ``video_grid_thw``; ``language_flops`` and
  ``vision_flops`` split the model FLOPs.

This module does not import transformers; torch is imported only by
:func:`param_bytes` / :func:`num_params` (through the model you pass).
"""
from __future__ import annotations

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
)
from ._hf_vlm import tile_grids
from ._hf_config import ConfigDims, apply_bias, dims_from_config, lora_target_names
from ._exact import counting_config, exact_route  # noqa: F401 -- counting_config: re-exported
from ._conventions import convention_flops
from ._peer import flash_attn_flops, num_params, param_bytes, params_flops  # noqa: F401 -- __all__
from ._result import FORMULAS as _FORMULAS
from ._result import TransformerFlops
from ._sequences import grid_rows, sequence_lengths

__all__ = [
    "TransformerFlops",
    "transformer_flops",
    "params_flops",
    "flash_attn_flops",
    "param_bytes",
    "num_params",
]

_RECOMPUTE = ("none", "full", "selective")

# Keyword dims accepted by transformer_flops(**dims): the C core's fields.
_DIM_FIELDS = tuple(_C.transformer_dim_names())


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
    if "sliding" in windows and conv.get("bidirectional"):
        parts.append(f"bidirectional sliding window {windows['sliding']} (|q−k| < w): "
                     + ("the pairs inside it" if half else "s·min(s, 2w−1)"))
    elif "sliding" in windows:
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
    if conv.get("context_parallel"):
        cp = conv["context_parallel"]
        parts.append(f"context parallel ({cp['mode']}): rank {cp['rank']} of {cp['degree']}, its "
                     f"share; the group's tokens {cp['group_tokens']:,}")
    if conv.get("vision"):
        parts.append(f"vision tower: {conv['vision']} (bidirectional, not halved)")
    elif conv.get("tower"):
        parts.append("vision tower: not counted (no image in this batch: text only)")
    return " · ".join(parts)


def _model_dims(config: Any, dims: Mapping[str, Any], tie_word_embeddings: bool | None,
                bias: bool | None = None) -> ConfigDims:
    """The config's dims (if any) with the explicit keyword dims over them."""
    unknown = sorted(set(dims) - set(_DIM_FIELDS))
    if unknown:
        close = sorted({m for u in unknown for m in difflib.get_close_matches(u, _DIM_FIELDS, 2)})
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise TypeError(f"transformer_flops() got unknown keyword(s) {', '.join(unknown)}{hint}; "
                        "the dimensions are mfu_tracker._C.transformer_dim_names()")
    if isinstance(config, ConfigDims):  # read once by a caller that counts often
        read = ConfigDims(dict(config.dims), dict(config.sources), config.vision,
                          config.model_type, config.pinpoints)
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
    if bias is not None:
        apply_bias(merged, check_flag(bias, "bias"))
    return ConfigDims(merged, read.sources, read.vision, read.model_type, read.pinpoints)


def _lora(lora_rank: Any, lora_targets: Any, mlp: str, model_type: str | None) -> dict | None:
    if lora_rank is None:
        if lora_targets is not None:
            raise TypeError("lora_targets needs lora_rank")
        return None
    rank = check_int(lora_rank, "lora_rank", 1)
    targets = lora_target_names(lora_targets, mlp, model_type)
    check_int(len(targets), "lora_targets (module names)", 1)
    return {"rank": rank, "targets": tuple(targets)}


def _vision_input(model: ConfigDims, image_grid_thw: Any, video_grid_thw: Any,
                  pixel_values: Any, image_sizes: Any) -> tuple[list[list[int]], str | None]:
    """The batch's images (and videos) as the tower's grids, and their
    description; image inputs to a model without a tower are an error (its
    count could not include them)."""
    given = [name for name, value in (("image_grid_thw", image_grid_thw),
                                      ("video_grid_thw", video_grid_thw),
                                      ("pixel_values", pixel_values),
                                      ("image_sizes", image_sizes)) if value is not None]
    if not given:
        return [], None
    if model.vision is None:
        raise ValueError(f"{' / '.join(given)} given, but model_type {model.model_type!r} has no "
                         "vision tower here: its count cannot include images (a text-only "
                         "config, or dims without a tower)")
    if model.vision["kind"] in _TILED:
        if image_grid_thw is not None or video_grid_thw is not None:
            raise ValueError(f"model_type {model.model_type!r} takes its images as pixel_values "
                             "(tiles x channels x height x width), not image_grid_thw")
        if pixel_values is None:
            raise ValueError("image_sizes needs pixel_values")
        return tile_grids(pixel_values, image_sizes, model.vision, model.pinpoints)
    if pixel_values is not None or image_sizes is not None:
        raise ValueError(f"model_type {model.model_type!r} takes its images as image_grid_thw / "
                         "video_grid_thw (the processor's grids), not pixel_values")
    return _grids(image_grid_thw, video_grid_thw)


_TILED = ("gemma3", "llava_clip", "llava_siglip", "llama4")


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
    inputs = _core_inputs(model, lengths, seq_len, batch_size, grids)
    try:
        return _C.transformer_flops(inputs.pop("dims"), dict(options), **inputs)
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
    pixel_values: Any = None,
    image_sizes: Any = None,
    formula: str | None = None,
    causal_attention: str | None = None,
    include_lm_head: bool | None = None,
    include_embedding: bool | None = None,
    tie_word_embeddings: bool | None = None,
    lora_rank: int | None = None,
    lora_targets: Any = None,
    activation_recompute: str = "none",
    bias: bool | None = None,
    convention: str | Mapping[str, Any] | None = None,
    context_parallel: int | None = None,
    cp_rank: int = 0,
    cp_mode: str = "ring",
    **dims: Any,
) -> TransformerFlops:
    """FLOPs of a training step of a language model (or a VLM): analytic for
    the families the C core lists, the exact count otherwise.

    Any other ``model_type`` transformers can build (a config object, a
    saved ``config.json`` dict, ``use_cache`` either way) is counted exactly:
    its model is built on the ``meta`` device (no memory), one forward +
    backward per distinct sequence length runs under FlopCounter, and the
    batch's count is the sum over its sequences (cached per config and
    length); ``conventions["formula"] == "exact"`` and a note say so. A
    VLM's images run through its ``get_image_features`` (tower and
    projector) on their own. What cannot be counted raises one line naming
    the model type, the cause and the alternatives (:class:`FlopCounter` on
    a real step, ``profile_flops(model, batch, device="meta")``).

    Args:
        config: a HuggingFace config (``PretrainedConfig`` or any object with
            the attributes), a ``config.json`` dict as transformers 4 or 5
            saves it, a preset name (``"llama-3.1-8b"``,
            :func:`~mfu_tracker.preset_names`) or a path to a ``config.json``,
            analytic for a model type in ``_C.transformer_families()``: dense
            (gpt2, llama, mistral, phi3, qwen2, qwen3, gemma, gemma2,
            gemma3_text, olmo2, olmo3, smollm3, ministral3, seed_oss, glm4,
            ernie4_5, exaone4, cohere2, apertus, arcee, starcoder2), MoE
            (mixtral, qwen2_moe, qwen3_moe, gpt_oss, deepseek_v3, glm4_moe,
            llama4_text, deepseek_v2, glm4_moe_lite, olmoe, minimax_m2, phimoe,
            ernie4_5_moe, hunyuan_v1_moe, dots1, afmoe), hybrid / SSM
            (qwen3_next, qwen3_5, qwen3_5_moe, kimi_linear, mamba2,
            granitemoehybrid, nemotron_h, falcon_h1, jamba, lfm2), VLM
            (qwen2_5_vl, qwen3_vl, qwen3_5; composite gemma3, llama4, llava,
            llava_next, llava_onevision configs with their tower), or a
            nanoGPT ``GPTConfig`` dict; exact for any other type; or None
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
        pixel_values, image_sizes: a fixed-resolution tower's images
            (Gemma 3, Llama 4, the LLaVA family; SmolVLM, InternVL ... on the
            exact path): the pixel tensor (or its shape), tiles x channels x
            height x width; LLaVA-NeXT / OneVision's 5-D
            ``[images, crops, ...]`` with ``image_sizes`` keeps each image's
            real crops. Image inputs to a model without a tower are an
            error.
        formula: ``"palm"`` (default; 6·N_c·T + the attention and scan
            terms; torchtitan's and Lambda's), ``"6n"`` (6·N_c·T) or
            ``"matmul"`` (every matmul's 2·m·n·k and every convolution: what
            an op counter sees), or ``"exact"`` (the meta-device count, any
            type; ``"matmul"`` equals it where both exist). N_c is the active
            parameter count without the embedding tables, plus V·d per
            lm_head application when included (also when tied).
        causal_attention: ``"full"`` (default) or ``"half"``; see the module
            docstring for windows and chunks. Bidirectional attention
            (Gemma's ``use_bidirectional_attention``) is never halved.
        include_lm_head: count the lm_head matmul (default True).
        include_embedding: count the embedding tables as if they were
            matmul weights (the "6N with total N" habit; default False).
        tie_word_embeddings: override the config's value (parameter count).
        lora_rank, lora_targets: LoRA on a frozen base: base weights cost
            forward + input gradient (4·N per token), adapters full 6·N_a.
            Targets are peft module names (``q_proj``, ``v_proj``, ...,
            ``c_attn``, ``all-linear``); default q/v (GPT-2: c_attn). Counted
            on GQA attention and MLP layers only.
        activation_recompute: ``"none"``, ``"selective"`` (the attention
            core runs again) or ``"full"`` (every layer's forward runs
            again). Changes ``hardware_flops`` only.
        bias: nanoGPT's ``GPTConfig.bias`` over the config and dimensions:
            True, a bias in every Linear and LayerNorm (GPT-2); False, in
            none (``norm="layernorm"`` becomes ``"layernorm_nobias"``): the
            parameters the 6N / PaLM formulas count, as nanoGPT's
            ``get_num_params`` does. None (default) keeps what they say.
        convention: count as another framework does: ``"verl"``,
            ``"veomni"``, ``"megatron"``, ``"torchtitan"``, ``"nanogpt"``
            (``"mfu_tracker"``: ours), or a mapping with ``"name"`` and the
            framework's options (``{"name": "megatron", "quick_geglu":
            False}``; docs/framework-conventions.md). A preset of every
            choice (formula, embedding, lm_head, router, MTP, causal,
            windows, vision tower) and, per model type, the framework's
            function with its quirks; a type the framework has no formula
            for is a ``ValueError`` naming what the framework logs.
            ``formula``, ``causal_attention``, ``include_embedding`` and
            ``include_lm_head`` given explicitly override the preset's.
            ``conventions["convention"]["difference"]`` itemizes the
            difference from ours, quirks by name.
        context_parallel, cp_rank, cp_mode: one rank's share when each
            sequence is split across ``context_parallel`` ranks (contiguous
            chunks; the degree divides every length): ``"ulysses"`` (heads
            all-to-all: an even share) or ``"ring"`` (ring attention or an
            all-gather of K and V: the rank's chunk against the chunks before
            it, the causal diagonal; the blocks above it never run).
            ``num_tokens`` is the rank's tokens.

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
    exact = exact_route(config, formula, causal_attention, dims, locals())
    if exact is not None:
        return exact(seq_len, batch_size, seq_lens, cu_seqlens, position_ids, attention_mask,
                     image_grid_thw, video_grid_thw, pixel_values, image_sizes)
    model = _model_dims(config, dims, tie_word_embeddings, bias)
    explicit = {"formula": formula, "causal_attention": causal_attention,
                "include_lm_head": include_lm_head, "include_embedding": include_embedding}
    options = _options(explicit, activation_recompute)
    lora = _lora(lora_rank, lora_targets, model.dims.get("mlp", "swiglu"), model.model_type)
    if lora is not None:
        options.update(lora_rank=lora["rank"], lora_targets=list(lora["targets"]))
    lengths, source = sequence_lengths(seq_len, batch_size, seq_lens, cu_seqlens,
                                       position_ids, attention_mask)
    grids, vision_text = _vision_input(model, image_grid_thw, video_grid_thw, pixel_values,
                                       image_sizes)
    if context_parallel is not None:
        if convention is not None or grids:
            raise ValueError("context_parallel counts one rank's share of a language model: "
                             "it takes no convention= and no images")
        raw = _C_context_parallel(model, options, lengths, seq_len, batch_size,
                                  context_parallel, cp_rank, cp_mode)
        conv = _conventions(options, model, lora, source, None)
        conv["context_parallel"] = types.MappingProxyType(
            {"degree": context_parallel, "rank": cp_rank, "mode": cp_mode,
             "group_tokens": int(raw["num_tokens"]) * context_parallel})
        return _result(raw, conv)
    if convention is not None:
        if lora is not None:
            raise ValueError("convention= reproduces a framework's full-training formula: it "
                             "takes no lora_rank")
        ours = _result(_call_core(model, _options({}, "none"), lengths, seq_len, batch_size,
                                  grids), _conventions(_options({}, "none"), model, None, source,
                                                       vision_text))
        return convention_flops(convention, explicit,
                                _core_inputs(model, lengths, seq_len, batch_size, grids), ours)
    raw = _call_core(model, options, lengths, seq_len, batch_size, grids)
    return _result(raw, _conventions(options, model, lora, source,
                                     vision_text if raw["vision_flops"] else None))


def _C_context_parallel(model: ConfigDims, options: Mapping[str, Any], lengths: list[int] | None,
                        seq_len: int | None, batch_size: int, degree: Any, rank: Any,
                        mode: Any) -> dict:
    """One rank's share (csrc/core/model/context_parallel.h), errors named by config key."""
    check_int(degree, "context_parallel", 1)
    check_int(rank, "cp_rank", 0, degree - 1)
    mode = check_choice(mode, "cp_mode", ("ring", "ulysses"), ignore_case=True)
    inputs = _core_inputs(model, lengths, seq_len, batch_size, [])
    inputs.pop("vision", None), inputs.pop("grids", None)
    try:
        return _C.context_parallel_flops(inputs.pop("dims"), dict(options), degree, rank, mode,
                                         **inputs)
    except (ValueError, TypeError) as exc:
        field, _, rest = str(exc).partition(":")
        if field in model.sources:
            raise type(exc)(f"{model.sources[field]} ({field}):{rest}") from None
        raise


def _options(explicit: Mapping[str, Any], activation_recompute: Any) -> dict[str, Any]:
    """The C core's options: the explicit arguments, our defaults elsewhere."""
    def given(name: str, default: Any) -> Any:
        value = explicit.get(name)
        return default if value is None else value
    return {
        "formula": check_choice(given("formula", "palm"), "formula", _FORMULAS,
                                ignore_case=True),
        "causal_attention": check_choice(given("causal_attention", "full"), "causal_attention",
                                         CAUSAL_ATTENTION, ignore_case=True),
        "include_lm_head": check_flag(given("include_lm_head", True), "include_lm_head"),
        "include_embedding": check_flag(given("include_embedding", False), "include_embedding"),
        "activation_recompute": check_choice(activation_recompute, "activation_recompute",
                                             _RECOMPUTE, ignore_case=True),
    }


def _conventions(options: Mapping[str, Any], model: ConfigDims, lora: Any, source: str,
                 vision_text: str | None) -> dict[str, Any]:
    return {
        **{k: options[k] for k in ("formula", "causal_attention", "include_lm_head",
                                   "include_embedding", "activation_recompute")},
        "tie_word_embeddings": bool(model.dims.get("tie_word_embeddings", False)),
        "bidirectional": bool(model.dims.get("bidirectional", False)),
        "lora": lora, "sequences": source, "model_type": model.model_type,
        "windows": types.MappingProxyType(_windows(model.dims)),
        "vision": vision_text, "tower": model.vision is not None,
    }


def _core_inputs(model: ConfigDims, lengths: list[int] | None, seq_len: int | None,
                 batch_size: int, grids: list[list[int]]) -> dict[str, Any]:
    """The batch and model as the C core's keyword arguments."""
    out: dict[str, Any] = {"dims": model.dims}
    out.update({"seq_lens": lengths} if lengths is not None
               else {"batch_size": batch_size, "seq_len": seq_len})
    if model.vision:
        out.update(vision=model.vision, grids=grids)
    return out


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
