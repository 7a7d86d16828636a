"""TransformerFlops (mfu_tracker/flops/_result.py): the result's one-line
form, its immutability, and the formulas it names."""
from __future__ import annotations

import dataclasses
import types

import pytest

from mfu_tracker import transformer_flops
from mfu_tracker.flops._result import FORMULAS, TransformerFlops


def _result(**over):
    fields = dict(model_flops=6.0e12, hardware_flops=8.0e12, forward_flops=2.0e12,
                  attention_flops=0.0, flops_per_token=3.0e9, num_tokens=2000, num_params=5,
                  num_embedding_params=0, num_active_params=5, num_adapter_params=0,
                  conventions=types.MappingProxyType({}), conventions_str="by hand")
    fields.update(over)
    return TransformerFlops(**fields)


def test_str_reads_per_token_tokens_and_totals():
    # 3.0e9 / 1e9 = 3.00 GFLOP/token; 2,000 tokens; 6e12 and 8e12 at 4 significant digits
    assert str(_result()) == ("3.00 GFLOP/token x 2,000 tokens = 6e+12 model FLOPs "
                              "(8e+12 hardware); by hand")


def test_it_is_frozen_and_language_vision_default_as_documented():
    result = _result()
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.model_flops = 0.0
    assert (result.language_flops, result.vision_flops, result.scan_flops) == (0.0, 0.0, 0.0)


def test_the_formulas_are_the_ones_transformer_flops_takes():
    assert FORMULAS == ("6n", "palm", "matmul")
    dims = dict(model_type="llama", hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                intermediate_size=128, vocab_size=100)
    for formula in FORMULAS:
        result = transformer_flops(dims, seq_len=8, formula=formula)
        assert type(result) is TransformerFlops and result.conventions["formula"] == formula
        assert result.flops_per_token == result.model_flops / result.num_tokens
    with pytest.raises(ValueError, match="formula"):
        transformer_flops(dims, seq_len=8, formula="7n")
