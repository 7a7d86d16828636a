"""FLOPs and bytes of generating text, without a run: :func:`generation_flops`.

A generation is one *prefill* forward over the prompts, then one *decode*
forward per generated token after the first, each attending to the KV cache
(transformers' ``generate()``, vLLM, SGLang). It runs no backward: its model
FLOPs are forward FLOPs, counted with the conventions of the training count
(causal attention in full by default, windows, no recompute). Prefill and
decode are counted apart, because decode is bound by memory: its bytes
(weights read once per forward, the KV cache read and written) give MBU.

The arithmetic is the C core's (``csrc/core/model/generation.h``, on
``transformer.h``); conventions and sources in docs/generation.md. The exact
count of a real ``generate()`` is :class:`~mfu_tracker.GenerationCounter`;
the MFU and MBU of either against a device's peaks,
:func:`~mfu_tracker.generation_utilization`.

Units: FLOPs (not per second), bytes, tokens.
"""
from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping
from typing import Any

from .._dtypes import normalize_dtype
from .._native import _C
from .._validate import CAUSAL_ATTENTION, check_choice, check_flag
from ._analytic import _model_dims
from ._hf_config import is_supported, named_config
from ._result import FORMULAS

__all__ = ["GenerationFlops", "generation_flops"]

_MLA_CACHE = ("latent", "expanded")
_COUNTS = ("prefill_tokens", "decode_tokens", "generated_tokens", "sequences",
           "decode_forwards")


@dataclasses.dataclass(frozen=True)
class GenerationFlops:
    """The analytic count of a generation (FLOPs, bytes, tokens; whole batch).

    Attributes:
        prefill_flops, decode_flops: forward FLOPs of the prefill and of the
            decode steps (the model FLOPs of generation: no backward).
        prefill_attention_flops, decode_attention_flops: their attention
            cores (QKᵀ and AV), inside them; 0 with the ``"6n"`` formula.
        prefill_tokens: prompt tokens; decode_tokens: tokens the decode
            forwards took in (each sequence's generated tokens but the last);
            generated_tokens: tokens generated (decode_tokens + one per
            sequence, the prefill's).
        sequences: prompts; decode_forwards: decode steps, every sequence
            decoding in lockstep (the longest output less one).
        prefill_weight_bytes, decode_weight_bytes: weights read, once per
            forward (routed experts: those some token of the forward picks).
        decode_kv_read_bytes: the KV cache each decode token attends to;
        prefill_kv_write_bytes, decode_kv_write_bytes: the K and V written.
        prefill_state_bytes, decode_state_bytes: recurrent states of linear
            attention layers (written by the prefill; read and written per
            decode token).
        conventions: how it was counted (formula, causal convention,
            windows, dtypes, cache layout, lm_head), read-only;
            conventions_str the same as one line.
    """

    prefill_flops: float
    decode_flops: float
    prefill_attention_flops: float
    decode_attention_flops: float
    prefill_tokens: int
    decode_tokens: int
    generated_tokens: int
    sequences: int
    decode_forwards: int
    prefill_weight_bytes: float
    prefill_kv_write_bytes: float
    prefill_state_bytes: float
    decode_weight_bytes: float
    decode_kv_read_bytes: float
    decode_kv_write_bytes: float
    decode_state_bytes: float
    conventions: Mapping[str, Any]
    conventions_str: str

    @property
    def model_flops(self) -> float:
        """Prefill + decode FLOPs."""
        return self.prefill_flops + self.decode_flops

    @property
    def prefill_bytes(self) -> float:
        """Bytes the prefill moves: weights once, the KV cache and states written."""
        return self.prefill_weight_bytes + self.prefill_kv_write_bytes + self.prefill_state_bytes

    @property
    def decode_bytes(self) -> float:
        """Bytes the decode moves: weights per forward, the KV cache read and
        written, the recurrent states read and written (MBU's numerator)."""
        return (self.decode_weight_bytes + self.decode_kv_read_bytes +
                self.decode_kv_write_bytes + self.decode_state_bytes)

    def __add__(self, other: GenerationFlops) -> GenerationFlops:
        """Two generations (batches generated one after the other) as one."""
        if not isinstance(other, GenerationFlops):
            return NotImplemented
        if dict(other.conventions) != dict(self.conventions):
            raise ValueError("GenerationFlops: cannot add counts made under different "
                             f"conventions ({self.conventions_str!r} and "
                             f"{other.conventions_str!r})")
        sums = {f.name: getattr(self, f.name) + getattr(other, f.name)
                for f in dataclasses.fields(self) if f.name not in ("conventions",
                                                                    "conventions_str")}
        return dataclasses.replace(self, **sums)

    def __str__(self) -> str:
        return (f"prefill {self.prefill_flops:.4g} FLOPs over {self.prefill_tokens:,} prompt "
                f"tokens; decode {self.decode_flops:.4g} FLOPs and {self.decode_bytes:.4g} bytes "
                f"over {self.decode_tokens:,} tokens in {self.decode_forwards:,} forwards; "
                f"{self.conventions_str}")


def _lengths(value: Any, name: str, count: int | None) -> list[int]:
    """A sequence of lengths (an int: one per prompt, when ``count`` is known)."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be a sequence of ints, not bool")
    if isinstance(value, int) and count is not None:
        return [value] * count
    if hasattr(value, "tolist"):  # a tensor or an array
        value = value.tolist()
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise TypeError(f"{name} must be a sequence of ints, not {type(value).__name__}")
    out = list(value)
    for item in out:
        if isinstance(item, bool) or not isinstance(item, int):
            raise TypeError(f"{name} must hold ints, got {item!r}")
    return out


def _conventions(options: Mapping[str, Any], dims: Mapping[str, Any], model_type: Any,
                 weight_dtype: str, cache_dtype: str, mla_cache: str) -> dict[str, Any]:
    windows = {}
    if dims.get("num_sliding_layers"):
        windows["sliding"] = dims["sliding_window"]
    if dims.get("num_chunked_layers"):
        windows["chunked"] = dims["attention_chunk_size"]
    conv = {**options, "model_type": model_type, "windows": types.MappingProxyType(windows),
            "weight_dtype": weight_dtype, "cache_dtype": cache_dtype}
    if dims.get("attention") == "mla":
        conv["mla_cache"] = mla_cache
    return conv


def _conventions_str(conv: Mapping[str, Any]) -> str:
    parts = [f"formula {conv['formula']}", "forward only (generation)",
             "prefill causal attention: " + ("half s²" if conv["causal_attention"] == "half"
                                             else "full s²"),
             "decode: each token its cached keys"]
    for kind, size in conv["windows"].items():
        parts.append(f"{kind} window {size}")
    parts.append("lm_head on the last prompt token and every decode token"
                 if conv["include_lm_head"] else "lm_head excluded (FLOPs)")
    parts.append(f"weights {conv['weight_dtype']}, KV cache {conv['cache_dtype']}")
    if "mla_cache" in conv:
        parts.append(f"MLA cache {conv['mla_cache']}")
    return " · ".join(parts)


def generation_flops(
    config: Any = None,
    prompt_lens: Any = None,
    output_lens: Any = None,
    *,
    formula: str = "matmul",
    causal_attention: str = "full",
    include_lm_head: bool = True,
    dtype: Any = "bf16",
    cache_dtype: Any = None,
    mla_cache: str = "latent",
    **dims: Any,
) -> GenerationFlops:
    """Prefill and decode FLOPs and bytes of generating ``output_lens[i]``
    tokens after a prompt of ``prompt_lens[i]`` tokens, analytic.

    Args:
        config: as :func:`~mfu_tracker.transformer_flops` takes it (a
            HuggingFace config, a ``config.json`` dict or path, a preset
            name, or None with the dimensions as keywords), of a dense, MoE,
            MLA or gated-DeltaNet hybrid family. Mamba / SSM, short-conv and
            Kimi-delta layers, and model types without an analytic formula,
            are refused: count their ``generate()`` with
            :class:`~mfu_tracker.GenerationCounter`.
        prompt_lens: the prompts' real (unpadded) lengths, each >= 1.
        output_lens: the tokens each sequence generates, each >= 1 (an int:
            the same for every prompt). Sequences decode in lockstep as one
            batch (weights are read once per decode step for all of them);
            count batches run one after the other separately and add them
            (``a + b``).
        formula: ``"matmul"`` (default: every matmul, what the op counter
            sees on ``generate()``), ``"palm"`` (2 FLOPs per active
            parameter + the attention term) or ``"6n"`` (2N per token).
        causal_attention: the prefill's causal convention, ``"full"``
            (default, s²) or ``"half"``; decode is the same under both.
        include_lm_head: count the lm_head's FLOPs (on the last prompt token
            and every decode token); its weights are read either way.
        dtype: the weights' dtype (bytes per parameter: bf16 2, fp8 1, fp4
            0.5...).
        cache_dtype: the KV cache's (and recurrent states') dtype; default
            ``dtype``.
        mla_cache: MLA models: ``"latent"`` (default: the cache holds
            kv_lora_rank + rope dims per token, as transformers 5, vLLM and
            SGLang keep it; transformers expands every cached latent again at
            each decode step, and that is counted) or ``"expanded"`` (per-head
            K and V, transformers 4).
        **dims: dimensions over the config's, as ``transformer_flops``.

    Returns:
        GenerationFlops.

    Raises:
        TypeError, ValueError: naming the argument or the field.
    """
    if prompt_lens is None or output_lens is None:
        raise TypeError("generation_flops() needs prompt_lens and output_lens")
    prompts = _lengths(prompt_lens, "prompt_lens", None)
    outputs = _lengths(output_lens, "output_lens", len(prompts))
    formula = check_choice(formula, "formula", FORMULAS, ignore_case=True)
    options = {"formula": formula,
               "causal_attention": check_choice(causal_attention, "causal_attention",
                                                CAUSAL_ATTENTION, ignore_case=True),
               "include_lm_head": check_flag(include_lm_head, "include_lm_head")}
    weight = normalize_dtype(dtype, "dtype")
    cache = weight if cache_dtype is None else normalize_dtype(cache_dtype, "cache_dtype")
    layout = check_choice(mla_cache, "mla_cache", _MLA_CACHE, ignore_case=True)
    model = _model(config, dims)
    try:
        raw = _C.generation_flops(model.dims, options, prompts, outputs, weight_dtype=weight,
                                  cache_dtype=cache, mla_cache=layout)
    except (ValueError, TypeError) as exc:
        field, _, rest = str(exc).partition(":")
        if field in model.sources:
            raise type(exc)(f"{model.sources[field]} ({field}):{rest}") from None
        raise
    conv = _conventions(options, model.dims, model.model_type, weight, cache, layout)
    counts = {"prefill_tokens": raw["prefill_tokens"], "decode_tokens": raw["decode_tokens"],
              "generated_tokens": raw["decode_tokens"] + raw["sequences"],
              "sequences": raw["sequences"], "decode_forwards": raw["decode_forwards"]}
    return GenerationFlops(
        **{k: int(v) for k, v in counts.items()},
        **{k: v for k, v in raw.items() if k not in _COUNTS},
        conventions=types.MappingProxyType(conv), conventions_str=_conventions_str(conv))


def _model(config: Any, dims: Mapping[str, Any]) -> Any:
    """The config's dims with the keyword dims over them; a type without an
    analytic formula is refused (generation has no meta-device count)."""
    config = named_config(config)
    model_type = (config.get("model_type") if isinstance(config, Mapping)
                  else getattr(config, "model_type", None))
    if isinstance(model_type, str) and not is_supported(config):
        raise ValueError(f"generation_flops: model_type {model_type!r} has no analytic formula; "
                         "count its generate() with GenerationCounter (an op counter on the "
                         "real model) instead")
    return _model_dims(config, dims, None)
