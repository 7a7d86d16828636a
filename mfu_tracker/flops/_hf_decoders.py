"""How the dense and mixture-of-experts decoder families of the C core's
``family_dense.c`` / ``family_moe.c`` read their configs: which config keys
set each bias, which layers are windowed when a config has no
``layer_types`` (each rule transcribes the config class's ``__post_init__``
in transformers 5.24), and which layers hold experts.

Each entry of :data:`DECODER_FAMILIES` is the keyword arguments of one
``_hf_config._Family``; the bias key groups here are shared with it.
Rules take the ``_hf_config._Config`` of the (text) config and a layer index.
"""
from __future__ import annotations

from typing import Any

from .._validate import check_whole_number

# dims flag -> config keys (bools) that set it, per flag group.
ATTENTION_BIAS = {"qkv_bias": ("attention_bias", "qkv_bias"),
                  "attention_out_bias": ("attention_bias",)}
QKV_BIAS = {"qkv_bias": ("attention_bias", "qkv_bias")}
MLP_BIAS = {"mlp_bias": ("mlp_bias",)}
SSM_BIAS = {"ssm_conv_bias": ("use_conv_bias",), "ssm_proj_bias": ("use_bias",),
            "ssm_out_proj_bias": ("use_bias",)}
# ERNIE 4.5, StarCoder2: one use_bias on every projection of attention and MLP
USE_BIAS = {"qkv_bias": ("use_bias",), "attention_out_bias": ("use_bias",),
            "mlp_bias": ("use_bias",)}


# ---------------------------------------------------------------------------
# Sliding layers without layer_types
# ---------------------------------------------------------------------------

def _smollm3_local(cfg: Any, i: int) -> bool:
    """SmolLM3Config: sliding on the NoPE layers (no_rope_layers[i] == 0, by
    default every no_rope_layer_interval-th) with use_sliding_window."""
    if not cfg.flag("use_sliding_window"):
        return False
    flags = cfg.int_list("no_rope_layers")
    if flags:
        return i < len(flags) and not flags[i]
    interval = cfg.int("num_sliding_layers", ("no_rope_layer_interval",), default=4, minimum=1)
    return (i + 1) % interval == 0


def _olmo3_local(cfg: Any, i: int) -> bool:
    """Olmo3Config: three sliding layers, then a full one."""
    return (i + 1) % 4 != 0


def _exaone4_local(cfg: Any, i: int) -> bool:
    """Exaone4Config: sliding_window_pattern n (every n-th layer full; 0 none),
    or, in older configs, a string with one letter per layer ("LLLG": L local)."""
    pattern = cfg.get("sliding_window_pattern", 4)
    if isinstance(pattern, str):
        return bool(pattern) and pattern[i % len(pattern)] == "L"
    n = check_whole_number(pattern, f"{cfg.prefix}.sliding_window_pattern", 0)
    return n > 0 and (i + 1) % n != 0


def _cohere2_local(cfg: Any, i: int) -> bool:
    """Cohere2Config: every sliding_window_pattern-th layer full (default 4)."""
    n = cfg.int("num_sliding_layers", ("sliding_window_pattern",), default=4, minimum=1)
    return (i + 1) % n != 0


def _dots1_local(cfg: Any, i: int) -> bool:
    """Dots1Config: sliding from max_window_layers on (default 62)."""
    return i >= cfg.int("num_sliding_layers", ("max_window_layers",), default=62)


def _afmoe_local(cfg: Any, i: int) -> bool:
    """AfmoeConfig: every global_attn_every_n_layers-th layer full (default 4)."""
    n = cfg.int("num_sliding_layers", ("global_attn_every_n_layers",), default=4, minimum=1)
    return (i + 1) % n != 0


def _always(cfg: Any, i: int) -> bool:
    return True


# ---------------------------------------------------------------------------
# MoE layers
# ---------------------------------------------------------------------------

def _ernie_moe_layer(cfg: Any, i: int) -> bool:
    """Ernie4_5_MoeDecoderLayer: every moe_layer_interval-th layer from
    moe_layer_start_index to moe_layer_end_index (-1: the last)."""
    interval = cfg.int("num_dense_layers", ("moe_layer_interval",), default=1, minimum=1)
    start = cfg.int("num_dense_layers", ("moe_layer_start_index",), default=1)
    end = cfg.get("moe_layer_end_index", -1)
    end = -1 if end == -1 else check_whole_number(end, f"{cfg.prefix}.moe_layer_end_index", 0)
    return (i + 1) % interval == 0 and i >= start and (end < 0 or i <= end)


def _afmoe_moe_layer(cfg: Any, i: int) -> bool:
    """AfmoeDecoderLayer: experts from layer num_dense_layers on (default 1)."""
    return i >= cfg.int("num_dense_layers", ("num_dense_layers",), default=1)


def moe_layers(cfg: Any, spec: Any, layers: int) -> int:
    """How many of the first ``layers`` layers use experts, by ``spec.moe``
    (an ``_hf_config._Family``'s rule: a name or a rule per layer)."""
    if callable(spec.moe):  # the family's rule per layer
        return sum(1 for i in range(layers) if spec.moe(cfg, i))
    if spec.moe == "all":
        return layers
    if spec.moe == "first_k_dense":  # DeepSeek-V3, GLM-4.5
        first = cfg.int("num_dense_layers", ("first_k_dense_replace",), default=0)
        freq = cfg.int("num_dense_layers", ("moe_layer_freq",), default=1, minimum=1)
        return sum(1 for i in range(layers) if i >= first and i % freq == 0)
    if spec.moe == "layer_types":  # GLM-4.7-Flash, Kimi Linear: mlp_layer_types
        kinds = cfg.str_list("mlp_layer_types")
        if kinds is None:  # their configs' default: dense below first_k_dense_replace
            first = cfg.int("num_dense_layers", ("first_k_dense_replace",), default=1)
            kinds = ["dense" if i < first else "sparse" for i in range(layers)]
        return kinds[:layers].count("sparse")
    if spec.moe == "llama4":
        listed = cfg.int_list("moe_layers")
        if cfg.has("moe_layers"):
            return sum(1 for i in set(listed) if i < layers)
        step = cfg.int("num_dense_layers", ("interleave_moe_layer_step",), default=1, minimum=1)
        return len(range(step - 1, layers, step))
    # Qwen: every decoder_sparse_step-th layer, except mlp_only_layers
    step = cfg.int("num_dense_layers", ("decoder_sparse_step",), default=1, minimum=1)
    only = set(cfg.int_list("mlp_only_layers"))
    return sum(1 for i in range(layers) if i not in only and (i + 1) % step == 0)


# ---------------------------------------------------------------------------
# The families
# ---------------------------------------------------------------------------

_NO_WINDOW = dict(local=None, layer_types=False)
# Mistral-style models window every layer when sliding_window is set and
# never read layer_types.
_EVERY_LAYER = dict(local=_always, layer_types=False)

DECODER_FAMILIES: dict[str, dict[str, Any]] = {
    # dense
    "smollm3": dict(flags={**ATTENTION_BIAS, **MLP_BIAS}, local=_smollm3_local),
    "olmo3": dict(local=_olmo3_local),
    "ministral3": dict(flags={}, **_EVERY_LAYER),
    "seed_oss": dict(flags={"qkv_bias": ("attention_bias",),
                            "attention_out_bias": ("attention_out_bias",), **MLP_BIAS},
                     **_NO_WINDOW),
    "glm4": dict(flags=QKV_BIAS, **_NO_WINDOW),
    "gemma": dict(flags={**ATTENTION_BIAS, "bidirectional": ("use_bidirectional_attention",)},
                  **_NO_WINDOW),
    "ernie4_5": dict(flags=USE_BIAS, **_NO_WINDOW),
    "exaone4": dict(flags={}, local=_exaone4_local),
    "cohere2": dict(local=_cohere2_local),
    "apertus": dict(**_NO_WINDOW),
    "arcee": dict(flags={**ATTENTION_BIAS, **MLP_BIAS}, **_NO_WINDOW),
    "starcoder2": dict(flags=USE_BIAS, **_EVERY_LAYER),
    # mixture of experts
    "olmoe": dict(moe="all", experts_width="intermediate_size", **_NO_WINDOW),
    "minimax_m2": dict(flags={}, moe="all", experts_width="intermediate_size", **_NO_WINDOW),
    # sparsemixer routes each token to its top 2, whatever num_experts_per_tok says
    "phimoe": dict(flags={**ATTENTION_BIAS, "lm_head_bias": ("lm_head_bias",)}, moe="all",
                   experts_width="intermediate_size", experts_per_token=2, **_EVERY_LAYER),
    # Ernie4_5_MoeForCausalLM's lm_head is biased with use_bias too
    "ernie4_5_moe": dict(flags={**USE_BIAS, "lm_head_bias": ("use_bias",)}, moe=_ernie_moe_layer,
                         shared_experts=("moe_num_shared_experts",), **_NO_WINDOW),
    # the shared_mlp has the experts' width: intermediate_size
    "hunyuan_v1_moe": dict(moe="all", experts_width="intermediate_size",
                           shared_width=("intermediate_size",), **_NO_WINDOW),
    "dots1": dict(local=_dots1_local, moe="first_k_dense"),
    "afmoe": dict(local=_afmoe_local, moe=_afmoe_moe_layer,
                  shared_experts=("num_shared_experts",)),
}
