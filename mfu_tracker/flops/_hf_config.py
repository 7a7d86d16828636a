"""A HuggingFace model config (a dict or an attribute-style object, as
transformers 4 or 5 saves it) read into the C core's model dimensions, for
:func:`mfu_tracker.transformer_flops`.

What each ``model_type`` is built from (a Gemma layer has four norms, Qwen2
biases q/k/v, gpt-oss has sinks) is the C core's family table
(``csrc/core/model/families.c``, read through ``_C.transformer_family``); this
module only reads the numbers: which config keys hold each dimension (the
tables below, transformers' attribute maps resolved both ways: a saved
transformers 5 qwen3_moe config holds ``num_local_experts``, a 4.x one
``num_experts``), how layers split into full / sliding / chunked /
linear-attention layers and dense / MoE layers, a VLM's ``text_config`` and
``vision_config``, and the LoRA target names peft uses.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from .._native import _C
from .._validate import (
    check_choice,
    check_flag,
    check_given,
    check_int_list,
    check_str_list,
    check_whole_number,
)
from ._hf_decoders import (
    ATTENTION_BIAS as _ATTENTION_BIAS,
    DECODER_FAMILIES,
    MLP_BIAS as _MLP_BIAS,
    QKV_BIAS as _QKV_BIAS,
    SSM_BIAS as _SSM_BIAS,
    moe_layers,
)
from . import _hf_hybrid
from ._hf_vlm import COMPOSITES, tile_vision_dims, tower_kind
from .presets import resolve_model_config

# dims field -> config keys holding it, first present wins.
KEYS: dict[str, tuple[str, ...]] = {
    "hidden_size": ("hidden_size", "n_embd", "d_model"),
    "num_layers": ("num_hidden_layers", "n_layer", "num_layers"),
    "num_heads": ("num_attention_heads", "n_head"),
    "num_kv_heads": ("num_key_value_heads",),
    "head_dim": ("head_dim",),
    "intermediate_size": ("intermediate_size", "n_inner"),
    "vocab_size": ("vocab_size",),
    "num_positions": ("n_positions", "max_position_embeddings", "block_size"),
    "num_experts": ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts"),
    "experts_per_token": ("num_experts_per_tok", "num_experts_per_token", "moe_k", "moe_topk"),
    "moe_intermediate_size": ("moe_intermediate_size",),
    "shared_expert_intermediate_size": ("shared_expert_intermediate_size",),
    "sliding_window": ("sliding_window",),
    "attention_chunk_size": ("attention_chunk_size",),
    "q_lora_rank": ("q_lora_rank",),
    "kv_lora_rank": ("kv_lora_rank",),
    "qk_nope_head_dim": ("qk_nope_head_dim",),
    "qk_rope_head_dim": ("qk_rope_head_dim",),
    "v_head_dim": ("v_head_dim",),
    "linear_num_key_heads": ("linear_num_key_heads",),
    "linear_key_head_dim": ("linear_key_head_dim",),
    "linear_num_value_heads": ("linear_num_value_heads",),
    "linear_value_head_dim": ("linear_value_head_dim",),
    "linear_conv_kernel": ("linear_conv_kernel_dim",),
    "ssm_num_heads": ("num_heads",),
    "ssm_head_dim": ("head_dim",),
    "ssm_state_size": ("state_size",),
    "ssm_num_groups": ("n_groups",),
    "ssm_conv_kernel": ("conv_kernel",),
    "ssm_chunk_size": ("chunk_size",),
    "num_mtp_layers": ("num_nextn_predict_layers", "num_mtp_layers", "mtp_num_hidden_layers"),
}

# Vision tower dims field -> config keys (vision_config).
VISION_KEYS: dict[str, tuple[str, ...]] = {
    "depth": ("depth", "num_hidden_layers"),
    "hidden_size": ("hidden_size", "embed_dim"),
    "intermediate_size": ("intermediate_size",),
    "num_heads": ("num_heads", "num_attention_heads"),
    "in_channels": ("in_channels", "in_chans"),
    "patch_size": ("patch_size",),
    "temporal_patch_size": ("temporal_patch_size",),
    "spatial_merge_size": ("spatial_merge_size",),
    "out_hidden_size": ("out_hidden_size",),
    "window_size": ("window_size",),
    "num_position_embeddings": ("num_position_embeddings",),
}

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
# Config access
# ---------------------------------------------------------------------------

class _Config:
    """Uniform read access to a dict or an attribute-style config; records
    which config key each dims field came from (for error messages)."""

    def __init__(self, config: Any, prefix: str = "config",
                 sources: dict[str, str] | None = None,
                 defaults: Mapping[str, int] | None = None) -> None:
        self._data: Mapping[str, Any] | None = config if isinstance(config, Mapping) else None
        self._obj = None if self._data is not None else config
        self.prefix = prefix
        self.sources: dict[str, str] = {} if sources is None else sources
        # the config class's defaults of keys a dict config may leave out
        self.defaults: Mapping[str, int] = defaults or {}

    @property
    def is_mapping(self) -> bool:
        """Whether the config is a dict (as saved), not an object."""
        return self._data is not None

    @property
    def source(self) -> Any:
        """The config as given (a dict or an object)."""
        return self._data if self._data is not None else self._obj

    def get(self, key: str, default: Any = None) -> Any:
        if self._data is not None:
            value = self._data.get(key, None)
        else:
            try:
                value = getattr(self._obj, key, None)
            except Exception:  # a property that raises: treat as absent
                value = None
        return default if value is None else value

    def has(self, key: str) -> bool:
        return self.get(key) is not None

    def raw(self, key: str) -> tuple[bool, Any]:
        """(present, value): tells a key set to None from an absent one."""
        if self._data is not None:
            return key in self._data, self._data.get(key)
        try:
            return hasattr(self._obj, key), getattr(self._obj, key, None)
        except Exception:  # a property that raises: absent
            return False, None

    def sub(self, key: str) -> "_Config | None":
        value = self.get(key)
        if value is None:
            return None
        return _Config(value, f"{self.prefix}.{key}", self.sources, self.defaults)

    def int(self, field: str, keys: Iterable[str] | None = None, *,
            default: int | None = None, minimum: int = 0) -> int | None:
        """The first present key among ``keys`` (default: KEYS[field])."""
        keys = tuple(keys if keys is not None else KEYS[field])
        for key in keys:
            value = self.get(key)
            if value is not None:
                self.sources[field] = f"{self.prefix}.{key}"
                return check_whole_number(value, f"{self.prefix}.{key}", minimum)
        if not any(self.raw(key)[0] for key in keys):  # all absent: the class's default
            for key in keys:
                if key in self.defaults:
                    return self.defaults[key]
        return default

    def require(self, field: str, keys: Iterable[str] | None = None, minimum: int = 1) -> int:
        keys = tuple(keys if keys is not None else KEYS[field])
        value = self.int(field, keys, minimum=minimum)
        if value is not None:
            return value
        names = " / ".join(repr(k) for k in keys)
        return check_given(value, f"{self.prefix} {names}", f" (needed for {field})")

    def flag(self, key: str, default: bool = False) -> bool:
        value = self.get(key)
        return default if value is None else check_flag(value, f"{self.prefix}.{key}")

    def int_list(self, key: str) -> list[int]:
        value = self.get(key)
        return [] if value is None else check_int_list(value, f"{self.prefix}.{key}")

    def str_list(self, key: str) -> list[str] | None:
        value = self.get(key)
        return None if value is None else check_str_list(value, f"{self.prefix}.{key}")


# ---------------------------------------------------------------------------
# Layer partitions: attention spans and MoE layers
# ---------------------------------------------------------------------------

def _every(n: int) -> Callable[[_Config, int], bool]:
    """Layer i is local when (i + 1) % n != 0 (Gemma 2 / gpt-oss: n = 2)."""
    return lambda cfg, i: bool((i + 1) % n)


def _gemma3_local(cfg: _Config, i: int) -> bool:
    pattern = cfg.int("num_sliding_layers", ("sliding_window_pattern", "_sliding_window_pattern"),
                      default=6, minimum=1)
    return bool((i + 1) % pattern)


def _qwen_local(cfg: _Config, i: int) -> bool:
    """Qwen2 / Qwen3 before layer_types: layers from max_window_layers on."""
    return cfg.flag("use_sliding_window") and i >= cfg.int(
        "num_sliding_layers", ("max_window_layers",), default=0)


def _qwen2_moe_local(cfg: _Config, i: int) -> bool:
    return (cfg.flag("use_sliding_window") and bool((i + 1) % 2)
            and i < cfg.int("num_sliding_layers", ("max_window_layers",), default=0))


def _qwen3_moe_local(cfg: _Config, i: int) -> bool:
    return cfg.flag("use_sliding_window")


def _llama4_local(cfg: _Config, i: int) -> bool:
    """Chunked where RoPE is on (no_rope_layers[i] == 1)."""
    flags = cfg.int_list("no_rope_layers")
    if flags:
        return bool(flags[i]) if i < len(flags) else False
    interval = cfg.int("num_chunked_layers", ("no_rope_layer_interval",), default=4, minimum=1)
    return (i + 1) % interval != 0


def _qwen3_next_linear(cfg: _Config, i: int) -> bool:
    interval = cfg.int("num_linear_layers", ("full_attention_interval",), default=4, minimum=1)
    return bool((i + 1) % interval)


def _always(cfg: _Config, i: int) -> bool:
    return True


_SPAN_TYPES = {"sliding_attention": "num_sliding_layers", "chunked_attention": "num_chunked_layers",
               "linear_attention": "num_linear_layers"}


def _span_layers(cfg: _Config, spec: "_Family", layers: int) -> dict[str, int]:
    """Layer counts by span from ``layer_types`` (transformers 5), else the
    family's rule; a window / chunk the config does not set drops its layers."""
    types = cfg.str_list("layer_types") if spec.layer_types else None
    if types is None:
        kind = "linear_attention" if spec.span == "linear" else (
            "chunked_attention" if spec.span == "chunked" else "sliding_attention")
        types = [kind if spec.local is not None and spec.local(cfg, i) else "full_attention"
                 for i in range(layers)]
    types = types[:layers]
    counts = {field: types.count(name) for name, field in _SPAN_TYPES.items()}
    if not cfg.int("sliding_window", default=0):
        counts["num_sliding_layers"] = 0
    if not cfg.int("attention_chunk_size", default=0):
        counts["num_chunked_layers"] = 0
    return {k: v for k, v in counts.items() if v}


# ---------------------------------------------------------------------------
# Families: how each model_type's config is read
# ---------------------------------------------------------------------------

class _Family(NamedTuple):
    flags: Mapping[str, tuple[str, ...]] = _ATTENTION_BIAS
    local: Callable[[_Config, int], bool] | None = _always  # sliding where True
    span: str = "sliding"       # what `local` layers are: sliding / chunked / linear
    # None, all, qwen, first_k_dense, layer_types, llama4, or a rule
    # (config, layer) -> has experts
    moe: str | Callable[[_Config, int], bool] | None = None
    experts_width: str = "moe_intermediate_size"  # the config key of an expert's width
    layer_types: bool = True    # the model reads config.layer_types
    experts_per_token: int | None = None  # fixed by the implementation
    shared_experts: tuple[str, ...] = ()  # keys: shared experts of the expert width
    shared_width: tuple[str, ...] = KEYS["shared_expert_intermediate_size"]
    defaults: Mapping[str, int] = {}  # config key -> the class default (dicts leave keys out)


FAMILIES: dict[str, _Family] = {
    "gpt2": _Family(flags={}, local=None),
    "llama": _Family(flags={**_ATTENTION_BIAS, **_MLP_BIAS}),
    "mistral": _Family(),
    "mixtral": _Family(moe="all", experts_width="intermediate_size"),
    "phi3": _Family(),
    "qwen2": _Family(flags=_QKV_BIAS, local=_qwen_local),
    "qwen2_moe": _Family(flags=_QKV_BIAS, local=_qwen2_moe_local, moe="qwen"),
    "qwen3": _Family(local=_qwen_local),
    "qwen3_moe": _Family(local=_qwen3_moe_local, moe="qwen"),
    "gemma2": _Family(local=_every(2)),
    "gemma3_text": _Family(flags={**_ATTENTION_BIAS,
                                  "bidirectional": ("use_bidirectional_attention",)},
                           local=_gemma3_local),
    "olmo2": _Family(local=None),
    "gpt_oss": _Family(local=_every(2), moe="all", experts_width="intermediate_size"),
    "deepseek_v3": _Family(local=None, moe="first_k_dense"),
    "glm4_moe": _Family(flags=_QKV_BIAS, local=None, moe="first_k_dense"),
    "llama4_text": _Family(local=_llama4_local, span="chunked", moe="llama4",
                           experts_width="intermediate_size"),
    "qwen3_next": _Family(local=_qwen3_next_linear, span="linear", moe="qwen"),
    "mamba2": _Family(flags=_SSM_BIAS, local=None),
    "qwen2_5_vl": _Family(flags=_QKV_BIAS, local=_qwen_local),
    "qwen3_vl": _Family(local=None),
    **{name: _Family(**spec) for name, spec in DECODER_FAMILIES.items()},
    # Qwen3.5, the MLA family and the hybrids (readers: _hf_hybrid.py)
    "qwen3_5": _Family(local=_qwen3_next_linear, span="linear", moe="qwen",
                       defaults=_hf_hybrid.DEFAULTS["qwen3_5"]),
    "qwen3_5_moe": _Family(local=_qwen3_next_linear, span="linear", moe="qwen",
                           defaults=_hf_hybrid.DEFAULTS["qwen3_5_moe"]),
    "deepseek_v2": _Family(local=None, moe="first_k_dense",
                           defaults=_hf_hybrid.DEFAULTS["deepseek_v2"]),
    "glm4_moe_lite": _Family(local=None, moe="layer_types",
                             defaults=_hf_hybrid.DEFAULTS["glm4_moe_lite"]),
    "kimi_linear": _Family(local=_hf_hybrid.kimi_linear_local, span="linear", moe="layer_types",
                           defaults=_hf_hybrid.DEFAULTS["kimi_linear"]),
    "granitemoehybrid": _Family(flags={}, local=None),
    "nemotron_h": _Family(flags={}, local=None),
    "falcon_h1": _Family(flags={}, local=None),
    "jamba": _Family(flags={}, local=None),
    "lfm2": _Family(flags={}, local=None),
}

# Families whose config layout a reader of _hf_hybrid.py reads whole.
_HYBRID_READERS: dict[str, Callable[[Any, dict[str, Any]], None]] = {
    "granitemoehybrid": _hf_hybrid.granitemoehybrid, "nemotron_h": _hf_hybrid.nemotron_h,
    "falcon_h1": _hf_hybrid.falcon_h1, "jamba": _hf_hybrid.jamba, "lfm2": _hf_hybrid.lfm2,
}

# Other names of a row: the text model of a VLM, the config class's own name.
ALIASES = {"qwen2_5_vl_text": "qwen2_5_vl", "qwen3_vl_text": "qwen3_vl", "llama4": "llama4_text",
           "gemma3": "gemma3_text", "nanogpt": "gpt2",
           "qwen3_5_text": "qwen3_5", "qwen3_5_moe_text": "qwen3_5_moe"}


def supported_types() -> tuple[str, ...]:
    """Every model_type the analytic count reads (the C family table's)."""
    return tuple(_C.transformer_families())


class ConfigDims(NamedTuple):
    """A config read for the C core."""
    dims: dict[str, Any]
    sources: dict[str, str]      # dims field -> config key (for messages)
    vision: dict[str, Any] | None  # the vision tower's dims, or None
    model_type: str
    pinpoints: Any = None  # LLaVA-NeXT's image_grid_pinpoints (anyres tiling)


def is_supported(config: Any) -> bool:
    """Whether :func:`dims_from_config` knows ``config``'s model type (a
    composite VLM's: its tower and its text model's)."""
    try:
        top = _Config(config)
        model_type = _model_type(top)  # raises for a type it does not read
    except (ValueError, TypeError):
        return False
    if _is_composite(top, model_type):
        text = top.sub("text_config")
        return tower_kind(top, model_type) is not None and text is not None and \
            is_supported(text._data if text._data is not None else text._obj)
    return True


# --- composite VLM configs (gemma3, llama4, the llava family): _hf_vlm.py ---

def _is_composite(top: _Config, model_type: str) -> bool:
    return model_type in COMPOSITES and top.has("text_config")


def _composite_dims(top: _Config, model_type: str) -> ConfigDims:
    """The text model by its own family, the tower by the composite's."""
    text = top.sub("text_config")
    kind = tower_kind(top, model_type)
    if kind is None:
        vision = top.sub("vision_config")
        raise ValueError(f"config.vision_config.model_type "
                         f"{vision.get('model_type') if vision else None!r}: no analytic tower "
                         f"formula for it under {model_type!r}")
    inner = _dims_of(text)
    dims = dict(inner.dims)
    dims["tie_word_embeddings"] = top.flag("tie_word_embeddings", dims["tie_word_embeddings"])
    vision = tile_vision_dims(top, kind, dims["hidden_size"])
    return ConfigDims(dims, top.sources, vision, model_type, top.get("image_grid_pinpoints"))
# --- end of composite VLM configs ---


def counter_notes(config: Any) -> list[str]:
    """Where transformers' implementation of ``config``'s family runs other
    FLOPs than the analytic count's (for ``mfu-tracker profile``)."""
    top = _Config(config)
    cfg = top.sub("text_config") or top  # a VLM's language model
    name = ALIASES.get(str(top.get("model_type")), str(top.get("model_type")))
    notes = []
    if name in _HYBRID_READERS and cfg.int("num_mtp_layers", default=0):
        notes.append(f"{name}'s MTP blocks (num_nextn_predict_layers) are counted neither here "
                     "nor by estimate: transformers builds none")
    elif cfg.int("num_mtp_layers", default=0):
        notes.append("transformers builds no MTP layers: the analytic lines leave them out "
                     "(num_mtp_layers=0; estimate counts them)")
    if name == "llama4_text":
        notes.append("transformers' Llama4TextMoe runs every expert on every token (routing by "
                     "zero scores): the count holds num_experts / experts_per_token x the "
                     "experts' FLOPs the analytic count (active experts) charges")
    return notes


def named_config(config: Any) -> Any:
    """A preset name ("llama-3.1-8b") or a ``config.json`` path, read into its
    dict (:func:`mfu_tracker.flops.presets.resolve_model_config`); any other
    config as given. The one place a name becomes a config."""
    if isinstance(config, (str, os.PathLike)):
        return resolve_model_config(config, argument="config")
    return config


def _model_type(cfg: _Config) -> str:
    model_type = cfg.get("model_type")
    if model_type is None and all(cfg.has(k) for k in ("n_layer", "n_embd", "block_size")):
        return "nanogpt"  # nanoGPT's GPTConfig (no model_type)
    check_given(model_type, "config.model_type", " (or pass explicit dims as keywords)")
    known = (*FAMILIES, *ALIASES, *COMPOSITES)
    if model_type in known:
        return model_type
    # the names are too many for one readable line: say where they are listed
    raise ValueError(f"config.model_type must be one of the {len(FAMILIES)} types of "
                     f"mfu_tracker._C.transformer_families() or an alias "
                     f"({', '.join(ALIASES)}), got "
                     f"{model_type!r}; pass explicit dims, or count the model exactly "
                     "(FlopCounter, or profile_flops(model, device='meta'))")


def _gpt2_dims(cfg: _Config, dims: dict[str, Any]) -> None:
    hidden = cfg.require("hidden_size")
    heads = cfg.require("num_heads")
    dims.update(hidden_size=hidden, num_layers=cfg.require("num_layers"), num_heads=heads,
                num_kv_heads=heads, vocab_size=cfg.require("vocab_size"),
                intermediate_size=cfg.int("intermediate_size", ("n_inner",), default=4 * hidden,
                                          minimum=1),
                num_positions=cfg.require("num_positions"))
    if cfg.has("bias"):  # nanoGPT's GPTConfig.bias
        apply_bias(dims, cfg.flag("bias"))
        cfg.sources["norm"] = f"{cfg.prefix}.bias"


def apply_bias(dims: dict[str, Any], bias: bool) -> None:
    """nanoGPT's ``bias`` switch on ``dims``: True, a bias in every Linear and
    LayerNorm, like GPT-2; False, in none (karpathy/nanoGPT model.py at
    3adf61e: GPTConfig.bias, LayerNorm(ndim, bias), nn.Linear(..., bias=
    config.bias)). A LayerNorm without bias is ``norm="layernorm_nobias"``;
    an RMSNorm has none either way."""
    dims.update(qkv_bias=bias, attention_out_bias=bias, mlp_bias=bias)
    if not bias and dims.get("norm") == "layernorm":
        dims["norm"] = "layernorm_nobias"
    elif bias and dims.get("norm") == "layernorm_nobias":
        dims["norm"] = "layernorm"


def _mixer_dims(cfg: _Config, dims: dict[str, Any], name: str) -> None:
    """Attention (GQA / MLA) or SSM widths."""
    if name == "mamba2":
        for field in ("ssm_num_heads", "ssm_head_dim", "ssm_state_size"):
            dims[field] = cfg.require(field)
        # Mamba2Config's defaults: n_groups 1, conv_kernel 4, chunk_size 256
        for field, default in (("ssm_num_groups", 1), ("ssm_conv_kernel", 4), ("ssm_chunk_size", 256)):
            dims[field] = cfg.int(field, minimum=1, default=default)
        dims["num_ssm_layers"] = dims["num_layers"]
        return
    dims["num_heads"] = cfg.require("num_heads")
    if dims.get("attention") == "mla":
        for field in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
            dims[field] = cfg.require(field, minimum=0)
        dims["q_lora_rank"] = cfg.int("q_lora_rank", default=0)
        if name == "kimi_linear":  # its KDA layers
            _hf_hybrid.kimi_linear_dims(cfg, dims)
        return
    dims["num_kv_heads"] = cfg.int("num_kv_heads", default=dims["num_heads"], minimum=1)
    head_dim = cfg.int("head_dim", minimum=1)
    if head_dim is not None:
        dims["head_dim"] = head_dim
    if name == "glm4_moe":
        dims["qk_norm"] = "head" if cfg.flag("use_qk_norm") else "none"
    for field in ("linear_num_key_heads", "linear_key_head_dim", "linear_num_value_heads",
                  "linear_value_head_dim", "linear_conv_kernel"):
        value = cfg.int(field)  # absent: the family's class default, if any
        if value is not None:
            dims[field] = value


def _mlp_dims(cfg: _Config, dims: dict[str, Any], spec: _Family, name: str) -> None:
    layers = dims["num_layers"]
    if dims.get("mlp") == "none":
        return
    experts = cfg.int("num_experts", default=0) if spec.moe else 0
    moe = moe_layers(cfg, spec, layers) if experts else 0
    if not moe:
        dims.update(shared_expert_gate=False, router_bias=False)
    if moe:
        dims.update(num_experts=experts,
                    experts_per_token=spec.experts_per_token or _one_per_model(
                        cfg, "experts_per_token"),
                    moe_intermediate_size=cfg.require("moe_intermediate_size", (spec.experts_width,)),
                    num_dense_layers=layers - moe)
        shared = cfg.int("shared_expert_intermediate_size", spec.shared_width, default=0)
        if spec.shared_experts:  # that many shared experts of the expert width
            shared = cfg.int("shared_expert_intermediate_size", spec.shared_experts,
                             default=0) * dims["moe_intermediate_size"]
        elif spec.moe in ("first_k_dense", "layer_types"):  # n_shared_experts of the expert width
            shared = cfg.int("shared_expert_intermediate_size",
                             ("n_shared_experts", "num_shared_experts"),
                             default=0) * dims["moe_intermediate_size"]
        elif spec.moe == "llama4":
            shared = dims["moe_intermediate_size"]
        if shared:
            dims["shared_expert_intermediate_size"] = shared
        else:
            dims["shared_expert_gate"] = False
    if cfg.get("hidden_act") == "xielu" and not experts:  # ACT2FN's XIELU: alpha_p, alpha_n
        dims["mlp_act_params"] = 2
    dense_key = ("intermediate_size_mlp",) if spec.moe == "llama4" else KEYS["intermediate_size"]
    if layers - moe > 0:
        dims["intermediate_size"] = cfg.require("intermediate_size", dense_key)
    elif moe:
        dims["intermediate_size"] = 0
    else:
        dims["intermediate_size"] = cfg.require("intermediate_size", dense_key)


def _one_per_model(cfg: _Config, field: str) -> int:
    """An int field a config may also give per layer (Hunyuan's moe_topk):
    a per-layer list must hold one value."""
    for key in KEYS[field]:
        value = cfg.get(key)
        if isinstance(value, (list, tuple)):
            values = check_int_list(value, f"{cfg.prefix}.{key}", 1)
            if len(set(values)) != 1:
                raise ValueError(f"{cfg.prefix}.{key} differs between layers ({values}): the "
                                 f"analytic count takes one {field}; count the model exactly "
                                 "instead (FlopCounter, or profile_flops(model, device='meta'))")
            cfg.sources[field] = f"{cfg.prefix}.{key}"
            return values[0]
        if value is not None:
            break
    return cfg.require(field)


def _vision_dims(top: _Config, text: _Config, kind: str) -> dict[str, Any] | None:
    vision = top.sub("vision_config")
    if kind == "none" or vision is None:
        return None
    out: dict[str, Any] = {"kind": kind}
    for field, keys in VISION_KEYS.items():
        value = vision.int(f"vision.{field}", keys)
        if value is not None:
            out[field] = value
    out.setdefault("out_hidden_size", text.require("hidden_size"))
    if kind == "qwen2_5_vl":
        out["num_full_blocks"] = len(vision.int_list("fullatt_block_indexes"))
    else:
        out["num_deepstack_mergers"] = len(vision.int_list("deepstack_visual_indexes"))
        out.pop("window_size", None)
    return out


def dims_from_config(config: Any) -> ConfigDims:
    """Read ``config`` (dict or object, or a preset name or config.json path)
    into the C core's dims."""
    return _dims_of(_Config(named_config(config)))


def _dims_of(top: _Config) -> ConfigDims:
    model_type = _model_type(top)
    if _is_composite(top, model_type):
        return _composite_dims(top, model_type)
    name = ALIASES.get(model_type, model_type)
    spec = FAMILIES[name]
    top.defaults = spec.defaults
    family = dict(_C.transformer_family(name))
    vision_kind = family.pop("vision")
    text = top.sub("text_config") if vision_kind != "none" else None
    cfg = text if text is not None else top
    dims: dict[str, Any] = family
    for field, keys in spec.flags.items():
        for key in keys:
            if cfg.has(key):
                dims[field] = cfg.flag(key)
                cfg.sources[field] = f"{cfg.prefix}.{key}"
                break
    dims["tie_word_embeddings"] = top.flag("tie_word_embeddings", cfg.flag(
        "tie_word_embeddings", dims["tie_word_embeddings"]))
    if name == "gpt2":
        _gpt2_dims(cfg, dims)
    elif name in _HYBRID_READERS:  # no windows; MTP layers transformers builds none of
        _HYBRID_READERS[name](cfg, dims)
    else:
        dims.update(hidden_size=cfg.require("hidden_size"), num_layers=cfg.require("num_layers"),
                    vocab_size=cfg.require("vocab_size"))
        _mixer_dims(cfg, dims, name)
        _mlp_dims(cfg, dims, spec, name)
        if name != "mamba2":  # its layer_types name the SSM layers
            dims.update(_span_layers(cfg, spec, dims["num_layers"]))
        for field in ("sliding_window", "attention_chunk_size"):
            if dims.get(_WINDOWED[field]):
                dims[field] = cfg.require(field)
        if dims.get("bidirectional") and dims.get("num_sliding_layers"):
            dims["sliding_window"] = _bidirectional_window(cfg, dims["sliding_window"])
        dims["num_mtp_layers"] = cfg.int("num_mtp_layers", default=0)
    return ConfigDims(dims, top.sources, _vision_dims(top, cfg, vision_kind), model_type)


_WINDOWED = {"sliding_window": "num_sliding_layers", "attention_chunk_size": "num_chunked_layers"}


def _bidirectional_window(cfg: _Config, saved: int) -> int:
    """The w of a bidirectional sliding layer (keys with |query - key| < w):
    Gemma3TextConfig turns the saved ``sliding_window`` into ``sliding_window
    // 2 + 1`` when it builds (and ``to_dict`` saves the value it came from,
    transformers 5 gemma3/configuration_gemma3.py): a saved dict holds the
    saved value, a built config object the converted one."""
    if cfg.is_mapping or not hasattr(cfg.source, "to_dict"):
        return saved // 2 + 1
    return saved


_ALL_LINEAR = ("all-linear", "all_linear", "all")


def lora_target_names(targets: Any, mlp: str, model_type: str | None) -> list[str]:
    """peft target module names as the C core's target names."""
    if targets is None:
        # peft's defaults: q_proj + v_proj for Llama-style, c_attn for GPT-2.
        return ["q", "k", "v"] if model_type in ("gpt2", "nanogpt") else ["q", "v"]
    if isinstance(targets, str):
        targets = [targets]
    out: list[str] = []
    for name in check_str_list(list(targets) if isinstance(targets, (set, frozenset)) else targets,
                               "lora_targets"):
        key = check_choice(name.strip(), "lora_targets (a module name)",
                           (*sorted(LORA_ALIASES), *_ALL_LINEAR), ignore_case=True)
        if key in _ALL_LINEAR:
            mapped: tuple[str, ...] = ("q", "k", "v", "o", "up", "down") + (
                ("gate",) if mlp == "swiglu" else ())
        else:
            mapped = LORA_ALIASES[key]
        for m in mapped:
            if m not in out:
                out.append(m)
    return out
