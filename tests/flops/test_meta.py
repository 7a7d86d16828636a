"""The exact meta-device count of one step (mfu_tracker/flops/_meta.py),
against FlopCounterMode on the real tiny model run on the CPU."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from mfu_tracker.flops import _meta  # noqa: E402

S = 16
FIELDS = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
              intermediate_size=96, vocab_size=128, bos_token_id=1, eos_token_id=2,
              pad_token_id=0)
# forward by hand, per layer: q, o 64x64 + k, v 64x32 = 12,288 weights and
# the SwiGLU MLP 3x64x96 = 18,432, each 2 FLOPs x 16 tokens; attention
# QK^T + AV 4 x 16^2 x 4 heads x 16 = 65,536. Two layers, then the lm_head
# 2 x 16 x 64 x 128 = 262,144.
ATTENTION = 4 * S * S * 4 * 16
FORWARD = 2 * (2 * S * (12_288 + 18_432) + ATTENTION) + 2 * S * 64 * 128


def _config():
    return transformers.AutoConfig.for_model("stablelm", **FIELDS)


def test_a_step_on_meta_is_the_cpu_steps_flop_counter_mode_count():
    _meta.clear_caches()
    step = _meta.step_flops(_meta.exact_config(_config()), S, "full")
    assert step.forward_flops == FORWARD == 2_359_296
    assert step.model_flops == 3 * FORWARD  # every weight trains
    assert step.model_class == "StableLmForCausalLM" and step.heavy_uncounted == ()
    assert step.recipe == str(_meta.RECIPES[0])
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(_config(), attn_implementation="eager")
    assert step.num_params == sum(p.numel() for p in model.parameters())
    assert step.num_embedding_params == 128 * 64
    with FlopCounterMode(display=False) as mode:
        model(input_ids=torch.zeros(1, S, dtype=torch.long)).logits.sum().backward()
    assert step.model_flops == mode.get_total_flops()


def test_steps_are_cached_per_length_and_convention():
    cfg = _meta.exact_config(_config())
    full = _meta.step_flops(cfg, S, "full")
    assert _meta.step_flops(cfg, S, "full") is full
    assert _meta.cached_step((cfg.key, S, "full")) is full
    half = _meta.step_flops(cfg, S, "half")
    # half of each layer's attention, forward and its 2x backward
    assert full.model_flops - half.model_flops == 3 * 2 * ATTENTION // 2
    _meta.clear_caches()
    assert _meta.cached_step((cfg.key, S, "full")) is None


def test_configs_transformers_cannot_build_are_one_line_errors():
    with pytest.raises(_meta.MetaCountError, match="no model_type"):
        _meta.exact_config({"hidden_size": 64})
    with pytest.raises(_meta.MetaCountError, match="not a transformers config"):
        _meta.exact_config(object())
    assert issubclass(_meta.MetaCountError, ValueError)
    # a dict is read as transformers reads it; the user's object is copied, not touched
    config = _config()
    cfg = _meta.exact_config(config)
    assert cfg.hf_config is not config and cfg.model_type == "stablelm" and not cfg.has_tower
    assert _meta.exact_config(dict(FIELDS, model_type="stablelm")).model_type == "stablelm"
