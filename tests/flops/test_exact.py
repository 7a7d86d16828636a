"""The exact count's route and batch (mfu_tracker/flops/_exact.py): a packed
batch is the sum of its sequences, the arguments it cannot honour are
named, and analytic configs are left to the formula."""
from __future__ import annotations

import pytest

transformers = pytest.importorskip("transformers")

from mfu_tracker.flops import _exact, _meta  # noqa: E402
from mfu_tracker.flops._hf_config import ConfigDims  # noqa: E402

STABLELM = dict(model_type="stablelm", hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, intermediate_size=96, vocab_size=128, bos_token_id=1,
                eos_token_id=2, pad_token_id=0)
LLAMA = dict(model_type="llama", hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
             intermediate_size=128, vocab_size=100)


def test_a_packed_batch_is_its_lengths_counted_once_each():
    cfg = _meta.exact_config(STABLELM)
    one_8, one_16 = (_meta.step_flops(cfg, n, "full") for n in (8, 16))
    f = _exact.exact_transformer_flops(STABLELM, lengths=[16, 8, 16], source="seq_lens",
                                       causal="full")
    assert f.model_flops == 2 * one_16.model_flops + one_8.model_flops
    assert f.forward_flops == 2 * one_16.forward_flops + one_8.forward_flops
    assert f.num_tokens == 40 and f.flops_per_token == f.model_flops / 40
    assert f.attention_flops is None and f.num_active_params is None
    assert f.conventions["formula"] == "exact" and f.conventions["exact"]["device"] == "meta"
    assert f.language_flops == f.model_flops and f.vision_flops == 0
    assert "no analytic formula for model_type 'stablelm'" in f.conventions_str


def test_the_route_counts_a_type_without_a_formula_and_leaves_the_rest():
    assert _exact.exact_route(LLAMA, None, None, {}, {}) is None
    assert isinstance(_exact.counting_config(LLAMA), ConfigDims)
    assert isinstance(_exact.counting_config(STABLELM), _meta.ExactConfig)
    count = _exact.exact_route(STABLELM, None, None, {}, {})
    f = count(None, 1, None, [0, 8, 24], None, None, None, None, None, None)  # cu_seqlens
    direct = _exact.exact_transformer_flops(STABLELM, lengths=[8, 16], source="cu_seqlens",
                                            causal="full")
    assert f.model_flops == direct.model_flops and f.conventions["sequences"] == "cu_seqlens"
    # formula="exact" takes a type with a formula down the same route
    assert _exact.exact_route(LLAMA, "exact", None, {}, {}) is not None


def test_what_the_built_model_cannot_show_is_refused_by_name():
    with pytest.raises(ValueError, match="include_lm_head=False needs the analytic formula"):
        _exact.check_exact_arguments("stablelm", {"include_lm_head": False}, {})
    with pytest.raises(ValueError, match="formula='palm'"):
        _exact.check_exact_arguments("stablelm", {"formula": "palm"}, {})
    with pytest.raises(ValueError, match="convention= and context_parallel="):
        _exact.check_exact_arguments("stablelm", {"convention": "megatron"}, {})
    with pytest.raises(TypeError, match="hidden_size"):
        _exact.check_exact_arguments("stablelm", {}, {"hidden_size": 64})
    _exact.check_exact_arguments("stablelm", {"include_lm_head": True}, {"num_mtp_layers": 0})
    with pytest.raises(ValueError, match="image_sizes needs pixel_values"):
        _exact.exact_images(STABLELM, None, None, [[32, 32]])
    assert _exact.exact_images(STABLELM, None, None) is None
    with pytest.raises(ValueError, match="no vision tower"):
        _exact.exact_transformer_flops(STABLELM, lengths=[8], source="seq_len", causal="full",
                                       images=_exact.exact_images(STABLELM, (1, 3, 8, 8), None))
