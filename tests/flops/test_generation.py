"""generation_flops (mfu_tracker/flops/_generation.py): prefill and decode
FLOPs and bytes of a tiny Llama, checked by hand arithmetic."""
from __future__ import annotations

import pytest

from mfu_tracker.flops._generation import GenerationFlops, generation_flops

# h=64, 2 layers, 4 heads of 16, 2 KV heads, SwiGLU 128, vocab 100, untied
LLAMA = dict(model_type="llama", hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, intermediate_size=128, vocab_size=100,
             tie_word_embeddings=False)
# per layer: q,o 64*64 each + k,v 64*32 each = 12,288; MLP 3*64*128 = 24,576;
# two norms 128 -> 36,992; x2 layers = 73,984; + final norm 64 = 74,048
BODY = 74_048
LM_HEAD = 64 * 100  # 6,400
KV_BYTES_PER_TOKEN = 2 * 2 * 32 * 2  # layers x (K, V) x kv width 32 x bf16 = 256


def test_the_6n_count_of_a_ragged_batch_by_hand():
    # prompts 4 and 6 tokens; outputs 3 and 1 tokens
    g = generation_flops(LLAMA, [4, 6], [3, 1], formula="6n")
    assert isinstance(g, GenerationFlops)
    # lm_head on each sequence's last prompt token only: 10*2*74,048 + 2*2*6,400
    assert g.prefill_flops == 10 * 2 * BODY + 2 * 2 * LM_HEAD == 1_506_560
    # seq 0 decodes its tokens 2 and 3 (two forwards), seq 1 none
    assert (g.decode_tokens, g.decode_forwards, g.generated_tokens) == (2, 2, 4)
    assert g.decode_flops == 2 * 2 * (BODY + LM_HEAD) == 321_792
    assert g.model_flops == g.prefill_flops + g.decode_flops
    assert g.prefill_attention_flops == g.decode_attention_flops == 0  # 6n: no attention term
    # weights (embedding table aside) read once per forward, bf16
    assert g.prefill_weight_bytes == 2 * (BODY + LM_HEAD)
    assert g.decode_weight_bytes == 2 * 2 * (BODY + LM_HEAD)
    assert g.prefill_kv_write_bytes == 10 * KV_BYTES_PER_TOKEN
    assert g.decode_kv_write_bytes == 2 * KV_BYTES_PER_TOKEN
    # decode step 1 attends to 4 cached + itself = 5 keys, step 2 to 6
    assert g.decode_kv_read_bytes == (5 + 6) * KV_BYTES_PER_TOKEN
    assert g.decode_bytes == g.decode_weight_bytes + g.decode_kv_read_bytes + \
        g.decode_kv_write_bytes + g.decode_state_bytes


def test_an_int_output_len_applies_to_every_prompt_and_counts_add():
    one = generation_flops(LLAMA, [4, 4], 2, formula="6n")
    assert one.decode_tokens == 2 and one.decode_forwards == 1
    both = one + one
    assert both.decode_forwards == 2 and both.prefill_flops == 2 * one.prefill_flops
    other = generation_flops(LLAMA, [4, 4], 2, formula="matmul")
    with pytest.raises(ValueError, match="different conventions"):
        one + other


def test_a_float8_cache_halves_the_cache_bytes_only():
    bf16 = generation_flops(LLAMA, [8], [4])
    fp8 = generation_flops(LLAMA, [8], [4], cache_dtype="fp8")
    assert fp8.decode_kv_read_bytes == bf16.decode_kv_read_bytes / 2
    assert fp8.decode_weight_bytes == bf16.decode_weight_bytes
    assert fp8.conventions["cache_dtype"] != bf16.conventions["cache_dtype"]


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="prompt_lens and output_lens"):
        generation_flops(LLAMA, [4])
    with pytest.raises(TypeError, match="prompt_lens must be a sequence of ints"):
        generation_flops(LLAMA, 4, 2)
    with pytest.raises(TypeError, match="output_lens must hold ints"):
        generation_flops(LLAMA, [4], [2.5])
    with pytest.raises(ValueError, match="formula"):
        generation_flops(LLAMA, [4], [2], formula="7n")
    with pytest.raises(ValueError, match="no analytic formula"):
        generation_flops(dict(model_type="stablelm", hidden_size=64), [4], [2])
