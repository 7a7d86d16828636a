"""Generation counted two ways: ``generate()`` under GenerationCounter (the
exact op count, prefill apart from decode) against ``generation_flops``
(analytic), on six families built small from their configs (no hub): dense
(llama), GQA with q/k norms (qwen3), sliding windows (mistral, gemma3_text;
gemma2 on eager attention), MoE (qwen3_moe), MLA (deepseek_v3: a latent
cache re-expanded every step) and a hybrid (qwen3_next: gated DeltaNet
layers beside attention).

Every generation is greedy with min_new_tokens = max_new_tokens, so the
lengths are known. Prompts of P = 6 tokens against windows of 8: the prefill
sees the whole prompt, and decode crosses the window (the cache holds 10
tokens at the end). The bytes are checked against the real model's
parameters and the real cache's tensors after the generation.
"""
from __future__ import annotations

import functools

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from mfu_tracker import GenerationCounter, generation_flops  # noqa: E402

SMALL = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
             intermediate_size=96, vocab_size=128, pad_token_id=0, eos_token_id=1,
             bos_token_id=2)
MOE = dict(num_experts_per_tok=2, moe_intermediate_size=32)
FAMILIES = {
    "llama": dict(),
    "qwen3": dict(head_dim=16),
    "mistral": dict(sliding_window=8),
    "gemma3_text": dict(sliding_window=8, head_dim=16),
    "qwen3_moe": dict(num_experts=4, **MOE, head_dim=16),
    "deepseek_v3": dict(num_key_value_heads=4, kv_lora_rank=16, qk_rope_head_dim=8,
                        qk_nope_head_dim=16, v_head_dim=16, n_routed_experts=4, **MOE,
                        first_k_dense_replace=1, num_hidden_layers=3, q_lora_rank=24,
                        n_shared_experts=1, n_group=1, topk_group=1),
    "qwen3_next": dict(head_dim=16, linear_key_head_dim=8, linear_value_head_dim=12,
                       linear_num_key_heads=2, linear_num_value_heads=4, num_hidden_layers=4,
                       num_experts=4, **MOE, shared_expert_intermediate_size=48),
    "gemma2": dict(sliding_window=8, head_dim=16),  # no SDPA in transformers: eager
}
P, N, B = 6, 5, 2


@functools.lru_cache(maxsize=None)
def model(family: str):
    torch.manual_seed(0)
    cfg = transformers.AutoConfig.for_model(family, **{**SMALL, **FAMILIES[family]})
    cfg._attn_implementation = "eager" if family == "gemma2" else "sdpa"
    return transformers.AutoModelForCausalLM.from_config(cfg).eval()


def generate(m, prompts: int, new: int, batch: int = 1, **kwargs):
    ids = torch.randint(3, 100, (batch, prompts), generator=torch.Generator().manual_seed(1))
    return m.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new,
                      min_new_tokens=new, do_sample=False, **kwargs)


def counted(family: str, prompts: int = P, new: int = N, batch: int = B, **kwargs):
    m = model(family)
    with GenerationCounter(m, **kwargs) as gen:
        out = generate(m, prompts, new, batch)
    assert out.shape == (batch, prompts + new)
    return gen.count


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_analytic_equals_the_exact_count(family):
    """Prefill and decode apart, to the FLOP."""
    exact = counted(family)
    analytic = generation_flops(model(family).config, [P] * B, N)
    assert exact.prefill_flops == analytic.prefill_flops
    assert exact.decode_flops == analytic.decode_flops
    assert exact.prefill_forwards == 1 and exact.decode_forwards == N - 1
    assert analytic.decode_forwards == N - 1
    assert exact.prefill_tokens == analytic.prefill_tokens == B * P
    assert exact.decode_tokens == analytic.decode_tokens == B * (N - 1)
    assert exact.generated_tokens == analytic.generated_tokens == B * N


def test_llama_by_hand():
    """d 64, 2 layers, 4 heads of 16 (2 KV heads), SwiGLU 96, vocab 128."""
    weights = 2 * (64 * 64 + 2 * 64 * 32 + 64 * 64 + 3 * 64 * 96)  # 2 x 30,720 matmul weights
    head = 128 * 64
    pair = 2 * 4 * (16 + 16) * 2  # QK^T and AV over 4 heads, 2 layers
    g = generation_flops(model("llama").config, [P], N)
    assert g.prefill_flops == 2 * weights * P + pair * P * P + 2 * head
    keys = sum(P + t for t in range(1, N))  # 7 + 8 + 9 + 10
    assert g.decode_flops == (N - 1) * 2 * (weights + head) + pair * keys
    assert g.decode_attention_flops == pair * keys


def test_ragged_prompts_add_up():
    """Two generate() calls in one counter (5 -> 3 tokens, 9 -> 6) equal one
    analytic count of both; the analytic decodes them in lockstep (5
    forwards), the two calls ran 2 + 5."""
    m = model("qwen3_next")
    with GenerationCounter(m) as gen:
        generate(m, 5, 3)
        generate(m, 9, 6)
    both = generation_flops(m.config, [5, 9], [3, 6])
    assert gen.prefill_flops == both.prefill_flops
    assert gen.decode_flops == both.decode_flops
    assert gen.decode_forwards == 7 and both.decode_forwards == 5
    assert gen.prefill_forwards == 2


def test_deltanet_prefill_over_two_chunks():
    """70 prompt tokens: two chunks of 64 of the gated-DeltaNet scan."""
    exact = counted("qwen3_next", prompts=70, new=3, batch=1)
    analytic = generation_flops(model("qwen3_next").config, [70], [3])
    assert (exact.prefill_flops, exact.decode_flops) == (analytic.prefill_flops,
                                                         analytic.decode_flops)


@pytest.mark.parametrize("family", ["mistral", "gemma3_text"])
def test_prompt_beyond_the_window(family):
    """P = 12 > w = 8: transformers' SDPA computes the whole 12 x 12 square
    under the window's mask, which the counter cannot read (it counts the
    call); the analytic count charges each query its window, s * min(s, w).
    The difference is exactly the masked pairs; decode agrees."""
    exact = counted(family, prompts=12, new=4, batch=1)
    analytic = generation_flops(model(family).config, [12], 4)
    # both layers slide; 2 x 4 heads x (16 + 16) FLOPs per pair and layer
    assert exact.prefill_flops - analytic.prefill_flops == 2 * 256 * (12 * 12 - 12 * 8)
    assert exact.decode_flops == analytic.decode_flops


def test_half_convention_halves_the_prefill_square_only():
    exact = counted("llama", causal_attention="half")
    analytic = generation_flops(model("llama").config, [P] * B, N, causal_attention="half")
    full = generation_flops(model("llama").config, [P] * B, N)
    assert (exact.prefill_flops, exact.decode_flops) == (analytic.prefill_flops,
                                                         analytic.decode_flops)
    assert full.prefill_flops - analytic.prefill_flops == B * 512 * P * P / 2  # 2 layers x 256
    assert full.decode_flops == analytic.decode_flops


def _cache(family: str):
    out = generate(model(family), P, N, B, return_dict_in_generate=True)
    return out.past_key_values


def _kv_elements_per_token(cache) -> list[float]:
    """Each attention layer's cached elements per token and sequence."""
    out = []
    for layer in cache.layers:
        keys = getattr(layer, "keys", None)
        if keys is not None and keys.numel():
            out.append((keys.numel() + layer.values.numel()) / (keys.shape[0] * keys.shape[2]))
    return out


@pytest.mark.parametrize("family,dtype,size", [("llama", "bf16", 2), ("deepseek_v3", "fp8", 1)])
def test_kv_bytes_match_the_real_cache(family, dtype, size):
    """The bytes written per token are the cache's own tensors: llama 2 x 2
    heads x 16; DeepSeek-V3's latent, kv_lora_rank 16 + rope 8, in one layer
    of transformers' cache."""
    per_token = _kv_elements_per_token(_cache(family))
    g = generation_flops(model(family).config, [P] * B, N, dtype=dtype)
    assert g.decode_kv_write_bytes == B * (N - 1) * sum(per_token) * size
    assert g.prefill_kv_write_bytes == B * P * sum(per_token) * size
    # every decode token reads the cache up to itself: 7 + 8 + 9 + 10 per sequence
    assert g.decode_kv_read_bytes == B * sum(P + t for t in range(1, N)) * sum(per_token) * size
    if family == "deepseek_v3":
        assert per_token == [16 + 8] * 3
        expanded = generation_flops(model(family).config, [P] * B, N, dtype=dtype,
                                    mla_cache="expanded")
        assert expanded.decode_kv_write_bytes == B * (N - 1) * 3 * 4 * (16 + 8 + 16)


def test_sliding_cache_reads_the_window():
    """mistral: a sliding layer's cache keeps w - 1 = 7 tokens; each decode
    token reads min(P + t, 8) keys: 7, 8, 8, 8."""
    cache = _cache("mistral")
    assert {layer.keys.shape[2] for layer in cache.layers} == {7}
    g = generation_flops(model("mistral").config, [P] * B, N)
    assert g.decode_kv_read_bytes == B * (7 + 8 + 8 + 8) * 2 * (2 * 2 * 16) * 2


def test_deltanet_state_bytes_match_the_real_state():
    """qwen3_next's 3 linear layers keep a recurrent state of 4 x 8 x 12 per
    sequence: read and written per decode token."""
    m = model("qwen3_next")
    cache = _cache("qwen3_next")
    states = [cache.get_recurrent_state(i) for i, kind in enumerate(m.config.layer_types)
              if kind == "linear_attention"]
    per_sequence = sum(s.numel() for s in states) / B
    assert per_sequence == 3 * 4 * 8 * 12
    g = generation_flops(m.config, [P] * B, N, cache_dtype="fp32")
    assert g.decode_state_bytes == 2 * B * (N - 1) * per_sequence * 4
    assert g.prefill_state_bytes == B * per_sequence * 4


def _numel(module) -> int:
    return sum(p.numel() for p in module.parameters())


def test_weight_bytes_are_the_parameters_but_the_embedding():
    m = model("llama")
    g = generation_flops(m.config, [P] * B, N, dtype="fp32")
    per_forward = _numel(m) - m.model.embed_tokens.weight.numel()
    assert g.decode_weight_bytes == (N - 1) * per_forward * 4
    assert g.prefill_weight_bytes == per_forward * 4


def test_moe_reads_the_experts_its_tokens_pick():
    """qwen3_moe, 4 experts, 2 per token: one sequence reads 2 per layer and
    forward; two sequences (4 picks) may reach all 4 (vLLM's min(T k, E))."""
    m = model("qwen3_moe")
    experts = [layer.mlp.experts for layer in m.model.layers]
    one_expert = sum(_numel(e) for e in experts) / 4
    rest = _numel(m) - m.model.embed_tokens.weight.numel() - 4 * one_expert
    one = generation_flops(m.config, [P], N, dtype="bf16")
    two = generation_flops(m.config, [P] * 2, N, dtype="bf16")
    assert one.decode_weight_bytes == (N - 1) * (rest + 2 * one_expert) * 2
    assert two.decode_weight_bytes == (N - 1) * (rest + 4 * one_expert) * 2


def test_times_split_at_the_forwards():
    """Each forward's time runs to the next forward's start: a decode forward
    made to take 50 ms books >= 4 x 50 ms to decode, the prefill's forward
    (and its first token) to prefill; both inside the test's own bracket."""
    import time

    from _bracket import Bracket

    m = model("llama")

    def slow(module, args, kwargs):
        if kwargs["input_ids"].shape[1] == 1:
            time.sleep(0.05)

    with Bracket() as bracket, GenerationCounter(m) as gen:
        handle = m.register_forward_pre_hook(slow, with_kwargs=True)  # after the counter's
        try:
            generate(m, P, N, 1)
        finally:
            handle.remove()
    assert gen.decode_s >= (N - 1) * 0.05 and gen.prefill_s > 0
    assert gen.prefill_s + gen.decode_s <= bracket.s
