"""A generation's figures (decode MBU first, prefill MFU first) against a
declared peak, and generation_flops' arguments: what it refuses, how counts
add, what its conventions say. No model runs here: the dims are keywords.
"""
from __future__ import annotations

import warnings

import pytest

from mfu_tracker import (
    GenerationCount,
    GenerationCounter,
    generation_flops,
    generation_utilization,
    user_gpu_spec,
)
from mfu_tracker.timing import _generation

# d 64, 2 layers, 4 heads (2 KV heads) of 16, SwiGLU 96, vocab 128
DIMS = dict(hidden_size=64, num_layers=2, num_heads=4, num_kv_heads=2, intermediate_size=96,
            vocab_size=128)
# a CPU with a declared peak: 2 TFLOP/s, 0.1 TB/s
SPEC = user_gpu_spec(2.0, name="test cpu", memory_bandwidth_tbs=0.1)


@pytest.fixture(autouse=True)
def _fresh_warnings():
    _generation._warned.clear()
    yield
    _generation._warned.clear()


def test_decode_mbu_is_bytes_over_bandwidth():
    g = generation_flops(None, [6, 6], 5, **DIMS)
    u = generation_utilization(g, prefill_s=0.5, decode_s=2.0, spec=SPEC)
    assert u.decode_mbu == pytest.approx(g.decode_bytes / 2.0 / 0.1e12, rel=1e-12)
    assert u.decode_mfu == pytest.approx(g.decode_flops / 2.0 / 2e12, rel=1e-12)
    assert u.prefill_mfu == pytest.approx(g.prefill_flops / 0.5 / 2e12, rel=1e-12)
    assert u.prefill_mbu == pytest.approx(g.prefill_bytes / 0.5 / 0.1e12, rel=1e-12)
    assert u.mbu == pytest.approx((g.prefill_bytes + g.decode_bytes) / 2.5 / 0.1e12, rel=1e-12)
    assert u.decode_tokens_per_sec == pytest.approx(8 / 2.0)
    assert u.prefill_tokens_per_sec == pytest.approx(12 / 0.5)
    # two devices: half the share each
    two = generation_utilization(g, prefill_s=0.5, decode_s=2.0, spec=SPEC, num_gpus=2)
    assert two.decode_mbu == pytest.approx(u.decode_mbu / 2, rel=1e-12)
    text = str(u)
    assert text.index("decode: MBU") < text.index("MFU") < text.index("prefill: MFU") \
        < text.rindex("MBU")


def test_decode_bytes_by_hand():
    """bf16: weights 2 x (4,096 + 2 x 2,048 + 4,096 + 18,432 + norms 128) + final
    norm 64 + lm_head 8,192 = 69,952 parameters per forward; 4 decode forwards. K and V of 2 heads
    x 16 per layer and token: 64 elements; each of 2 sequences reads 7 + 8 + 9 +
    10 tokens' and writes 4."""
    g = generation_flops(None, [6, 6], 5, **DIMS)
    assert g.decode_weight_bytes == 4 * 69_952 * 2
    assert g.decode_kv_read_bytes == 2 * (7 + 8 + 9 + 10) * 2 * 64 * 2
    assert g.decode_kv_write_bytes == 2 * 4 * 2 * 64 * 2
    assert g.decode_bytes == g.decode_weight_bytes + g.decode_kv_read_bytes + \
        g.decode_kv_write_bytes


def test_above_one_warns_once_and_is_not_clamped():
    g = generation_flops(None, [6], 5, **DIMS)
    slow_memory = user_gpu_spec(2.0, memory_bandwidth_tbs=1e-9)  # 1 kB/s
    with pytest.warns(RuntimeWarning, match="decode MBU .* > 1"):
        u = generation_utilization(g, decode_s=1.0, spec=slow_memory)
    assert u.decode_mbu == pytest.approx(g.decode_bytes / 1e3, rel=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        generation_utilization(g, decode_s=1.0, spec=slow_memory)


def test_unknown_bandwidth_or_bytes_is_none_not_zero():
    g = generation_flops(None, [6], 5, **DIMS)
    no_bandwidth = generation_utilization(g, decode_s=1.0, spec=user_gpu_spec(2.0))
    assert no_bandwidth.decode_mbu is None and no_bandwidth.decode_mfu is not None
    count = GenerationCount(prefill_flops=10, decode_flops=20, prefill_forwards=1,
                            decode_forwards=4, prefill_tokens=6, decode_tokens=4,
                            generated_tokens=5, prefill_s=0.1, decode_s=0.4)
    exact = generation_utilization(count, spec=SPEC)  # the count's own times
    assert exact.decode_mbu is None and exact.prefill_mbu is None
    assert exact.decode_mfu == pytest.approx(20 / 0.4 / 2e12)
    assert exact.prefill_s == 0.1
    both = generation_utilization(count.with_bytes(g), spec=SPEC)  # exact FLOPs, our bytes
    assert both.decode_mbu == pytest.approx(g.decode_bytes / 0.4 / 0.1e12)
    assert both.decode_mfu == exact.decode_mfu
    with pytest.raises(TypeError, match="with_bytes"):
        count.with_bytes(count)
    untimed = generation_utilization(g, spec=SPEC)
    assert untimed.decode_mbu is None and untimed.mfu is None
    with pytest.raises(ValueError, match="decode_s"):
        generation_utilization(g, decode_s=-1.0, spec=SPEC)


def test_batches_add():
    a = generation_flops(None, [6, 6], 5, **DIMS)
    b = generation_flops(None, [9], 3, **DIMS)
    both = a + b
    assert both.decode_flops == a.decode_flops + b.decode_flops
    assert both.decode_forwards == 4 + 2 and both.sequences == 3
    assert both.decode_bytes == a.decode_bytes + b.decode_bytes
    with pytest.raises(ValueError, match="different conventions"):
        a + generation_flops(None, [9], 3, formula="palm", **DIMS)


def test_formulas_and_conventions():
    matmul = generation_flops(None, [6], 5, **DIMS)
    palm = generation_flops(None, [6], 5, formula="palm", **DIMS)
    six = generation_flops(None, [6], 5, formula="6n", **DIMS)
    # PaLM adds the norms' 2 x 64 + 64 parameters per token; 6N drops attention
    assert palm.decode_flops - matmul.decode_flops == 4 * 2 * (2 * 2 * 64 + 64)
    assert six.decode_attention_flops == 0 and six.decode_flops == 4 * 2 * 69_952
    no_head = generation_flops(None, [6], 5, include_lm_head=False, **DIMS)
    assert matmul.decode_flops - no_head.decode_flops == 4 * 2 * 128 * 64
    assert no_head.decode_weight_bytes == matmul.decode_weight_bytes  # still read
    assert "lm_head on the last prompt token" in matmul.conventions_str
    fp8 = generation_flops(None, [6], 5, dtype="float8_e4m3fn", cache_dtype="bfloat16", **DIMS)
    assert fp8.conventions["weight_dtype"] == "fp8" and fp8.conventions["cache_dtype"] == "bf16"
    assert fp8.decode_weight_bytes == matmul.decode_weight_bytes / 2


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(prompt_lens=[6, 0], output_lens=5), ValueError, "prompt_lens"),
    (dict(prompt_lens=[6], output_lens=[0]), ValueError, "output_lens"),
    (dict(prompt_lens=[6], output_lens=[5, 5]), ValueError, "output_lens: 2 lengths for 1"),
    (dict(prompt_lens=[], output_lens=[]), ValueError, "prompt_lens"),
    (dict(prompt_lens="6", output_lens=5), TypeError, "prompt_lens"),
    (dict(prompt_lens=[6.0], output_lens=5), TypeError, "prompt_lens"),
    (dict(prompt_lens=[6], output_lens=5, mla_cache="paged"), ValueError, "mla_cache"),
    (dict(prompt_lens=[6], output_lens=5, cache_dtype="fp7"), ValueError, "cache_dtype"),
    (dict(prompt_lens=[6], output_lens=5, formula="exact"), ValueError, "formula"),
    (dict(prompt_lens=[6]), TypeError, "output_lens"),
])
def test_bad_arguments_are_named(kwargs, error, match):
    with pytest.raises(error, match=match):
        generation_flops(None, **kwargs, **DIMS)


def test_refused_models_say_what_to_use():
    with pytest.raises(ValueError, match="num_ssm_layers.*GenerationCounter"):
        generation_flops({"model_type": "mamba2", "hidden_size": 64, "num_hidden_layers": 2,
                          "num_heads": 8, "head_dim": 16, "vocab_size": 128, "state_size": 8,
                          "n_groups": 1}, [6], 5)
    with pytest.raises(ValueError, match="'bert' has no analytic formula.*GenerationCounter"):
        generation_flops({"model_type": "bert"}, [6], 5)


def test_generation_counter_takes_a_module():
    with pytest.raises(TypeError, match="torch.nn.Module"):
        GenerationCounter(object())
    with pytest.raises(ValueError, match="causal_attention"):
        GenerationCounter(object(), causal_attention="quarter")
