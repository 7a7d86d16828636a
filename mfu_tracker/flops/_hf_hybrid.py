"""Config readers of the Mamba / convolution hybrids and Kimi Linear's
linear-attention layers, for :mod:`._hf_config`.

Each reader fills the C core's dims (``csrc/core/model/family_hybrid.h``,
``family_mla.h``) from one ``model_type``'s config, with that config class's
defaults (transformers 5.24) wherever a key is absent, and its layer layout:

* granitemoehybrid: ``layer_types`` (Mamba-2 or attention), a shared MLP on
  every layer plus ``num_local_experts`` experts of ``intermediate_size``;
* nemotron_h: ``layers_block_type`` (or the older ``hybrid_override_pattern``
  string, ``M`` / ``*`` / ``-`` / ``E``): one-norm blocks, each a Mamba-2,
  attention, MLP or MoE block;
* falcon_h1: attention and Mamba-2 side by side in every layer;
* jamba: attention every ``attn_layer_period`` layers (at the offset), else
  Mamba-1; experts every ``expert_layer_period`` layers;
* lfm2: ``layer_types`` (or ``full_attn_idxs``): attention or a short
  convolution; the MLP width as ``Lfm2MLP`` adjusts it.

``cfg`` is ``_hf_config._Config`` (duck-typed here, so this module does not
import it).
"""
from __future__ import annotations

import math
from typing import Any

# The config classes' defaults (transformers 5.24) of the keys the shared
# reader (_hf_config.py) reads, for dict configs that leave them out; each
# default sits on the last key of the reader's chain for its field.
_MLA = dict(kv_lora_rank=512, qk_rope_head_dim=64)
_QWEN3_5 = dict(head_dim=256, linear_conv_kernel_dim=4, linear_key_head_dim=128,
                linear_value_head_dim=128, linear_num_key_heads=16, linear_num_value_heads=32)
DEFAULTS: dict[str, dict[str, int]] = {
    # Qwen3_5TextConfig, Qwen3_5MoeTextConfig (over Qwen3NextConfig)
    "qwen3_5": dict(_QWEN3_5, num_key_value_heads=4),
    "qwen3_5_moe": dict(_QWEN3_5, num_key_value_heads=2, n_routed_experts=256,
                        num_experts_per_token=8, moe_intermediate_size=512,
                        shared_expert_intermediate_size=512),
    # DeepseekV2Config
    "deepseek_v2": dict(_MLA, q_lora_rank=1536, qk_nope_head_dim=128, v_head_dim=128,
                        n_routed_experts=64, moe_intermediate_size=1407, num_shared_experts=2),
    # Glm4MoeLiteConfig
    "glm4_moe_lite": dict(_MLA, q_lora_rank=768, qk_nope_head_dim=192, v_head_dim=256,
                          n_routed_experts=64, num_experts_per_token=4,
                          moe_intermediate_size=1536, num_shared_experts=1),
    # KimiLinearConfig (q_lora_rank None: a direct q_proj)
    "kimi_linear": dict(_MLA, qk_nope_head_dim=128, v_head_dim=128, n_routed_experts=256,
                        num_experts_per_token=8, moe_intermediate_size=1024,
                        num_shared_experts=1),
}

_ATTENTION_TYPES = ("full_attention", "attention")
_MAMBA_TYPES = ("linear_attention", "mamba")


def _bad_type(cfg: Any, key: str, value: Any, allowed: tuple[str, ...]) -> ValueError:
    return ValueError(f"{cfg.prefix}.{key} has layer type {value!r}; this family's layers are "
                      f"{', '.join(repr(a) for a in allowed)}")


def _types(cfg: Any, keys: tuple[str, ...], default: list[str]) -> tuple[str, list[str]]:
    """The first of ``keys`` holding a list of layer types, else ``default``."""
    for key in keys:
        listed = cfg.str_list(key)
        if listed is not None:
            return key, listed
    return keys[0], default


def _base(cfg: Any, dims: dict[str, Any], num_layers: int | None = None) -> None:
    dims.update(hidden_size=cfg.require("hidden_size"), vocab_size=cfg.require("vocab_size"),
                num_layers=num_layers if num_layers is not None else cfg.require("num_layers"))


def _attention(cfg: Any, dims: dict[str, Any], kv_default: int | None = None) -> None:
    """GQA heads; ``head_dim`` where the config sets one (else d / heads)."""
    heads = cfg.require("num_heads", ("num_attention_heads",))
    dims["num_heads"] = heads
    dims["num_kv_heads"] = cfg.int("num_kv_heads", ("num_key_value_heads",),
                                   default=kv_default or heads, minimum=1)
    head_dim = cfg.int("head_dim", ("head_dim",), minimum=1)
    if head_dim is not None:
        dims["head_dim"] = head_dim


def _mamba2(cfg: Any, dims: dict[str, Any], keys: dict[str, tuple[tuple[str, ...], int]],
            inner: int) -> None:
    """Mamba-2 dims from ``keys`` (field -> (config keys, class default)); a
    head dim of "auto" is ``inner`` / heads."""
    for field, (names, default) in keys.items():
        if field == "ssm_head_dim" and cfg.get(names[0]) == "auto":
            dims[field] = inner // dims["ssm_num_heads"]
            continue
        dims[field] = cfg.int(field, names, default=default, minimum=1)


def _bamba_mixer(cfg: Any, dims: dict[str, Any], inner: int) -> None:
    """The Mamba-2 keys Granite 4 and Falcon-H1 share (BambaMixer's), with
    their class defaults; an absent head dim is "auto"."""
    _mamba2(cfg, dims, {"ssm_num_heads": (("mamba_n_heads",), 128),
                        "ssm_head_dim": (("mamba_d_head",), 0),
                        "ssm_state_size": (("mamba_d_state",), 256),
                        "ssm_num_groups": (("mamba_n_groups",), 1),
                        "ssm_conv_kernel": (("mamba_d_conv",), 4),
                        "ssm_chunk_size": (("mamba_chunk_size",), 256)}, inner)
    if not dims["ssm_head_dim"]:
        dims["ssm_head_dim"] = inner // dims["ssm_num_heads"]


def _flags(cfg: Any, dims: dict[str, Any], flags: dict[str, tuple[str, bool]]) -> None:
    for field, (key, default) in flags.items():
        dims[field] = cfg.flag(key, default)
        if cfg.has(key):
            cfg.sources[field] = f"{cfg.prefix}.{key}"


def granitemoehybrid(cfg: Any, dims: dict[str, Any]) -> None:
    """GraniteMoeHybridConfig (transformers granitemoehybrid)."""
    _base(cfg, dims)
    layers = dims["num_layers"]
    key, types = _types(cfg, ("layer_types", "layers_block_type"), [_MAMBA_TYPES[0]] * layers)
    types = types[:layers]
    for value in types:
        if value not in _ATTENTION_TYPES + _MAMBA_TYPES:
            raise _bad_type(cfg, key, value, _ATTENTION_TYPES + _MAMBA_TYPES)
    dims["num_ssm_layers"] = sum(t in _MAMBA_TYPES for t in types)
    _attention(cfg, dims)
    inner = cfg.int("mamba_expand", ("mamba_expand",), default=2) * dims["hidden_size"]
    _bamba_mixer(cfg, dims, inner)
    _flags(cfg, dims, {"qkv_bias": ("attention_bias", False),
                       "attention_out_bias": ("attention_bias", False),
                       "ssm_conv_bias": ("mamba_conv_bias", True),
                       "ssm_proj_bias": ("mamba_proj_bias", False),
                       "ssm_out_proj_bias": ("mamba_proj_bias", False)})
    # shared_mlp on every layer; with experts it is their shared expert
    shared = cfg.require("shared_expert_intermediate_size", ("shared_intermediate_size",))
    experts = cfg.int("num_experts", ("num_local_experts",), default=8)
    if experts:
        dims.update(num_experts=experts, num_dense_layers=0, intermediate_size=0,
                    experts_per_token=cfg.int("experts_per_token", ("num_experts_per_tok",),
                                              default=2, minimum=1),
                    moe_intermediate_size=cfg.require("moe_intermediate_size",
                                                      ("intermediate_size",)),
                    shared_expert_intermediate_size=shared)
    else:
        dims["intermediate_size"] = shared


_NEMOTRON_PATTERN = {"M": "linear_attention", "*": "full_attention", "-": "mlp", "E": "moe"}
_NEMOTRON_TYPES = ("linear_attention", "full_attention", "mlp", "moe", "mamba", "attention")


def _nemotron_types(cfg: Any) -> tuple[str, list[str]]:
    key, types = _types(cfg, ("layers_block_type", "layer_types"), [])
    if not types and isinstance(cfg.get("hybrid_override_pattern"), str):
        key, pattern = "hybrid_override_pattern", cfg.get("hybrid_override_pattern")
        for char in pattern:
            if char not in _NEMOTRON_PATTERN:
                raise _bad_type(cfg, key, char, tuple(_NEMOTRON_PATTERN))
        types = [_NEMOTRON_PATTERN[c] for c in pattern]
    elif not types:  # NemotronHConfig's default
        types = ["linear_attention", "moe", "full_attention", "mlp"]
    for value in types:
        if value not in _NEMOTRON_TYPES:
            raise _bad_type(cfg, key, value, _NEMOTRON_TYPES[:4])
    return key, types


def nemotron_h(cfg: Any, dims: dict[str, Any]) -> None:
    """NemotronHConfig (transformers nemotron_h): the blocks' count is the
    layer list's length (num_hidden_layers is derived from it)."""
    _, types = _nemotron_types(cfg)
    count = {kind: sum(t == kind or t == legacy for t in types)
             for kind, legacy in (("linear_attention", "mamba"), ("full_attention", "attention"),
                                  ("mlp", "mlp"), ("moe", "moe"))}
    _base(cfg, dims, len(types))
    dims.update(num_ssm_layers=count["linear_attention"],
                num_mixer_only_layers=count["linear_attention"] + count["full_attention"],
                num_mlp_only_layers=count["mlp"] + count["moe"])
    _attention(cfg, dims, kv_default=8)
    dims.setdefault("head_dim", cfg.int("head_dim", ("head_dim",), default=128))
    heads = cfg.int("ssm_num_heads", ("mamba_num_heads",), default=128)
    dims["ssm_num_heads"] = heads
    _mamba2(cfg, dims, {"ssm_head_dim": (("mamba_head_dim",), 64),
                        "ssm_state_size": (("ssm_state_size",), 128),
                        # NemotronHConfig takes the older mamba_* keys first
                        "ssm_num_groups": (("mamba_n_groups", "n_groups"), 8),
                        "ssm_conv_kernel": (("mamba_d_conv", "conv_kernel"), 4),
                        "ssm_chunk_size": (("mamba_chunk_size", "chunk_size"), 128)}, 0)
    conv_bias = "mamba_conv_bias" if cfg.has("mamba_conv_bias") else "use_conv_bias"
    _flags(cfg, dims, {"ssm_conv_bias": (conv_bias, True), "ssm_proj_bias": ("use_bias", False),
                       "ssm_out_proj_bias": ("use_bias", False), "mlp_bias": ("mlp_bias", False)})
    if count["mlp"]:
        dims["intermediate_size"] = cfg.int("intermediate_size", ("intermediate_size",),
                                            default=21504, minimum=1)
    if count["moe"]:
        dims.update(num_experts=cfg.int("num_experts", ("n_routed_experts", "num_local_experts"),
                                        default=8, minimum=1),
                    experts_per_token=cfg.int("experts_per_token", ("num_experts_per_tok",),
                                              default=2, minimum=1),
                    moe_intermediate_size=cfg.int("moe_intermediate_size",
                                                  ("moe_intermediate_size",), default=7688,
                                                  minimum=1),
                    shared_expert_intermediate_size=cfg.int(
                        "shared_expert_intermediate_size",
                        ("moe_shared_expert_intermediate_size",), default=7688),
                    moe_latent_size=cfg.int("moe_latent_size", ("moe_latent_size",), default=0),
                    num_dense_layers=count["mlp"])


def falcon_h1(cfg: Any, dims: dict[str, Any]) -> None:
    """FalconH1Config (transformers falcon_h1): every layer runs attention and
    a Mamba-2 mixer side by side (the row's ssm_parallel), then an MLP."""
    _base(cfg, dims)
    _attention(cfg, dims, kv_default=8)
    # the mixer's width: mamba_d_ssm (1024 when absent), mamba_expand * d when None
    present, d_ssm = cfg.raw("mamba_d_ssm")
    inner = cfg.int("ssm_intermediate_size", ("mamba_d_ssm",), minimum=1) if d_ssm is not None \
        else (1024 if not present else None)
    if inner is None:
        inner = cfg.int("mamba_expand", ("mamba_expand",), default=2) * dims["hidden_size"]
    _bamba_mixer(cfg, dims, inner)
    dims["num_ssm_layers"] = dims["num_layers"]
    dims["intermediate_size"] = cfg.require("intermediate_size", ("intermediate_size",))
    _flags(cfg, dims, {"qkv_bias": ("attention_bias", False),
                       "attention_out_bias": ("attention_bias", False),
                       "mlp_bias": ("mlp_bias", False),
                       "ssm_conv_bias": ("mamba_conv_bias", True),
                       "ssm_proj_bias": ("mamba_proj_bias", False),
                       "ssm_out_proj_bias": ("projectors_bias", False),
                       "ssm_norm": ("mamba_rms_norm", False)})


def jamba(cfg: Any, dims: dict[str, Any]) -> None:
    """JambaConfig (transformers jamba): layer i is attention when
    i % attn_layer_period == attn_layer_offset, else Mamba-1; its MLP has
    experts when i % expert_layer_period == expert_layer_offset (and
    num_experts > 1)."""
    _base(cfg, dims)
    layers, hidden = dims["num_layers"], dims["hidden_size"]
    period = cfg.int("num_ssm_layers", ("attn_layer_period",), default=8, minimum=1)
    offset = cfg.int("num_ssm_layers", ("attn_layer_offset",), default=4)
    dims["num_ssm_layers"] = sum(1 for i in range(layers) if i % period != offset)
    _attention(cfg, dims, kv_default=8)
    rank = cfg.get("mamba_dt_rank", "auto")
    dims.update(ssm_intermediate_size=cfg.int("ssm_intermediate_size", ("mamba_expand",),
                                              default=2, minimum=1) * hidden,
                ssm_state_size=cfg.int("ssm_state_size", ("mamba_d_state",), default=16,
                                       minimum=1),
                ssm_dt_rank=math.ceil(hidden / 16) if rank == "auto" else
                cfg.int("ssm_dt_rank", ("mamba_dt_rank",), minimum=1),
                ssm_conv_kernel=cfg.int("ssm_conv_kernel", ("mamba_d_conv",), default=4,
                                        minimum=1))
    _flags(cfg, dims, {"ssm_conv_bias": ("mamba_conv_bias", True),
                       "ssm_proj_bias": ("mamba_proj_bias", False),
                       "ssm_out_proj_bias": ("mamba_proj_bias", False)})
    width = cfg.require("intermediate_size", ("intermediate_size",))
    experts = cfg.int("num_experts", ("num_experts",), default=16, minimum=1)
    period = cfg.int("num_dense_layers", ("expert_layer_period",), default=2, minimum=1)
    offset = cfg.int("num_dense_layers", ("expert_layer_offset",), default=1)
    moe = sum(1 for i in range(layers) if i % period == offset) if experts > 1 else 0
    dims["intermediate_size"] = width if moe < layers else 0
    if moe:
        dims.update(num_experts=experts, num_dense_layers=layers - moe,
                    experts_per_token=cfg.int("experts_per_token", ("num_experts_per_tok",),
                                              default=2, minimum=1),
                    moe_intermediate_size=width)


def lfm2(cfg: Any, dims: dict[str, Any]) -> None:
    """Lfm2Config (transformers lfm2): attention or a short convolution per
    ``layer_types`` (else attention on ``full_attn_idxs``, by default every
    layer), and Lfm2MLP's adjusted width."""
    _base(cfg, dims)
    layers = dims["num_layers"]
    attention = cfg.int_list("full_attn_idxs") if cfg.has("full_attn_idxs") else range(layers)
    key, types = _types(cfg, ("layer_types",),
                        ["full_attention" if i in attention else "conv" for i in range(layers)])
    for value in types[:layers]:
        if value not in ("full_attention", "conv"):
            raise _bad_type(cfg, key, value, ("full_attention", "conv"))
    dims["num_short_conv_layers"] = types[:layers].count("conv")
    _attention(cfg, dims, kv_default=8)
    dims["short_conv_kernel"] = cfg.int("short_conv_kernel", ("conv_L_cache",), default=3,
                                        minimum=1)
    _flags(cfg, dims, {"short_conv_bias": ("conv_bias", False)})
    if not cfg.has("tie_word_embeddings") and cfg.has("tie_embedding"):
        dims["tie_word_embeddings"] = cfg.flag("tie_embedding")
    dims["intermediate_size"] = _lfm2_width(cfg)


def _lfm2_width(cfg: Any) -> int:
    """Lfm2MLP's w1 / w3 width: 2/3 of intermediate_size (block_ff_dim), times
    block_ffn_dim_multiplier, rounded up to block_multiple_of."""
    width = cfg.require("intermediate_size", ("intermediate_size", "block_ff_dim"))
    if not cfg.flag("block_auto_adjust_ff_dim", True):
        return width
    width = int(2 * width / 3)
    present, multiplier = cfg.raw("block_ffn_dim_multiplier")
    multiplier = multiplier if present else 1.0  # the class default; None: no multiplier
    if multiplier is not None:
        if isinstance(multiplier, bool) or not isinstance(multiplier, (int, float)):
            raise TypeError(f"{cfg.prefix}.block_ffn_dim_multiplier must be a number, "
                            f"not {type(multiplier).__name__}")
        multiple = cfg.int("intermediate_size", ("block_multiple_of",), default=256, minimum=1)
        width = int(multiplier * width)
        width = multiple * ((width + multiple - 1) // multiple)
    return width


def kimi_linear_local(cfg: Any, i: int) -> bool:
    """Kimi Linear without ``layer_types``: KDA except the 1-based
    ``linear_attn_config.full_attn_layers`` (KimiLinearConfig), else except
    every 4th layer from layer 4 (0-based)."""
    linear = cfg.sub("linear_attn_config")
    full = linear.int_list("full_attn_layers") if linear is not None else []
    if full:
        return i + 1 not in full
    return not (i and i % 4 == 0)


def kimi_linear_dims(cfg: Any, dims: dict[str, Any]) -> None:
    """KDA heads and conv kernel: linear_num_heads / linear_head_dim /
    linear_conv_kernel_dim, or a hub config's nested linear_attn_config."""
    linear = cfg.sub("linear_attn_config")
    for source, prefix in ((cfg, "linear_"), (linear, "")):
        if source is None:
            continue
        heads = source.int("linear_num_key_heads", (f"{prefix}num_heads",), minimum=1)
        dim = source.int("linear_key_head_dim", (f"{prefix}head_dim",), minimum=1)
        kernel = source.int("linear_conv_kernel", ("linear_conv_kernel_dim",) if prefix
                            else ("short_conv_kernel_size",), minimum=1)
        if heads is not None and dim is not None:
            dims.update(linear_num_key_heads=heads, linear_num_value_heads=heads,
                        linear_key_head_dim=dim, linear_value_head_dim=dim,
                        linear_conv_kernel=kernel if kernel is not None else 4)
            return
    # KimiLinearConfig's defaults
    dims.update(linear_num_key_heads=32, linear_num_value_heads=32, linear_key_head_dim=128,
                linear_value_head_dim=128, linear_conv_kernel=4)
