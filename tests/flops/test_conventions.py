"""``transformer_flops(..., convention=...)`` reproduces other frameworks'
published MFU formulas, and explains the difference from ours item by item.

Each framework's formula is transcribed by hand below from its source (read,
not copied), file and commit cited, and evaluated on configs of at least
three families; the preset (csrc/core/model/conventions.c) must give the same
count. verl, VeOmni and Megatron-LM take the batch's real sequence lengths
(Σ sᵢ, Σ sᵢ²: a packed batch); torchtitan and nanoGPT take the configured
sequence length, so they are checked on uniform batches. torchtitan and
nanoGPT count parameters of the built model: the transcriptions count them
on the transformers model of the config, by each framework's rule.
"""
from __future__ import annotations

import functools

import pytest

from mfu_tracker import transformer_flops
from mfu_tracker.cli import main

LENGTHS = [16, 10, 6]  # a packed batch: T = 32, Σ s² = 256 + 100 + 36 = 392
UNIFORM = dict(seq_len=16, batch_size=2)  # T = 32 at the configured length 16

BASE = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            intermediate_size=96, vocab_size=128, head_dim=16)
CONFIGS = {
    "llama": dict(BASE, model_type="llama", tie_word_embeddings=False),
    "qwen3": dict(BASE, model_type="qwen3", tie_word_embeddings=False),
    "qwen3_moe": dict(BASE, model_type="qwen3_moe", num_experts=4, num_experts_per_tok=2,
                      moe_intermediate_size=32, decoder_sparse_step=1, mlp_only_layers=[],
                      tie_word_embeddings=False),
    "mixtral": dict(BASE, model_type="mixtral", num_local_experts=4, num_experts_per_tok=2,
                    tie_word_embeddings=False),
    "deepseek_v3": dict(BASE, model_type="deepseek_v3", num_hidden_layers=3,
                        num_key_value_heads=4, n_routed_experts=4, num_experts_per_tok=2,
                        moe_intermediate_size=32, first_k_dense_replace=1, n_shared_experts=1,
                        n_group=1, topk_group=1, kv_lora_rank=16, q_lora_rank=24,
                        qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16,
                        num_nextn_predict_layers=0, tie_word_embeddings=False),
    "gemma3_text": dict(BASE, model_type="gemma3_text", sliding_window=8,
                        layer_types=["sliding_attention", "full_attention"]),
    "gpt_oss": dict(BASE, model_type="gpt_oss", num_local_experts=4, num_experts_per_tok=2,
                    sliding_window=8, layer_types=["sliding_attention", "full_attention"],
                    tie_word_embeddings=False),
    "gpt2": dict(model_type="gpt2", n_embd=64, n_layer=2, n_head=4, n_positions=64,
                 vocab_size=128),
}


def _sum_sq(lengths):
    return sum(s * s for s in lengths)


def _window_pairs_span(lengths, w):   # s * min(s, w) per sequence
    return sum(s * min(s, w) for s in lengths)


def _window_pairs_kept(lengths, w):   # VeOmni's _compute_sliding_attention_score_sum
    out = 0
    for s in lengths:
        out += s * (s + 1) // 2 if s <= w else w * (w + 1) // 2 + (s - w) * w
    return out


# ---------------------------------------------------------------------------
# verl: verl/utils/flops_counter.py @ b178a3cd56f58b2d502255daba591e92833930a7
# ---------------------------------------------------------------------------

def _verl(c, lengths):
    d, L, V, H = c["hidden_size"], c["num_hidden_layers"], c["vocab_size"], c["num_attention_heads"]
    T = sum(lengths)
    mt = c["model_type"]
    if mt == "deepseek_v3":   # _estimate_deepseek_v3_flops
        qk = c["qk_nope_head_dim"] + c["qk_rope_head_dim"]
        attn = d * c["q_lora_rank"] + H * qk * c["q_lora_rank"]
        attn += d * (c["kv_lora_rank"] + c["qk_rope_head_dim"])
        attn += H * (qk - c["qk_rope_head_dim"] + c["v_head_dim"]) * c["kv_lora_rank"]
        attn += H * c["v_head_dim"] * d
        moe = d * c["n_routed_experts"] + d * c["moe_intermediate_size"] * (
            c["num_experts_per_tok"] + c["n_shared_experts"]) * 3
        k = c["first_k_dense_replace"]
        n = (moe + attn) * (L - k) + (d * c["intermediate_size"] * 3 + attn) * k + 2 * V * d
        return 6 * n * T + 3 * _sum_sq(lengths) * L * (qk + c["v_head_dim"]) * H
    hd = c.get("head_dim", d // H)
    q, kv = H * hd, c["num_key_value_heads"] * hd
    attn = d * (q + kv + kv + H * hd)
    if mt == "qwen3_moe":     # _estimate_qwen2_moe_flops
        mlp = d * c["num_experts_per_tok"] * c["moe_intermediate_size"] * 3 + d * c["num_experts"]
    elif mt == "gpt_oss":     # _estimate_gpt_oss_flops
        mlp = d * c["num_local_experts"] + d * c["intermediate_size"] * 3 * c["num_experts_per_tok"]
    else:                     # _estimate_qwen2_flops, _estimate_gemma3_flops
        mlp = d * c["intermediate_size"] * 3
    n = (mlp + attn) * L + 2 * V * d
    if mt in ("gemma3_text", "gpt_oss"):  # s * min(s, w) on sliding layers, s^2 elsewhere
        pairs = sum(_window_pairs_span(lengths, c["sliding_window"]) if t == "sliding_attention"
                    else _sum_sq(lengths) for t in c["layer_types"])
    else:
        pairs = _sum_sq(lengths) * L
    return 6 * n * T + 6 * pairs * hd * H


# ---------------------------------------------------------------------------
# VeOmni: veomni/utils/count_flops.py @ d9774494f5d8042321386c65c9406e732a271501
# ---------------------------------------------------------------------------

def _veomni(c, lengths):
    d, L, V, H = c["hidden_size"], c["num_hidden_layers"], c["vocab_size"], c["num_attention_heads"]
    T = sum(lengths)
    mt = c["model_type"]
    # _estimate_llama_flops: head_dim = hidden // heads; the Qwen text helpers
    # and gpt_oss: getattr(config, "head_dim", ...)
    hd = d // H if mt == "llama" else c.get("head_dim", d // H)
    q, kv = H * hd, c["num_key_value_heads"] * hd
    attn = d * (2 * q + 2 * kv)
    if mt == "qwen3_moe":     # _compute_qwen3_moe_text_flops
        mlp = d * c["num_experts"] + d * c["moe_intermediate_size"] * c["num_experts_per_tok"] * 3
    elif mt == "gpt_oss":     # _estimate_gpt_oss_flops
        mlp = d * c["num_local_experts"] + d * c["intermediate_size"] * c["num_experts_per_tok"] * 3
    else:                     # _compute_qwen_dense_text_flops, _estimate_llama_flops
        mlp = d * c["intermediate_size"] * 3
    n = (mlp + attn) * L + V * d  # _compute_lm_head_params: the lm_head only
    if mt == "gpt_oss":
        types = c["layer_types"]
        score = _sum_sq(lengths) * types.count("full_attention") + _window_pairs_kept(
            lengths, c["sliding_window"]) * types.count("sliding_attention")
    else:
        score = _sum_sq(lengths) * L
    return 6 * n * T + 12 * score * hd * H


# ---------------------------------------------------------------------------
# Megatron-LM: megatron/training/training.py @ d98e8a64ddf34856e74b24714e3bedb2f5a39553
# num_floating_point_operations -> transformer_flops (GQA branch, swiglu,
# moe_layer_freq 1, no MTP), THD: total_real_tokens and seqlen_squared_sum
# ---------------------------------------------------------------------------

def _megatron(c, lengths):
    d, L, V, H = c["hidden_size"], c["num_hidden_layers"], c["vocab_size"], c["num_attention_heads"]
    T, sq = sum(lengths), _sum_sq(lengths)
    kv_channels = c["head_dim"]
    groups = c["num_key_value_heads"]
    experts = c.get("num_experts", c.get("num_local_experts"))
    if experts is None:
        dense, moe, routed, moe_ffn = L, 0, 0, 0
    else:
        dense, moe, routed = 0, L, c["num_experts_per_tok"]
        moe_ffn = c.get("moe_intermediate_size", c["intermediate_size"])
    q = kv_channels * H
    k = v = kv_channels * groups
    self_attn = 3 * 2 * (d * (q + k + v) + q * d)
    core = 3 * 2 * q / 2 * 2
    mlp = 3 * 2 * d * (c["intermediate_size"] * 3 * dense + moe_ffn * routed * 3 * moe)
    logits = 3 * 2 * d * V
    return T * (mlp + self_attn * L + logits) + sq * core * L


# ---------------------------------------------------------------------------
# torchtitan: torchtitan/models/utils.py @ b5bcd76c66d0acb1a08b176d9639425bc55e0b2a
# and nanoGPT: model.py @ 3adf61e154c3fe3fca428ad6bc3818b27a3b8291
# (parameters of the transformers model of the config)
# ---------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _params(model_type):
    """(all parameters, {kind: count}) of the model, by parameter name."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    fields = {k: v for k, v in CONFIGS[model_type].items() if k != "model_type"}
    config = transformers.AutoConfig.for_model(model_type, **fields)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    kinds = {"embedding": 0, "position": 0, "router": 0, "experts": 0, "shared": 0}
    for name, p in model.named_parameters():
        if name.endswith("embed_tokens.weight") or name.endswith("wte.weight"):
            kinds["embedding"] += p.numel()
        elif name.endswith("wpe.weight"):
            kinds["position"] += p.numel()
        elif ".mlp.experts." in name:
            kinds["experts"] += p.numel()
        elif ".mlp.gate." in name or ".mlp.router." in name:
            kinds["router"] += p.numel()
        elif "shared_expert" in name:
            kinds["shared"] += p.numel()
    return model.num_parameters(), kinds, config


def _torchtitan(model_type, seq_len, tokens):
    nparams, kinds, config = _params(model_type)
    c = CONFIGS[model_type]
    if model_type == "deepseek_v3":  # head_dims = qk_head_dim + v_head_dim
        head_dims = c["qk_nope_head_dim"] + c["qk_rope_head_dim"] + c["v_head_dim"]
    else:                            # 2 * head_dim
        head_dims = 2 * c["head_dim"]
    experts = c.get("num_experts", c.get("n_routed_experts", c.get("num_local_experts")))
    if experts is None:              # get_dense_model_nparams_and_flops, untied
        matmul = nparams - kinds["embedding"]
    else:                            # get_moe_model_nparams_and_flops, untied
        dense = nparams - kinds["router"] - kinds["experts"] - kinds["shared"]
        matmul = dense - kinds["embedding"] + kinds["router"] + kinds["shared"] + \
            kinds["experts"] * c["num_experts_per_tok"] // experts
    L = c["num_hidden_layers"]
    per_token = 6 * matmul + 6 * L * c["num_attention_heads"] * head_dims * seq_len
    return per_token * tokens


def _nanogpt(model_type, block_size, tokens):
    nparams, kinds, config = _params(model_type)
    c = CONFIGS[model_type]
    n = nparams - kinds["position"]  # get_num_params(non_embedding=True): minus wpe
    L = c.get("num_hidden_layers", c.get("n_layer"))
    H = c.get("num_attention_heads", c.get("n_head"))
    Q = c.get("hidden_size", c.get("n_embd")) // H
    return (6 * n + 12 * L * H * Q * block_size) * tokens


# (convention, model_type, batch): at least three families per framework
TRANSCRIBED = (
    [("verl", mt, "packed") for mt in ("llama", "qwen3", "qwen3_moe", "deepseek_v3",
                                        "gemma3_text", "gpt_oss")]
    + [("veomni", mt, "packed") for mt in ("llama", "qwen3", "qwen3_moe", "gpt_oss")]
    + [("megatron", mt, "packed") for mt in ("llama", "qwen3", "qwen3_moe", "mixtral")]
    + [("torchtitan", mt, "uniform") for mt in ("llama", "qwen3_moe", "deepseek_v3", "gpt_oss")]
    + [("nanogpt", mt, "uniform") for mt in ("gpt2", "llama", "qwen3")]
)


def _theirs(convention, model_type):
    if convention == "verl":
        return _verl(CONFIGS[model_type], LENGTHS)
    if convention == "veomni":
        return _veomni(CONFIGS[model_type], LENGTHS)
    if convention == "megatron":
        return _megatron(CONFIGS[model_type], LENGTHS)
    tokens = UNIFORM["seq_len"] * UNIFORM["batch_size"]
    if convention == "torchtitan":
        return _torchtitan(model_type, UNIFORM["seq_len"], tokens)
    return _nanogpt(model_type, UNIFORM["seq_len"], tokens)


@pytest.mark.parametrize("convention, model_type, batch", TRANSCRIBED,
                         ids=[f"{c}-{m}" for c, m, _ in TRANSCRIBED])
def test_preset_reproduces_the_framework_formula(convention, model_type, batch):
    kwargs = {"seq_lens": LENGTHS} if batch == "packed" else UNIFORM
    f = transformer_flops(CONFIGS[model_type], convention=convention, **kwargs)
    assert f.model_flops == pytest.approx(_theirs(convention, model_type), rel=1e-12)
    info = f.conventions["convention"]
    ours = transformer_flops(CONFIGS[model_type], **kwargs)
    # the itemized switches add up to the difference from ours
    assert info["ours_model_flops"] == ours.model_flops
    assert ours.model_flops + sum(d["delta_flops"] for d in info["difference"]) == \
        pytest.approx(f.model_flops, rel=1e-12)


def test_ours_is_the_default_count():
    with_mtp = dict(CONFIGS["deepseek_v3"], num_nextn_predict_layers=1)  # an MTP layer: ours counts it
    for model_type, config in [*CONFIGS.items(), ("deepseek_v3", with_mtp)]:
        f = transformer_flops(config, seq_lens=LENGTHS, convention="mfu_tracker")
        assert f.model_flops == transformer_flops(config, seq_lens=LENGTHS).model_flops
        assert f.conventions["convention"]["difference"] == ()


def test_explicit_arguments_override_the_preset():
    cfg = CONFIGS["llama"]
    verl_full = transformer_flops(cfg, seq_lens=LENGTHS, convention="verl",
                                  causal_attention="full", include_embedding=False)
    # verl with full causal and no embedding row: the matmul formula as ours counts it
    assert verl_full.model_flops == transformer_flops(cfg, seq_lens=LENGTHS,
                                                      formula="matmul").model_flops
    assert verl_full.conventions["convention"]["choices"]["causal"] == "full"


def test_itemized_difference_by_hand():
    cfg = CONFIGS["llama"]
    f = transformer_flops(cfg, seq_lens=LENGTHS, convention="verl")
    items = {d["item"]: d for d in f.conventions["convention"]["difference"]}
    # embedding: the 128 x 64 table as a weight, 6 FLOPs per weight per token,
    # 32 tokens: 6 * 8,192 * 32 = 1,572,864
    assert items["embedding"]["delta_flops"] == 6 * 128 * 64 * 32 == 1_572_864
    # causal half: minus half the attention, 3x forward of 4 * H * hd = 256 FLOPs a
    # pair, Σ s² = 392 pairs a layer, 2 layers: -0.5 * 3 * 256 * 392 * 2
    assert items["causal"]["delta_flops"] == -0.5 * 3 * 256 * 392 * 2
    # formula matmul: no RMSNorm weights, 2 * 64 per layer + the final 64:
    # -6 * 320 * 32
    assert items["formula"]["delta_flops"] == -6 * (2 * 2 * 64 + 64) * 32
    assert set(items) == {"formula", "embedding", "causal", "mtp", "windows", "tower"}


def test_windows_and_tower_items():
    f = transformer_flops(CONFIGS["gemma3_text"], seq_lens=LENGTHS, convention="megatron")
    items = {d["item"]: d for d in f.conventions["convention"]["difference"]}
    # Megatron has no windows: the sliding layer's window of 8 counted as the
    # square. Full -> half first (the causal switch), then span -> square: the
    # half square Σ s²/2 = 196 pairs instead of the kept pairs Σ min(p+1, 8) =
    # (36 + 8 * 8) + (36 + 2 * 8) + 21 = 173: 23 pairs, 3 x 256 FLOPs each
    assert _window_pairs_kept(LENGTHS, 8) == 173
    assert items["windows"]["delta_flops"] == 3 * 256 * (196 - 173)
    assert "windows" in f.conventions_str


def test_conventions_refuse_what_they_cannot_count():
    with pytest.raises(ValueError, match="convention"):
        transformer_flops(CONFIGS["llama"], seq_len=16, convention="deepspeed")
    with pytest.raises(ValueError, match="lora_rank"):
        transformer_flops(CONFIGS["llama"], seq_len=16, convention="verl", lora_rank=8)


def test_explain_prints_the_itemized_difference(capsys):
    assert main(["explain", "--model", "llama-3.1-8b", "--seq-len", "8192", "--convention",
                 "verl", "--their-mfu", "52"]) == 0
    out = capsys.readouterr().out
    f = transformer_flops("llama-3.1-8b", seq_len=8192, convention="verl")
    ours = f.conventions["convention"]["ours_model_flops"]
    assert "embedding" in out and "causal" in out and "verl/utils/flops_counter.py" in out
    # their 52% over the same step time and peak: ours = 52 x ours / theirs
    assert f"their MFU 52.00% = ours {52 * ours / f.model_flops:.2f}%" in out
    assert main(["explain", "--model", "llama-3.1-8b", "--seq-len", "8192"]) == 0
    out = capsys.readouterr().out
    for name in ("verl", "veomni", "megatron", "torchtitan", "nanogpt"):
        assert f"{name}:" in out


def test_estimate_counts_under_a_convention(capsys):
    assert main(["estimate", "--model", "llama-3.1-8b", "--gpu", "H100 SXM", "--seq-len", "8192",
                 "--tokens-per-sec", "10000", "--convention", "megatron"]) == 0
    out = capsys.readouterr().out
    f = transformer_flops("llama-3.1-8b", seq_len=8192, convention="megatron")
    # MFU = FLOP/token x 10,000 tokens/s / 989.4 TFLOP/s
    assert f"MFU:                   {100 * f.flops_per_token * 1e4 / 989.4e12:.2f}%" in out
    assert "convention megatron" in out


def test_the_module_lists_the_conventions_it_reads():
    from mfu_tracker.flops import _conventions

    names = _conventions.convention_names()
    assert names[0] == "mfu_tracker" and {"megatron", "verl", "torchtitan"} <= set(names)
    assert len(_conventions.convention_table()) == len(names)
