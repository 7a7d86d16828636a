"""A HuggingFace model config (a dict or an attribute-style object) read into
the C core's transformer dimensions, for :func:`mfu_tracker.transformer_flops`.

Which config keys each supported ``model_type`` uses, their defaults (GPT-2
ties its embeddings, the Llama family does not), mixture-of-experts and
sliding-window layouts, and the LoRA target names peft uses.
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from .presets import resolve_model_config

SUPPORTED_TYPES = (
    "gpt2",
    "llama",
    "mistral",
    "qwen2",
    "qwen3",
    "mixtral",
    "qwen2_moe",
    "qwen3_moe",
)

# LoRA target names (peft module names and short forms) -> C target names.
LORA_ALIASES: dict[str, tuple[str, ...]] = {
    "q": ("q",), "k": ("k",), "v": ("v",), "o": ("o",),
    "gate": ("gate",), "up": ("up",), "down": ("down",),
    "q_proj": ("q",), "k_proj": ("k",), "v_proj": ("v",), "o_proj": ("o",),
    "gate_proj": ("gate",), "up_proj": ("up",), "down_proj": ("down",),
    # Mixtral's original expert names
    "w1": ("gate",), "w3": ("up",), "w2": ("down",),
    # GPT-2: c_attn is the fused q/k/v; "c_proj" matches both attn.c_proj
    # and mlp.c_proj in peft; c_fc is the MLP's first matrix.
    "c_attn": ("q", "k", "v"), "c_proj": ("o", "down"), "c_fc": ("up",),
}


# ---------------------------------------------------------------------------
# Config reading
# ---------------------------------------------------------------------------

class _Config:
    """Uniform read access to a dict or an attribute-style config."""

    def __init__(self, config: Any) -> None:
        if isinstance(config, Mapping):
            self._data: Mapping[str, Any] | None = config
            self._obj = None
        else:
            self._data = None
            self._obj = config
        self.sources: dict[str, str] = {}  # dims field -> config key

    def get(self, key: str, default: Any = None) -> Any:
        if self._data is not None:
            value = self._data.get(key, None)
        else:
            try:
                value = getattr(self._obj, key, None)
            except Exception:  # a property that raises: treat as absent
                value = None
        return default if value is None else value

    def int(self, field: str, *keys: str, default: int | None = None,
            minimum: int = 0) -> int | None:
        """The first present key among ``keys`` as an int >= minimum."""
        for key in keys:
            value = self.get(key)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                if isinstance(value, float) and value.is_integer():
                    value = int(value)
                else:
                    raise TypeError(
                        f"config.{key} must be an int, not {type(value).__name__} "
                        f"({value!r})"
                    )
            if value < minimum:
                raise ValueError(f"config.{key} must be >= {minimum}, got {value}")
            self.sources[field] = key
            return value
        return default

    def require(self, field: str, *keys: str, minimum: int = 1) -> int:
        value = self.int(field, *keys, minimum=minimum)
        if value is None:
            raise ValueError(
                f"config is missing {' / '.join(repr(k) for k in keys)} "
                f"(needed for {field})"
            )
        return value

    def flag(self, field: str, key: str, default: bool = False) -> bool:
        value = self.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise TypeError(
                f"config.{key} must be a bool, not {type(value).__name__} ({value!r})"
            )
        self.sources[field] = key
        return value

    def int_list(self, key: str) -> list[int]:
        value = self.get(key)
        if value is None:
            return []
        if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
            raise TypeError(f"config.{key} must be a list of ints, not {value!r}")
        out = []
        for item in value:
            if isinstance(item, bool) or not isinstance(item, int):
                raise TypeError(f"config.{key} must be a list of ints, not {value!r}")
            out.append(item)
        return out


def named_config(config: Any) -> Any:
    """A preset name ("llama-3.1-8b") or a ``config.json`` path, read into its
    dict (:func:`mfu_tracker.flops.presets.resolve_model_config`); any other
    config as given. The one place a name becomes a config."""
    if isinstance(config, (str, os.PathLike)):
        return resolve_model_config(config, argument="config")
    return config


def dims_from_config(config: Any) -> tuple[dict[str, Any], dict[str, str], bool, str]:
    """(dims, dims-field -> config-key, tie_word_embeddings, model_type) of a
    config object or dict, or of a preset name or config.json path."""
    cfg = _Config(named_config(config))
    model_type = cfg.get("model_type")
    if model_type is None:
        raise ValueError(
            "config.model_type is missing; supported: "
            f"{', '.join(SUPPORTED_TYPES)} (or pass explicit dims)"
        )
    if not isinstance(model_type, str):
        raise TypeError(f"config.model_type must be a str, not {model_type!r}")
    if model_type not in SUPPORTED_TYPES:
        raise ValueError(
            f"config.model_type {model_type!r} is not supported; supported: "
            f"{', '.join(SUPPORTED_TYPES)} (or pass explicit dims as keywords)"
        )
    dims: dict[str, Any] = {}

    if model_type == "gpt2":
        hidden = cfg.require("hidden_size", "n_embd", "hidden_size")
        dims["hidden_size"] = hidden
        dims["num_layers"] = cfg.require("num_layers", "n_layer", "num_hidden_layers")
        heads = cfg.require("num_heads", "n_head", "num_attention_heads")
        dims["num_heads"] = heads
        dims["num_kv_heads"] = heads
        dims["intermediate_size"] = cfg.int("intermediate_size", "n_inner",
                                            default=4 * hidden, minimum=1)
        dims["vocab_size"] = cfg.require("vocab_size", "vocab_size")
        dims["num_positions"] = cfg.require("num_positions", "n_positions",
                                            "max_position_embeddings")
        dims.update(mlp="gelu", norm="layernorm", qkv_bias=True,
                    attention_out_bias=True, mlp_bias=True)
        # GPT2Config defaults tie_word_embeddings to True.
        tie = cfg.flag("tie_word_embeddings", "tie_word_embeddings", True)
        return dims, cfg.sources, tie, model_type

    # Llama family: Llama, Mistral, Qwen2/3 and their MoE variants.
    dims["hidden_size"] = cfg.require("hidden_size", "hidden_size")
    layers = cfg.require("num_layers", "num_hidden_layers")
    dims["num_layers"] = layers
    heads = cfg.require("num_heads", "num_attention_heads")
    dims["num_heads"] = heads
    dims["num_kv_heads"] = cfg.int("num_kv_heads", "num_key_value_heads",
                                   default=heads, minimum=1)
    head_dim = cfg.int("head_dim", "head_dim", minimum=1)
    if head_dim is not None:
        dims["head_dim"] = head_dim
    dims["vocab_size"] = cfg.require("vocab_size", "vocab_size")
    dims["mlp"] = "swiglu"
    dims["norm"] = "rmsnorm"
    dims["mlp_bias"] = cfg.flag("mlp_bias", "mlp_bias")

    if model_type in ("llama", "mistral", "mixtral", "qwen3", "qwen3_moe"):
        bias = cfg.flag("qkv_bias", "attention_bias")
        dims["qkv_bias"] = bias
        dims["attention_out_bias"] = bias
        if bias:
            cfg.sources["attention_out_bias"] = "attention_bias"
    else:  # qwen2, qwen2_moe: biases on q, k, v only
        dims["qkv_bias"] = True
        dims["attention_out_bias"] = False
    dims["qk_norm"] = model_type in ("qwen3", "qwen3_moe")

    # Mixture of experts.
    if model_type == "mixtral":
        dims["num_experts"] = cfg.require("num_experts", "num_local_experts")
        dims["experts_per_token"] = cfg.require("experts_per_token",
                                                "num_experts_per_tok")
        # Mixtral's experts use intermediate_size; no dense layers.
        dims["moe_intermediate_size"] = cfg.require("moe_intermediate_size",
                                                    "intermediate_size")
        dims["intermediate_size"] = 0
    elif model_type in ("qwen2_moe", "qwen3_moe"):
        experts = cfg.require("num_experts", "num_experts")
        dims["num_experts"] = experts
        dims["experts_per_token"] = cfg.require("experts_per_token",
                                                "num_experts_per_tok")
        dims["moe_intermediate_size"] = cfg.require("moe_intermediate_size",
                                                    "moe_intermediate_size")
        shared = cfg.int("shared_expert_intermediate_size",
                         "shared_expert_intermediate_size", default=0)
        if model_type == "qwen2_moe" and shared:
            dims["shared_expert_intermediate_size"] = shared
            dims["shared_expert_gate"] = True
        step = cfg.int("num_dense_layers", "decoder_sparse_step", default=1,
                       minimum=1)
        only = set(cfg.int_list("mlp_only_layers"))
        dense = sum(
            1 for i in range(layers)
            if i in only or not (experts > 0 and (i + 1) % step == 0)
        )
        dims["num_dense_layers"] = dense
        if dense:
            dims["intermediate_size"] = cfg.require("intermediate_size",
                                                    "intermediate_size")
        else:
            dims["intermediate_size"] = cfg.int("intermediate_size",
                                                "intermediate_size", default=0)
    else:
        dims["intermediate_size"] = cfg.require("intermediate_size",
                                                "intermediate_size")

    # Sliding-window layers.
    window = cfg.int("sliding_window", "sliding_window", default=0)
    sliding_layers = 0
    if window:
        layer_types = cfg.get("layer_types")
        if layer_types is not None and not isinstance(layer_types, str):
            sliding_layers = sum(1 for t in layer_types if t == "sliding_attention")
        elif model_type in ("qwen2", "qwen3", "qwen2_moe", "qwen3_moe"):
            if cfg.flag("num_sliding_layers", "use_sliding_window"):
                first = cfg.int("num_sliding_layers", "max_window_layers",
                                default=layers)
                sliding_layers = max(0, layers - first)
        else:  # mistral, mixtral, llama with a window: every layer
            sliding_layers = layers
    if sliding_layers:
        dims["sliding_window"] = window
        dims["num_sliding_layers"] = sliding_layers
    # Llama-family configs default to untied embeddings.
    tie = cfg.flag("tie_word_embeddings", "tie_word_embeddings", False)
    return dims, cfg.sources, tie, model_type


def lora_target_names(targets: Any, mlp: str, model_type: str | None) -> list[str]:
    if targets is None:
        # peft's defaults: q_proj + v_proj for Llama-style, c_attn for GPT-2.
        return ["q", "k", "v"] if model_type == "gpt2" else ["q", "v"]
    if isinstance(targets, str):
        targets = [targets]
    if isinstance(targets, (bytes, Mapping)) or not isinstance(targets, Iterable):
        raise TypeError(f"lora_targets must be a list of module names, not {targets!r}")
    out: list[str] = []
    for name in targets:
        if not isinstance(name, str):
            raise TypeError(f"lora_targets must hold str, got {name!r}")
        key = name.strip().lower()
        if key in ("all-linear", "all_linear", "all"):
            mapped: tuple[str, ...] = ("q", "k", "v", "o", "up", "down") + (
                ("gate",) if mlp == "swiglu" else ())
        elif key in LORA_ALIASES:
            mapped = LORA_ALIASES[key]
        else:
            raise ValueError(
                f"lora_targets: unknown module {name!r}; known: "
                f"{', '.join(sorted(LORA_ALIASES))}, all-linear"
            )
        for m in mapped:
            if m not in out:
                out.append(m)
    return out
