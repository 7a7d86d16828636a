"""Reading a config for the analytic count (mfu_tracker/flops/_hf_config.py):
the dims a config gives, where each came from, the types it reads, and the
errors that name the missing field."""
from __future__ import annotations

import pytest

from mfu_tracker.flops import _hf_config
from mfu_tracker.flops._hf_config import (
    ConfigDims,
    apply_bias,
    dims_from_config,
    is_supported,
    lora_target_names,
    named_config,
    supported_types,
)

LLAMA = dict(model_type="llama", hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, intermediate_size=128, vocab_size=100)


def test_a_llama_config_gives_its_dims_and_their_sources():
    read = dims_from_config(LLAMA)
    assert isinstance(read, ConfigDims) and read.model_type == "llama" and read.vision is None
    dims = read.dims
    assert (dims["hidden_size"], dims["num_layers"], dims["num_heads"], dims["num_kv_heads"],
            dims["intermediate_size"], dims["vocab_size"]) == (64, 2, 4, 2, 128, 100)
    assert (dims["attention"], dims["mlp"], dims["norm"]) == ("gqa", "swiglu", "rmsnorm")
    assert read.sources["num_layers"] == "config.num_hidden_layers"
    assert read.sources["num_kv_heads"] == "config.num_key_value_heads"


def test_nanogpt_has_no_model_type_and_its_bias_switch():
    read = dims_from_config(dict(n_layer=2, n_embd=64, n_head=4, block_size=32, vocab_size=100,
                                 bias=False))
    assert read.model_type == "nanogpt"
    assert read.dims["norm"] == "layernorm_nobias" and read.dims["qkv_bias"] is False
    dims = {"norm": "layernorm_nobias"}
    apply_bias(dims, True)
    assert dims == {"norm": "layernorm", "qkv_bias": True, "attention_out_bias": True,
                    "mlp_bias": True}


def test_which_types_are_read():
    assert "llama" in supported_types() and "stablelm" not in supported_types()
    assert is_supported(LLAMA) and not is_supported(dict(model_type="stablelm"))
    assert not is_supported({})
    with pytest.raises(ValueError, match="got 'stablelm'; pass explicit dims"):
        dims_from_config(dict(model_type="stablelm"))
    with pytest.raises(ValueError, match="'hidden_size' / 'n_embd' / 'd_model' is missing"):
        dims_from_config(dict(model_type="llama"))


def test_a_preset_name_becomes_its_config_dict():
    config = named_config("gpt2")
    assert isinstance(config, dict) and config["model_type"] == "gpt2"
    assert named_config(LLAMA) is LLAMA  # any other config as given


def test_lora_targets_as_the_core_names_them():
    assert lora_target_names(None, "swiglu", "llama") == ["q", "v"]  # peft's default
    assert lora_target_names(None, "gelu", "gpt2") == ["q", "k", "v"]  # c_attn
    assert lora_target_names("all-linear", "swiglu", "llama") == \
        ["q", "k", "v", "o", "up", "down", "gate"]
    with pytest.raises(ValueError, match="lora_targets"):
        lora_target_names(["not_a_module"], "swiglu", "llama")


def test_counter_notes_name_what_transformers_runs_otherwise():
    notes = _hf_config.counter_notes(dict(model_type="llama4_text"))
    assert len(notes) == 1 and "every expert on every token" in notes[0]
    assert _hf_config.counter_notes(LLAMA) == []
