"""The shipped full-size presets: load, resolve, and match transformers."""
from __future__ import annotations

import json

import pytest
import torch

from mfu_tracker.flops import transformer_flops
from mfu_tracker.presets import load_preset, preset_names, resolve_model_config

transformers = pytest.importorskip("transformers")

# Parameter counts of the transformers models built from each preset
# (model.num_parameters(), the same as the hub model cards' totals).
EXPECTED = {
    # wte 50,257*768 + wpe 1,024*768 + 12 * (12*768^2 + 13*768) + ln_f 2*768
    "gpt2": 124_439_808,
    "llama-3.1-8b": 8_030_261_248,
    "llama-3.1-70b": 70_553_706_496,
    "llama-3.1-405b": 405_853_388_800,
    "mistral-7b": 7_241_732_096,
    "mixtral-8x7b": 46_702_792_704,
    "qwen2.5-7b": 7_615_616_512,
    # the 7,615,616,512-parameter language model + a 676,550,144-parameter
    # vision tower (32 blocks of 1,280): the hub card's 8.29 B
    "qwen2.5-vl-7b": 8_292_166_656,
}


def test_every_required_preset_is_shipped():
    assert set(EXPECTED) <= set(preset_names())


@pytest.mark.parametrize("name", preset_names())
def test_preset_matches_meta_model(name):
    cfg = load_preset(name)
    assert isinstance(cfg, dict) and cfg["model_type"]
    conf = transformers.AutoConfig.for_model(**cfg)
    auto = (transformers.AutoModelForImageTextToText if "vision_config" in cfg
            else transformers.AutoModelForCausalLM)
    with torch.device("meta"):
        model = auto.from_config(conf)
    real = sum(p.numel() for p in model.parameters())
    assert real == EXPECTED[name]
    assert transformer_flops(cfg, seq_len=128).num_params == real


@pytest.mark.parametrize("name", preset_names())
def test_resolve_by_name_and_path(name, tmp_path):
    cfg = load_preset(name)
    assert resolve_model_config(name) == cfg
    assert resolve_model_config(name.upper()) == cfg
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    assert resolve_model_config(str(path)) == cfg
    assert resolve_model_config(path) == cfg
    assert resolve_model_config(tmp_path) == cfg  # a directory with config.json


def test_load_preset_returns_a_copy():
    a = load_preset("gpt2")
    a["n_layer"] = 1
    assert load_preset("gpt2")["n_layer"] == 12


def test_hub_ids_resolve():
    assert load_preset("meta-llama/Llama-3.1-8B")["hidden_size"] == 4096
    assert load_preset("mistralai/Mistral-7B-v0.1")["sliding_window"] == 4096


def test_preset_facts():
    # spot checks against the hub config.json files
    assert load_preset("llama-3.1-405b")["num_hidden_layers"] == 126
    assert load_preset("llama-3.1-70b")["num_attention_heads"] == 64
    assert load_preset("qwen2.5-7b")["num_key_value_heads"] == 4
    assert load_preset("mixtral-8x7b")["num_local_experts"] == 8
    assert load_preset("mistral-7b")["vocab_size"] == 32000  # v0.1
    assert load_preset("gpt2")["n_positions"] == 1024


def test_errors():
    with pytest.raises(KeyError, match="available"):
        load_preset("llama-9")
    with pytest.raises(TypeError):
        load_preset(3)
    with pytest.raises(ValueError, match="neither a preset"):
        resolve_model_config("no-such-org/no-such-model")
    with pytest.raises(ValueError, match="neither a preset"):
        resolve_model_config("no-such-model")
    with pytest.raises(TypeError):
        resolve_model_config(None)


def test_resolve_rejects_bad_json(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="JSON"):
        resolve_model_config(str(bad))
    bad.write_text("[1, 2]")
    with pytest.raises(ValueError, match="object"):
        resolve_model_config(str(bad))
