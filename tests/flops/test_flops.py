"""FLOPs without a model: the C op formulas, transformer_flops and helpers.

Each expected number has its hand arithmetic beside it. Independent sources:
the seeds' worked examples (Lambda, the 6N explainer, the MI300X LoRA
discussion), transformers models built on the meta device (parameter
counts) and torch.utils.flop_counter.FlopCounterMode (executed FLOPs).
"""
from __future__ import annotations

import pytest
import torch

from mfu_tracker import _C
from mfu_tracker.flops import (
    TransformerFlops,
    flash_attn_flops,
    num_params,
    param_bytes,
    params_flops,
    transformer_flops,
)
from mfu_tracker.presets import load_preset

transformers = pytest.importorskip("transformers")
from torch.utils import flop_counter  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

# Llama-3.1-8B dims: d 4096, L 32, H 32, H_kv 8, Q 128, I 14336, V 128256.
LLAMA8B_N = 8_030_261_248
LLAMA8B_NEMB = 525_336_576  # 128,256 * 4,096


def tiny_llama(**over):
    cfg = dict(model_type="llama", hidden_size=32, num_hidden_layers=2,
               num_attention_heads=4, num_key_value_heads=2,
               intermediate_size=48, vocab_size=50)
    cfg.update(over)
    return cfg


def tiny_gpt2(**over):
    cfg = dict(model_type="gpt2", n_embd=32, n_layer=2, n_head=4, vocab_size=50,
               n_positions=64, bos_token_id=0, eos_token_id=0)
    cfg.update(over)
    return cfg


def tiny_mixtral(**over):
    cfg = tiny_llama(model_type="mixtral", num_local_experts=4,
                     num_experts_per_tok=2)
    cfg.update(over)
    return cfg


def build(cfg, attn="eager", device=None):
    conf = transformers.AutoConfig.for_model(**cfg)
    if device is not None:
        with torch.device(device):
            return transformers.AutoModelForCausalLM.from_config(conf)
    torch.manual_seed(0)
    return transformers.AutoModelForCausalLM.from_config(conf, attn_implementation=attn)


def counted_train_step(model, vocab, batch=2, seq=16):
    """FlopCounterMode's (total, per-op) for one forward + backward."""
    ids = torch.randint(0, vocab, (batch, seq), generator=torch.Generator().manual_seed(1))
    with FlopCounterMode(display=False) as fc:
        model(input_ids=ids, labels=ids).loss.backward()
    per_op = {str(k): v for k, v in fc.get_flop_counts()["Global"].items()}
    return fc.get_total_flops(), per_op


# ---------------------------------------------------------------------------
# C op formulas against FlopCounterMode's own formulas
# ---------------------------------------------------------------------------

def test_mm_family_by_hand():
    assert _C.mm_flop(4, 5, 6) == 240  # 2 * 4 * 6 * 5
    assert _C.addmm_flop(4, 5, 6) == 240  # bias ignored
    assert _C.bmm_flop(3, 4, 5, 6) == 720  # 3 * 240
    assert _C.baddbmm_flop(b=3, m=4, k=5, n=6) == 720
    assert _C.mm_flop(2**31, 2**30, 1) == 2**62  # 2 * 2^31 * 2^30 fits int64


def test_op_overflow_and_invalid():
    with pytest.raises(OverflowError):
        _C.mm_flop(2**31, 2**31, 2**31)  # 2^94
    with pytest.raises(ValueError, match="mm_flop"):
        _C.mm_flop(-1, 2, 3)
    with pytest.raises(TypeError):
        _C.mm_flop(1.5, 2, 3)
    with pytest.raises(ValueError, match="heads_kv"):
        _C.sdpa_flop(1, 8, 3, 4, 4, 2, 2)  # 3 does not divide 8


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (7, 3, 5), (128, 4096, 11008)])
def test_mm_matches_flop_counter(m, k, n):
    assert _C.mm_flop(m, k, n) == flop_counter.mm_flop([m, k], [k, n])
    assert _C.bmm_flop(3, m, k, n) == flop_counter.bmm_flop([3, m, k], [3, k, n])


@pytest.mark.parametrize("shape", [
    (2, 8, 8, 16, 16, 64, 64),   # MHA
    (2, 8, 2, 16, 16, 64, 64),   # GQA 4:1
    (1, 4, 1, 3, 7, 32, 48),     # MQA, s_q != s_kv, d_qk != d_v
])
def test_sdpa_matches_flop_counter(shape):
    b, h, hkv, sq, skv, dqk, dv = shape
    q, k, v = (b, h, sq, dqk), (b, hkv, skv, dqk), (b, hkv, skv, dv)
    assert _C.sdpa_flop(*shape) == flop_counter.sdpa_flop_count(q, k, v)
    assert _C.sdpa_backward_flop(*shape) == flop_counter.sdpa_backward_flop_count(
        (b, h, sq, dv), q, k, v)
    # half is exactly half of full
    assert 2 * _C.sdpa_flop(*shape, causal_attention="half") == _C.sdpa_flop(*shape)


def test_sdpa_by_hand():
    # 2*2*8*16*16*64 (QK^T) + same (AV) = 524,288 + 524,288
    assert _C.sdpa_flop(2, 8, 2, 16, 16, 64, 64) == 1_048_576
    # backward executed: 2*2*8*16*16*(3*64 + 2*64) = 8,192 * 320 = 2.5x forward
    assert _C.sdpa_backward_flop(2, 8, 2, 16, 16, 64, 64) == 2_621_440


def test_varlen_sums_sequences():
    # lengths 3, 5, 0, 2; h 4, h_kv 2, d 8: 2*4*(9+25+0+4)*8*2 = 4,864
    cu = [0, 3, 8, 8, 10]
    assert _C.varlen_attention_flop(cu, None, 4, 2, 8, 8) == 4864
    per_seq = sum(_C.sdpa_flop(1, 4, 2, s, s, 8, 8) for s in (3, 5, 0, 2))
    assert per_seq == 4864
    # backward executed: 2*4*38*(3*8 + 2*8) = 12,160
    assert _C.varlen_attention_flop(cu, cu, 4, 2, 8, 8, backward=True) == 12160
    assert _C.varlen_attention_flop(cu, None, 4, 2, 8, 8,
                                    causal_attention="half") == 2432
    with pytest.raises(ValueError, match="cu_seqlens"):
        _C.varlen_attention_flop([0, 5, 3], None, 4, 2, 8, 8)
    with pytest.raises(ValueError, match="cu_seqlens_k"):
        _C.varlen_attention_flop([0, 5], [0, 1, 2], 4, 2, 8, 8)


@pytest.mark.parametrize("transposed,groups", [(False, 1), (False, 2), (True, 1), (True, 2)])
def test_convolution_matches_flop_counter(transposed, groups):
    """Forward and input-grad match FlopCounterMode exactly; the weight grad
    matches it with groups=1, and is FlopCounterMode's / groups with the true
    groups (FlopCounterMode ignores groups there: a documented deviation)."""
    torch.manual_seed(0)
    cls = torch.nn.ConvTranspose2d if transposed else torch.nn.Conv2d
    conv = cls(4, 6, kernel_size=3, stride=2, padding=1, groups=groups)
    x = torch.randn(2, 4, 9, 9, requires_grad=True)
    with FlopCounterMode(display=False) as fc:
        y = conv(x)
    fwd = fc.get_total_flops()
    with FlopCounterMode(display=False) as fc:
        y.sum().backward()
    bwd = fc.get_total_flops()

    xs, ws, ys = list(x.shape), list(conv.weight.shape), list(y.shape)
    assert _C.convolution_flop(xs, ws, ys, transposed) == fwd
    assert _C.convolution_backward_flop(ys, xs, ws, transposed, 1) == bwd
    true_bwd = _C.convolution_backward_flop(ys, xs, ws, transposed, groups)
    assert true_bwd == 2 * fwd  # input grad = weight grad = forward
    assert bwd == fwd + groups * fwd  # FlopCounterMode: weight grad * groups


def test_convolution_by_hand():
    # x [2, 3, 8, 8], w [4, 3, 3, 3], out [2, 4, 6, 6]: 2*2*36*4*3*9 = 15,552
    assert _C.convolution_flop([2, 3, 8, 8], [4, 3, 3, 3], [2, 4, 6, 6]) == 15552
    with pytest.raises(ValueError, match="groups"):
        _C.convolution_backward_flop([1, 6, 3], [1, 4, 5], [6, 2, 3], groups=3)


# ---------------------------------------------------------------------------
# The seeds' worked examples
# ---------------------------------------------------------------------------

def test_lambda_llama_8b_palm():
    r = transformer_flops(load_preset("llama-3.1-8b"), seq_len=8192)
    assert isinstance(r, TransformerFlops)
    assert r.num_params == LLAMA8B_N
    assert r.num_embedding_params == LLAMA8B_NEMB
    # 6 * (8,030,261,248 - 525,336,576) = 45,029,548,032
    # + 12 * 32 * 32 * 128 * 8,192     = 12,884,901,888
    assert r.flops_per_token == 57_914_449_920
    assert round(r.flops_per_token / 1e9, 2) == 57.91  # the paper prints 57.93
    assert r.model_flops == 57_914_449_920 * 8192
    assert r.num_tokens == 8192
    # Lambda: 21,111 tokens/s on a B200 at 2,250 TFLOP/s -> 1,223 TFLOP/s, 54.34%
    achieved = r.flops_per_token * 21_111
    assert round(achieved / 1e12) == 1223
    assert round(100 * achieved / 2250e12, 2) == 54.34
    # with the paper's rounded N = 8.03e9 the per-token figure is also 57.91
    assert round((6 * (8.03e9 - LLAMA8B_NEMB) + 12 * 32 * 32 * 128 * 8192) / 1e9, 2) == 57.91


def test_llama_8b_param_count_matches_transformers():
    model = build(load_preset("llama-3.1-8b"), device="meta")
    assert num_params(model) == LLAMA8B_N == model.num_parameters()


def test_6n_rule():
    cfg = load_preset("llama-3.1-8b")
    r = transformer_flops(cfg, seq_len=4096, batch_size=8, formula="6n")
    # N_c = N - N_emb = 7,504,924,672; 6 * N_c per token, no attention term
    assert r.flops_per_token == 6 * (LLAMA8B_N - LLAMA8B_NEMB)
    assert r.attention_flops == 0
    assert r.num_tokens == 8 * 4096
    # counting the embedding too (untied): 6 * N
    r = transformer_flops(cfg, seq_len=4096, formula="6n", include_embedding=True)
    assert r.flops_per_token == 6 * LLAMA8B_N


def test_explainer_6n_rule_from_a_bare_count():
    # 7B on 8 H100 SXM: 8 * 4096 / 1.2 = 27,307 tokens/s; 6 * 7e9 * that
    # / (8 * 989e12) ~= 14.5 %
    r = params_flops(7e9, num_tokens=8 * 4096)
    assert r.flops_per_token == 42e9  # 6 * 7e9
    assert r.model_flops == 42e9 * 32768
    assert r.forward_flops == 14e9 * 32768  # 2N per token
    tokens_per_sec = 8 * 4096 / 1.2
    assert round(100 * r.flops_per_token * tokens_per_sec / (8 * 989e12), 1) == 14.5
    assert "6n" in r.conventions_str


def test_params_flops_lora_and_mi300x():
    # 405B, 8 GPUs at 1.3 PFLOP/s, global batch 16 x seq 64 in 30 s:
    # 6 * 405e9 * 1024 / 30 / (8 * 1.3e15) = 0.80 %; LoRA 4N: 0.53 %
    full = params_flops(405e9, num_tokens=16 * 64)
    lora = params_flops(405e9, num_tokens=16 * 64, lora=True)
    assert round(100 * full.model_flops / 30 / (8 * 1.3e15), 2) == 0.80
    assert round(100 * lora.model_flops / 30 / (8 * 1.3e15), 2) == 0.53
    assert lora.flops_per_token == 4 * 405e9
    with pytest.raises(ValueError, match="num_params"):
        params_flops(0)
    with pytest.raises(TypeError, match="num_params"):
        params_flops("7e9")
    with pytest.raises(ValueError, match="num_tokens"):
        params_flops(7e9, num_tokens=0)


def test_lora_405b_ratio_matches_mi300x_discussion():
    cfg = load_preset("llama-3.1-405b")
    full = transformer_flops(cfg, seq_len=64, batch_size=16, formula="6n")
    lora = transformer_flops(cfg, seq_len=64, batch_size=16, formula="6n",
                             lora_rank=8, lora_targets=["q_proj", "v_proj"])
    w = 405_853_388_800 - 128_256 * 16_384  # N - N_emb
    # adapters per layer: q 8*(16384 + 16384) = 262,144; v 8*(16384 + 1024)
    # = 139,264 -> 401,408; 126 layers -> 50,577,408
    assert lora.num_adapter_params == 50_577_408
    assert full.model_flops == 6 * w * 1024
    assert lora.model_flops == 4 * w * 1024 + 6 * 50_577_408 * 1024
    ratio = lora.model_flops / full.model_flops
    assert ratio == pytest.approx(2 / 3, abs=1e-3)
    assert ratio == pytest.approx(0.53 / 0.8, abs=0.01)  # the discussion's MFUs
    assert "LoRA r=8" in lora.conventions_str
    assert lora.conventions["lora"] == {"rank": 8, "targets": ("q", "v")}


# ---------------------------------------------------------------------------
# Hand counts: GQA, SwiGLU, MoE, packing, causal, recompute
# ---------------------------------------------------------------------------

def test_gqa_swiglu_matmul_by_hand():
    r = transformer_flops(None, hidden_size=8, num_layers=2, num_heads=4,
                          num_kv_heads=2, intermediate_size=16, vocab_size=10,
                          seq_lens=[3, 5], formula="matmul")
    # per token per layer: q 8*8=64, k 8*4=32, v 32, o 64 -> 192 (GQA: k, v
    # at 2 of 4 heads); SwiGLU 3*8*16 = 384; x2 layers = 1,152; lm_head 80
    # -> 1,232 weights; 2 FLOPs each * 8 tokens = 19,712
    # attention: 4 * 4 heads * 2 dim * (9 + 25) = 1,088 per layer, 2,176
    assert r.attention_flops == 2176
    assert r.forward_flops == 19_712 + 2176
    assert r.model_flops == 3 * (19_712 + 2176)  # 65,664


def test_gelu_mlp_two_matrices():
    swiglu = transformer_flops(None, hidden_size=8, num_layers=1, num_heads=2,
                               intermediate_size=16, vocab_size=10, seq_len=4,
                               formula="matmul", include_lm_head=False)
    gelu = transformer_flops(None, hidden_size=8, num_layers=1, num_heads=2,
                             intermediate_size=16, vocab_size=10, seq_len=4,
                             formula="matmul", include_lm_head=False, mlp="gelu")
    # one MLP matrix fewer: 2 * 8*16 * 4 tokens = 1,024 forward FLOPs
    assert swiglu.forward_flops - gelu.forward_flops == 1024


def test_moe_counts_active_experts_only():
    cfg = load_preset("mixtral-8x7b")
    r = transformer_flops(cfg, seq_len=1, formula="matmul", include_lm_head=False)
    # per layer: attention 2*4096*4096 + 2*4096*1024 = 41,943,040; router
    # 4096*8 = 32,768; 2 active experts 2*3*4096*14336 = 352,321,536
    # -> 394,297,344 * 32 layers = 12,617,515,008 weights, 2 FLOPs each
    per_layer = 41_943_040 + 32_768 + 352_321_536
    assert r.forward_flops - r.attention_flops == 2 * 32 * per_layer
    # total: per layer attention 41,943,040 + router 32,768 + 8 experts
    # 8*3*4096*14336 = 1,409,286,144 + 2 norms 8,192 = 1,451,270,144; x32 =
    # 46,440,644,608; + untied embeddings 2*32,000*4,096 = 262,144,000 + final
    # norm 4,096 = 46,702,792,704 (Mixtral's "46.7B")
    assert r.num_params == 32 * (41_943_040 + 32_768 + 8 * 3 * 4096 * 14336 + 2 * 4096) \
        + 2 * 32_000 * 4096 + 4096 == 46_702_792_704
    # active: the 6 idle experts of 32 layers (6*3*4096*14336 each) are out
    assert r.num_active_params == 46_702_792_704 - 32 * 6 * 3 * 4096 * 14336
    assert round(r.num_active_params / 1e9, 1) == 12.9  # Mixtral's "12.9B active"


def test_packed_sources_agree():
    cfg = tiny_llama()
    lengths = [3, 5, 2]
    ref = transformer_flops(cfg, seq_lens=lengths)
    cu = torch.tensor([0, 3, 8, 10], dtype=torch.int32)
    pos = torch.tensor([[0, 1, 2, 0, 1, 2, 3, 4, 0, 1]])
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 1, 0, 0, 0]])
    for kwargs in ({"cu_seqlens": cu}, {"cu_seqlens": [0, 3, 8, 10]},
                   {"position_ids": pos}, {"position_ids": pos.tolist()[0]},
                   {"attention_mask": mask}, {"attention_mask": mask.bool()}):
        r = transformer_flops(cfg, **kwargs)
        assert r.model_flops == ref.model_flops, kwargs
        assert r.num_tokens == 10
    # attention: 4 * 4 heads * 8 dim * (9 + 25 + 4) per layer, 2 layers
    assert ref.attention_flops == 4 * 4 * 8 * 38 * 2
    # a padded batch counts real lengths, not 3 * 5
    padded = transformer_flops(cfg, seq_len=5, batch_size=3)
    assert padded.attention_flops == 4 * 4 * 8 * 75 * 2
    assert ref.conventions["sequences"] == "seq_lens"


def test_uniform_equals_explicit_lengths():
    cfg = load_preset("qwen2.5-7b")
    a = transformer_flops(cfg, seq_len=2048, batch_size=4)
    b = transformer_flops(cfg, seq_lens=[2048] * 4)
    assert a.model_flops == b.model_flops


def test_causal_half_removes_half_the_attention_term():
    cfg = load_preset("llama-3.1-8b")
    full = transformer_flops(cfg, seq_len=8192)
    half = transformer_flops(cfg, seq_len=8192, causal_attention="half")
    # model attention term = 3 * forward attention = 12*L*H*Q*S per token
    term = 3 * full.attention_flops
    assert term / 8192 == 12 * 32 * 32 * 128 * 8192
    assert full.model_flops - half.model_flops == term / 2
    assert "half" in half.conventions_str


def test_sliding_window_uses_min_s_w():
    cfg = load_preset("mistral-7b")  # v0.1: window 4,096 on all 32 layers
    r = transformer_flops(cfg, seq_lens=[8192, 1000])
    # sum s*min(s, 4096) = 8192*4096 + 1000*1000 = 34,554,432
    assert r.attention_flops == 4 * 32 * 128 * 32 * 34_554_432
    short = transformer_flops(cfg, seq_len=4096)
    assert short.attention_flops == 4 * 32 * 128 * 32 * 4096 ** 2


def test_recompute_changes_hardware_only():
    cfg = tiny_llama()
    base = transformer_flops(cfg, seq_len=16, batch_size=2, formula="matmul")
    sel = transformer_flops(cfg, seq_len=16, batch_size=2, formula="matmul",
                            activation_recompute="selective")
    full = transformer_flops(cfg, seq_len=16, batch_size=2, formula="matmul",
                             activation_recompute="full")
    assert base.hardware_flops == base.model_flops
    assert sel.model_flops == full.model_flops == base.model_flops
    assert sel.hardware_flops == base.model_flops + base.attention_flops
    # full: every layer's forward again = forward without the lm_head
    # (2 * 32 * 50 FLOPs per token, 32 tokens)
    lm_head = 2 * 32 * 50 * 32
    assert full.hardware_flops == base.model_flops + base.forward_flops - lm_head


def test_lm_head_and_tied_embeddings():
    cfg = load_preset("gpt2")  # tied
    r = transformer_flops(cfg, seq_len=1024, formula="6n")
    no_head = transformer_flops(cfg, seq_len=1024, formula="6n", include_lm_head=False)
    # the tied lm_head still runs a [768 -> 50,257] matmul: 6 * 50,257 * 768
    assert r.flops_per_token - no_head.flops_per_token == 6 * 50257 * 768
    # N_emb = wte 50,257*768 + wpe 1,024*768
    assert r.num_embedding_params == 50257 * 768 + 1024 * 768
    assert r.conventions["tie_word_embeddings"] is True


# ---------------------------------------------------------------------------
# The matmul formula against FlopCounterMode on real transformers models
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_matmul_formula_equals_flop_counter_gpt2(attn):
    cfg = tiny_gpt2()
    total, _ = counted_train_step(build(cfg, attn), cfg["vocab_size"])
    r = transformer_flops(cfg, seq_len=16, batch_size=2, formula="matmul")
    assert total == r.model_flops == r.hardware_flops


def test_matmul_formula_equals_flop_counter_llama_eager():
    cfg = tiny_llama()
    total, per_op = counted_train_step(build(cfg, "eager"), cfg["vocab_size"])
    r = transformer_flops(cfg, seq_len=16, batch_size=2, formula="matmul")
    assert total == r.model_flops
    # the attention bmms are the attention term (forward + 2x backward)
    assert per_op["aten.bmm"] == 3 * r.attention_flops


def test_flop_counter_misses_cpu_sdpa_attention():
    """Documented deviation: on CPU, SDPA runs
    aten._scaled_dot_product_flash_attention_for_cpu, which FlopCounterMode
    has no formula for, so its total lacks the whole attention term."""
    cfg = tiny_llama()
    total, per_op = counted_train_step(build(cfg, "sdpa"), cfg["vocab_size"])
    r = transformer_flops(cfg, seq_len=16, batch_size=2, formula="matmul")
    assert "aten.bmm" not in per_op
    assert r.model_flops - total == 3 * r.attention_flops


@pytest.mark.parametrize("impl", ["eager", "batched_mm"])
def test_matmul_formula_equals_flop_counter_mixtral(impl):
    cfg = tiny_mixtral()
    model = build(cfg, "eager")
    model.set_experts_implementation(impl)
    total, _ = counted_train_step(model, cfg["vocab_size"])
    r = transformer_flops(cfg, seq_len=16, batch_size=2, formula="matmul")
    assert total == r.model_flops


def test_flop_counter_misses_grouped_mm_experts():
    """Documented deviation: transformers' default experts implementation
    (grouped_mm) calls torch._grouped_mm, which FlopCounterMode does not
    count: its total lacks every expert matmul."""
    cfg = tiny_mixtral()
    model = build(cfg, "eager")
    model.set_experts_implementation("grouped_mm")
    total, _ = counted_train_step(model, cfg["vocab_size"])
    r = transformer_flops(cfg, seq_len=16, batch_size=2, formula="matmul")
    # experts: 2 active * 3 * 32 * 48 weights * 2 FLOPs * 32 tokens * 2 layers
    # = 1,179,648 forward, x3 for training
    assert r.model_flops - total == 3 * 1_179_648


def test_matmul_formula_equals_flop_counter_qwen2_moe():
    cfg = dict(model_type="qwen2_moe", hidden_size=32, num_hidden_layers=2,
               num_attention_heads=4, num_key_value_heads=2, intermediate_size=48,
               vocab_size=50, num_experts=4, num_experts_per_tok=2,
               moe_intermediate_size=16, shared_expert_intermediate_size=24)
    model = build(cfg, "eager")
    model.set_experts_implementation("eager")
    total, _ = counted_train_step(model, cfg["vocab_size"])
    r = transformer_flops(cfg, seq_len=16, batch_size=2, formula="matmul")
    assert total == r.model_flops


# ---------------------------------------------------------------------------
# Configs: objects, dicts, explicit dims, bad input
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("cfg", [
    tiny_llama(),
    tiny_llama(attention_bias=True, mlp_bias=True, tie_word_embeddings=True),
    tiny_gpt2(n_inner=40),
    tiny_mixtral(),
    dict(model_type="mistral", hidden_size=32, num_hidden_layers=2,
         num_attention_heads=4, num_key_value_heads=1, intermediate_size=48,
         vocab_size=50, sliding_window=8),
    dict(model_type="qwen2", hidden_size=32, num_hidden_layers=4,
         num_attention_heads=4, num_key_value_heads=2, intermediate_size=48,
         vocab_size=50, use_sliding_window=True, sliding_window=8,
         max_window_layers=1, tie_word_embeddings=True),
    dict(model_type="qwen3", hidden_size=32, num_hidden_layers=2,
         num_attention_heads=4, num_key_value_heads=2, head_dim=16,
         intermediate_size=48, vocab_size=50),
    dict(model_type="qwen2_moe", hidden_size=32, num_hidden_layers=3,
         num_attention_heads=4, num_key_value_heads=2, intermediate_size=48,
         vocab_size=50, num_experts=4, num_experts_per_tok=2,
         moe_intermediate_size=16, shared_expert_intermediate_size=24,
         mlp_only_layers=[1]),
    dict(model_type="qwen3_moe", hidden_size=32, num_hidden_layers=4,
         num_attention_heads=4, num_key_value_heads=2, head_dim=16,
         intermediate_size=48, vocab_size=50, num_experts=4,
         num_experts_per_tok=2, moe_intermediate_size=16, decoder_sparse_step=2),
], ids=lambda c: c["model_type"])
def test_param_count_and_config_object(cfg):
    conf = transformers.AutoConfig.for_model(**cfg)
    model = build(cfg, device="meta")
    a = transformer_flops(cfg, seq_len=16)
    b = transformer_flops(conf, seq_len=16)  # the PretrainedConfig object
    assert a.num_params == b.num_params == num_params(model)
    assert a.model_flops == b.model_flops


def test_qwen2_sliding_layers_from_max_window_layers():
    cfg = dict(model_type="qwen2", hidden_size=32, num_hidden_layers=4,
               num_attention_heads=4, num_key_value_heads=2, intermediate_size=48,
               vocab_size=50, use_sliding_window=True, sliding_window=8,
               max_window_layers=1)
    r = transformer_flops(cfg, seq_len=16)
    # layer 0 full (16*16 = 256), layers 1-3 sliding (16*8 = 128):
    # 4 * 4 heads * 8 dim * (256 + 3*128) = 81,920
    assert r.attention_flops == 4 * 4 * 8 * (256 + 3 * 128)


def test_explicit_dims_override_config():
    cfg = load_preset("llama-3.1-8b")
    r = transformer_flops(cfg, seq_len=16, num_layers=1)
    # one Llama-3.1-8B layer: q 4096^2 + k, v 2*4096*1024 + o 4096^2 = 41,943,040;
    # MLP 3*4096*14336 = 176,160,768; 2 norms 8,192 -> 218,112,000; + untied
    # embeddings 2 * 525,336,576 + final norm 4,096 = 1,268,789,248
    assert r.num_params == 218_112_000 + 2 * LLAMA8B_NEMB + 4096 == 1_268_789_248
    # consistent with the 32-layer total
    assert LLAMA8B_N == 32 * 218_112_000 + 2 * LLAMA8B_NEMB + 4096


@pytest.mark.parametrize("cfg,exc,match", [
    ({"model_type": "llama"}, ValueError, "hidden_size"),
    (dict(tiny_llama(), hidden_size=-32), ValueError, "config.hidden_size"),
    (dict(tiny_llama(), hidden_size="32"), TypeError, "config.hidden_size"),
    (dict(tiny_llama(), num_key_value_heads=3), ValueError, "num_key_value_heads"),
    (dict(tiny_llama(), num_attention_heads=6), ValueError, "num_attention_heads"),  # 32 % 6
    (dict(tiny_mixtral(), num_experts_per_tok=5), ValueError, "num_experts_per_tok"),
    (dict(tiny_llama(), tie_word_embeddings="yes"), TypeError, "tie_word_embeddings"),
    ({"model_type": "bert", "hidden_size": 8}, ValueError, "model_type"),
    ({"hidden_size": 8}, ValueError, "model_type"),
    (dict(tiny_gpt2(), n_layer=0), ValueError, "n_layer"),
])
def test_bad_configs_name_the_field(cfg, exc, match):
    with pytest.raises(exc, match=match):
        transformer_flops(cfg, seq_len=16)


def test_bad_arguments():
    cfg = tiny_llama()
    with pytest.raises(TypeError, match="exactly one"):
        transformer_flops(cfg)
    with pytest.raises(TypeError, match="exactly one"):
        transformer_flops(cfg, seq_len=4, seq_lens=[4])
    with pytest.raises(ValueError, match="seq_len"):
        transformer_flops(cfg, seq_len=0)
    with pytest.raises(ValueError, match="batch_size"):
        transformer_flops(cfg, seq_len=4, batch_size=0)
    with pytest.raises(ValueError, match="formula"):
        transformer_flops(cfg, seq_len=4, formula="7n")
    with pytest.raises(ValueError, match="causal_attention"):
        transformer_flops(cfg, seq_len=4, causal_attention="quarter")
    with pytest.raises(ValueError, match="activation_recompute"):
        transformer_flops(cfg, seq_len=4, activation_recompute="some")
    with pytest.raises(TypeError, match="hidden_sise"):
        transformer_flops(cfg, seq_len=4, hidden_sise=3)
    with pytest.raises(ValueError, match="lora_targets"):
        transformer_flops(cfg, seq_len=4, lora_rank=4, lora_targets=["qkv"])
    with pytest.raises(ValueError, match="lora_targets"):
        transformer_flops(tiny_gpt2(), seq_len=4, lora_rank=4, lora_targets=["gate_proj"])
    with pytest.raises(ValueError, match="lora_rank"):
        transformer_flops(cfg, seq_len=4, lora_rank=0)
    with pytest.raises(ValueError, match="cu_seqlens"):
        transformer_flops(cfg, cu_seqlens=[0, 4, 2])
    with pytest.raises(ValueError, match="attention_mask"):
        transformer_flops(cfg, attention_mask=[[0, 0]])
    with pytest.raises(ValueError, match="seq_lens"):
        transformer_flops(cfg, seq_lens=[3, -1])
    with pytest.raises(TypeError, match="needs a config"):
        transformer_flops(seq_len=4, hidden_size=8)
    with pytest.raises(ValueError, match="num_kv_heads"):
        transformer_flops(None, hidden_size=8, num_layers=1, num_heads=4,
                          num_kv_heads=3, intermediate_size=8, vocab_size=8,
                          seq_len=4)


def test_conventions_dict_and_text():
    r = transformer_flops(load_preset("llama-3.1-8b"), seq_len=8192)
    assert r.conventions["formula"] == "palm"
    assert r.conventions["causal_attention"] == "full"
    assert r.conventions["include_lm_head"] is True
    assert r.conventions["include_embedding"] is False
    assert r.conventions["lora"] is None
    assert r.conventions["activation_recompute"] == "none"
    assert "full s²" in r.conventions_str and "\n" not in r.conventions_str
    with pytest.raises(TypeError):
        r.conventions["formula"] = "6n"  # read-only
    with pytest.raises(AttributeError):
        r.model_flops = 0  # frozen


# ---------------------------------------------------------------------------
# Peer helpers
# ---------------------------------------------------------------------------

def test_flash_attn_flops_both_spellings():
    # forward, causal counted full (docs/conventions.md): 4 * 2 * 128^2 * 8 * 64
    full = 4 * 2 * 128 ** 2 * 8 * 64
    assert flash_attn_flops(batch_size=2, seq_len=128, num_heads=8, head_dim=64) == full
    assert flash_attn_flops(2, 128, 8, 64) == full
    assert flash_attn_flops(batch=2, seq_len=128, num_heads=8, head_dim=64) == full
    assert flash_attn_flops(2, 128, 8, 64, causal_attention="half") == full // 2
    assert flash_attn_flops(2, 128, 8, 64, causal=False,
                            causal_attention="half") == full
    assert flash_attn_flops(2, 128, 8, 64, with_backward=True) == 3 * full
    assert isinstance(flash_attn_flops(2, 128, 8, 64), int)


def test_flash_attn_flops_errors():
    with pytest.raises(TypeError, match="not both"):
        flash_attn_flops(2, 128, 8, 64, batch_size=2)
    with pytest.raises(TypeError, match="batch"):
        flash_attn_flops(seq_len=128, num_heads=8, head_dim=64)
    with pytest.raises(ValueError, match="seq_len"):
        flash_attn_flops(2, -1, 8, 64)
    with pytest.raises(ValueError, match="num_heads"):
        flash_attn_flops(2, 128, 0, 64)
    with pytest.raises(TypeError, match="head_dim"):
        flash_attn_flops(2, 128, 8, 64.0)
    with pytest.raises(ValueError, match="causal_attention"):
        flash_attn_flops(2, 128, 8, 64, causal_attention="none")


def test_param_bytes_trainable_only():
    model = torch.nn.Sequential(torch.nn.Linear(4, 3),  # 12 + 3 fp32
                                torch.nn.Linear(3, 2).to(torch.bfloat16))  # 6 + 2 bf16
    assert param_bytes(model) == 15 * 4 + 8 * 2  # 76
    assert num_params(model) == 23
    model[0].requires_grad_(False)
    assert param_bytes(model, trainable_only=True) == 8 * 2
    assert num_params(model, trainable_only=True) == 8
    with pytest.raises(TypeError, match="Module"):
        param_bytes(object())


def test_param_bytes_tied_and_meta():
    model = build(tiny_gpt2(), device="meta")  # tied wte / lm_head
    assert num_params(model) == model.num_parameters()
    assert param_bytes(model) == 4 * model.num_parameters()  # fp32


# ---------------------------------------------------------------------------
# Norms without bias (nanoGPT's bias=False), against nanoGPT's estimate_mfu
# ---------------------------------------------------------------------------

NANOGPT = {"n_layer": 12, "n_head": 12, "n_embd": 768, "block_size": 1024,
           "vocab_size": 50304, "dropout": 0.0}


def test_nanogpt_bias_false_matches_its_own_estimate_mfu():
    r = transformer_flops(dict(NANOGPT, bias=False), seq_len=1024)
    # nanoGPT GPT(bias=False): per layer ln_1 768 + c_attn 768*2304 + c_proj
    # 768^2 + ln_2 768 + c_fc 768*3072 + c_proj 3072*768 = 7,079,424
    # (LayerNorm weight only); 12 layers 84,953,088 + ln_f 768 + wte 50,304 *
    # 768 = 38,633,472 -> get_num_params() (non_embedding: wpe out) =
    # 123,587,328; + wpe 786,432 = 124,373,760 in all
    assert 12 * 7_079_424 + 768 + 38_633_472 == 123_587_328
    assert r.num_params == 123_587_328 + 786_432
    # estimate_mfu: 6N + 12 * L * H * Q * T = 741,523,968 + 12*12*12*64*1024
    # = 741,523,968 + 113,246,208 = 854,770,176 FLOPs per token
    assert r.flops_per_token == 6 * 123_587_328 + 12 * 12 * 12 * 64 * 1024 == 854_770_176
    # bias=True (nanoGPT's default): + 2 LayerNorm biases, c_attn 2,304, c_proj
    # 768, c_fc 3,072, c_proj 768 = 8,448 per layer, + ln_f's 768
    with_bias = transformer_flops(dict(NANOGPT, bias=True), seq_len=1024)
    assert with_bias.flops_per_token == r.flops_per_token + 6 * (12 * 8_448 + 768)


def test_bias_false_is_a_keyword_of_the_6n_and_palm_formulas():
    # nanoGPT 124M as dimensions (karpathy/nanoGPT model.py @ 3adf61e: GPT
    # with GPTConfig(bias=False), LayerNorm(ndim, bias) l. 18-27, Linear(...,
    # bias=config.bias) l. 35-37 and 82-84, get_num_params l. 150-160:
    # every parameter but wpe's; estimate_mfu l. 289-296: 6N + 12 L H Q T)
    dims = dict(hidden_size=768, num_layers=12, num_heads=12, vocab_size=50304,
                num_positions=1024, intermediate_size=3072, mlp="gelu", norm="layernorm",
                tie_word_embeddings=True, seq_len=1024)
    # nanoGPT's arithmetic: per layer ln_1 768 + c_attn 768 * 2304 + c_proj
    # 768^2 + ln_2 768 + c_fc 768 * 3072 + c_proj 3072 * 768 = 7,079,424;
    # 12 layers + ln_f 768 + wte 50,304 * 768 (tied to lm_head) = 123,587,328
    n = 12 * 7_079_424 + 768 + 50_304 * 768
    assert n == 123_587_328
    assert transformer_flops(None, bias=False, **dims).flops_per_token == \
        6 * n + 12 * 12 * 12 * 64 * 1024 == 854_770_176
    assert transformer_flops(None, bias=False, formula="6n", **dims).flops_per_token == 6 * n
    # without it, the LayerNorms keep their biases: 25 x 768 parameters more,
    # +1.35e-4 of the count
    plain = transformer_flops(None, **dims).flops_per_token
    assert plain - 854_770_176 == 6 * 25 * 768
    assert round((plain / 854_770_176 - 1) * 1e4, 2) == 1.35
    # bias=True: GPT-2's, every Linear biased too (8,448 a layer) and the norms
    assert transformer_flops(None, bias=True, **dims).flops_per_token == \
        854_770_176 + 6 * (12 * 8_448 + 768)
    # an RMSNorm has no bias to drop
    rms = dict(dims, norm="rmsnorm")
    assert transformer_flops(None, bias=False, **rms).num_params == \
        transformer_flops(None, **rms).num_params


def test_layernorm_nobias_is_a_dims_keyword():
    dims = dict(hidden_size=8, num_layers=2, num_heads=2, vocab_size=10, intermediate_size=16,
                mlp="gelu", seq_len=4)
    ln = transformer_flops(None, norm="layernorm", **dims)
    nobias = transformer_flops(None, norm="layernorm_nobias", **dims)
    # 2 layers x 2 norms + the final norm, 8 biases each: 5 * 8 = 40 parameters
    assert ln.num_params - nobias.num_params == 40
    assert ln.flops_per_token - nobias.flops_per_token == 6 * 40
