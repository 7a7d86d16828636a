"""The attention of a KV cache, op by op, against torch's FlopCounterMode:
SDPA with fewer queries than keys (a decode step: 1 query against the
cache), SDPA's is_causal with a cache, eager attention's matmuls, and what
transformers passes to SDPA while it generates.

FlopCounterMode counts SDPA only on its math path (the CPU flash kernel has
no formula there: docs/flops.md lists the difference), so the comparisons run
under ``sdpa_kernel(SDPBackend.MATH)``; our counter counts the CPU flash
kernel the same (the default backend's lines).
"""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from mfu_tracker import FlopCounter, GenerationCounter, generation_flops  # noqa: E402

F = torch.nn.functional
SMALL = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
             intermediate_size=96, vocab_size=128, pad_token_id=0, eos_token_id=1,
             bos_token_id=2)


def _counts(fn, causal_attention: str = "full") -> tuple[int, int]:
    """(FlopCounterMode's total, our model FLOPs) of one call."""
    with FlopCounterMode(display=False) as reference:
        fn()
    with FlopCounter(causal_attention=causal_attention) as ours:
        fn()
    return reference.get_total_flops(), ours.model_flops


@pytest.mark.parametrize("backend", [SDPBackend.MATH, None])
def test_one_query_against_the_cache(backend):
    """A decode step: q [2, 4, 1, 16] against 9 cached keys, is_causal False
    (what transformers passes for one query): 4 x b 2 x h 4 x 1 x 9 x 16."""
    q, k, v = torch.randn(2, 4, 1, 16), torch.randn(2, 4, 9, 16), torch.randn(2, 4, 9, 16)

    def call():
        F.scaled_dot_product_attention(q, k, v)

    if backend is None:  # the CPU flash kernel: FlopCounterMode has no formula (0)
        reference, ours = _counts(call)
        assert (reference, ours) == (0, 4 * 2 * 4 * 1 * 9 * 16)
        return
    with sdpa_kernel(backend):
        reference, ours = _counts(call)
    assert reference == ours == 4 * 2 * 4 * 1 * 9 * 16


def test_causal_flag_with_more_keys_than_queries():
    """is_causal with 3 queries and 8 keys: torch aligns the mask top-left
    (query i sees keys 0..i), which a cache never wants -- transformers passes
    is_causal only when queries and keys are the same tokens (below). Under
    "full" the counter charges the call's rectangle as FlopCounterMode does;
    under "half", Megatron's half of it, whatever the alignment."""
    q, k, v = torch.randn(2, 4, 3, 16), torch.randn(2, 4, 8, 16), torch.randn(2, 4, 8, 16)

    def call():
        F.scaled_dot_product_attention(q, k, v, is_causal=True)

    with sdpa_kernel(SDPBackend.MATH):
        reference, full = _counts(call)
        _, half = _counts(call, "half")
    assert reference == full == 4 * 2 * 4 * 3 * 8 * 16
    assert half == full // 2


def _model(attention: str, family: str = "llama", **over):
    torch.manual_seed(0)
    cfg = transformers.AutoConfig.for_model(family, **{**SMALL, **over})
    cfg._attn_implementation = attention
    return transformers.AutoModelForCausalLM.from_config(cfg).eval()


def _generate(m, prompt: int = 6, new: int = 5, batch: int = 2):
    ids = torch.randint(3, 100, (batch, prompt), generator=torch.Generator().manual_seed(1))
    m.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new,
               min_new_tokens=new, do_sample=False)


@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_generate_equals_flop_counter_mode(attention):
    """A whole generate() -- prefill, then 4 decode steps on the cache --
    counted by FlopCounterMode (eager: its matmuls; SDPA: its math path), by
    GenerationCounter, and analytically: three equal totals."""
    m = _model(attention)
    with sdpa_kernel(SDPBackend.MATH):
        with FlopCounterMode(display=False) as reference:
            _generate(m)
        with GenerationCounter(m) as gen:
            _generate(m)
    analytic = generation_flops(m.config, [6, 6], 5)
    assert reference.get_total_flops() == gen.model_flops == analytic.model_flops
    assert gen.prefill_flops == analytic.prefill_flops


def test_generation_counter_equals_a_plain_counter():
    """The split adds up to what one FlopCounter around the block counts."""
    m = _model("sdpa")
    with FlopCounter() as plain:
        _generate(m)
    with GenerationCounter(m) as gen:
        _generate(m)
    assert gen.prefill_flops + gen.decode_flops == plain.model_flops
    assert gen.counter.model_flops == plain.model_flops


def test_what_transformers_passes_to_sdpa(monkeypatch):
    """While generating: is_causal only on calls whose queries are the keys
    (the prefill, q_len == kv_len); every decode call has one query per
    sequence (a GQA group packed, at most), is_causal False, and as many keys
    as the cache holds with the new token."""
    calls = []
    real = F.scaled_dot_product_attention

    def spy(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, **kwargs):
        calls.append((q.shape[-2], k.shape[-2], bool(is_causal)))
        return real(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal,
                    **kwargs)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", spy)
    _generate(_model("sdpa"))
    prefill, decode = calls[:2], calls[2:]
    assert prefill == [(6, 6, True)] * 2
    assert [keys for _, keys, _ in decode] == [7, 7, 8, 8, 9, 9, 10, 10]
    assert all(not causal and queries <= 2 for queries, _, causal in decode)


def test_sliding_decode_keys_are_the_window(monkeypatch):
    """mistral, window 8: decode calls see min(P + t, 8) keys, as
    generation_flops charges."""
    m = _model("sdpa", "mistral", sliding_window=8)
    calls = []
    real = F.scaled_dot_product_attention

    def spy(q, k, v, *args, **kwargs):
        calls.append(k.shape[-2])
        return real(q, k, v, *args, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", spy)
    _generate(m, batch=1)
    assert calls[2:] == [7, 7, 8, 8, 8, 8, 8, 8]
