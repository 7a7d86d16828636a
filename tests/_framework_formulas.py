"""Hand transcriptions of verl's, VeOmni's and Megatron-LM's MFU formulas,
read (not copied) at the commits the presets cite, each function with its
file and first line. They read a transformers config object by attribute
(``getattr``), as the frameworks do, and return the step's FLOPs (the
frameworks' ``flops_all_token``, before dividing by the step time). Python
integers: exact.

- verl: verl/utils/flops_counter.py @ b178a3cd56f58b2d502255daba591e92833930a7
- VeOmni: veomni/utils/count_flops.py @ d9774494f5d8042321386c65c9406e732a271501
- Megatron-LM: megatron/training/training.py @ d98e8a64ddf34856e74b24714e3bedb2f5a39553
"""
from __future__ import annotations

import math
import types


def _sum_sq(lengths):
    return sum(s * s for s in lengths)


def _head_dim(c):
    return getattr(c, "head_dim", c.hidden_size // c.num_attention_heads)


def _gqa_linear(c, head_dim):
    q = c.num_attention_heads * head_dim
    kv = c.num_key_value_heads * head_dim
    return c.hidden_size * (q + kv + kv + c.num_attention_heads * head_dim)


# ---------------------------------------------------------------------------
# verl (ESTIMATE_FUNC, line 538)
# ---------------------------------------------------------------------------

def verl_qwen2(c, lengths, head_dim=None):
    """_estimate_qwen2_flops, line 88 (head_dim: line 96; the attention
    6 * sum(s^2) on every layer, line 115)."""
    hd = _head_dim(c) if head_dim is None else head_dim
    dense = (c.hidden_size * c.intermediate_size * 3 + _gqa_linear(c, hd)) * c.num_hidden_layers
    dense += c.vocab_size * c.hidden_size * 2
    return 6 * dense * sum(lengths) + \
        6 * _sum_sq(lengths) * hd * c.num_attention_heads * c.num_hidden_layers


def qwen3_vit(v, images_seqlens):
    """verl's _estimate_qwen3_vit_flop (line 215), and VeOmni's (line 739)
    for full training: the same arithmetic."""
    tokens = sum(images_seqlens)
    dim, m = v.hidden_size, v.spatial_merge_size
    patch = dim * v.in_channels * v.temporal_patch_size * v.patch_size * v.patch_size
    merger = (v.out_hidden_size + dim * m ** 2) * (dim * m ** 2)
    dense = patch + (dim * v.intermediate_size * 2 + dim * 4 * dim) * v.depth + \
        merger * len(v.deepstack_visual_indexes) + merger
    return 6 * dense * tokens + \
        12 * _sum_sq(images_seqlens) * (dim // v.num_heads) * v.num_heads * v.depth


def images_seqlens(grids):
    """h * w per frame, t frames per grid (verl agent_loop.py line 673, VeOmni
    helper.py line 119)."""
    return [h * w for t, h, w in grids for _ in range(t)]


def verl_qwen3_vl(c, lengths, grids=()):
    """_estimate_qwen3_vl_flops, line 123: the text_config's numbers with
    head_dim = hidden_size // num_attention_heads (line 132), + the ViT
    estimate of the images (line 155)."""
    t = c.text_config
    vit = qwen3_vit(c.vision_config, images_seqlens(grids)) if grids else 0
    return verl_qwen2(t, lengths, head_dim=t.hidden_size // t.num_attention_heads) + vit


def verl_qwen2_moe(c, lengths):
    """_estimate_qwen2_moe_flops, line 318: the router and the k routed
    experts on every layer (lines 335, 339); no shared expert."""
    hd = _head_dim(c)
    d = c.hidden_size
    moe = d * c.num_experts_per_tok * c.moe_intermediate_size * 3 + d * c.num_experts
    dense = (moe + _gqa_linear(c, hd)) * c.num_hidden_layers + c.vocab_size * d * 2
    return 6 * dense * sum(lengths) + \
        6 * _sum_sq(lengths) * hd * c.num_attention_heads * c.num_hidden_layers


def _mla_linear(c):
    """MLA's projections, verl line 281 / VeOmni line 349."""
    d, heads = c.hidden_size, c.num_attention_heads
    q_head_dim = c.qk_nope_head_dim + c.qk_rope_head_dim
    if c.q_lora_rank is None:
        n = d * heads * q_head_dim
    else:
        n = d * c.q_lora_rank + heads * q_head_dim * c.q_lora_rank
    n += d * (c.kv_lora_rank + c.qk_rope_head_dim)
    n += heads * (q_head_dim - c.qk_rope_head_dim + c.v_head_dim) * c.kv_lora_rank
    n += heads * c.v_head_dim * d
    return n


def _deepseek_n(c, lm_rows):
    d, k = c.hidden_size, c.first_k_dense_replace
    moe = d * c.n_routed_experts + \
        d * c.moe_intermediate_size * (c.num_experts_per_tok + c.n_shared_experts) * 3
    attn = _mla_linear(c)
    return (moe + attn) * (c.num_hidden_layers - k) + \
        (d * c.intermediate_size * 3 + attn) * k + lm_rows * c.vocab_size * d


def verl_deepseek_v3(c, lengths):
    """_estimate_deepseek_v3_flops, line 264: 3 * sum(s^2) * L * (d_qk + d_v)
    * H (line 310); no MTP."""
    q_head_dim = c.qk_nope_head_dim + c.qk_rope_head_dim
    return 6 * _deepseek_n(c, 2) * sum(lengths) + 3 * _sum_sq(lengths) * c.num_hidden_layers * \
        (q_head_dim + c.v_head_dim) * c.num_attention_heads


def _verl_windowed_pairs(c, lengths, default_window):
    """The sliding layers' s * min(s, w), others s^2 (lines 394-413, 508-524)."""
    layer_types = getattr(c, "layer_types", None)
    window = getattr(c, "sliding_window", default_window)
    if not layer_types:
        return _sum_sq(lengths) * c.num_hidden_layers
    pairs = 0
    for kind in layer_types[:c.num_hidden_layers]:
        for s in lengths:
            pairs += s * min(s, window) if kind == "sliding_attention" and window else s * s
    return pairs


def verl_gemma3(c, lengths):
    """_estimate_gemma3_flops, line 355."""
    hd = _head_dim(c)
    dense = (c.hidden_size * c.intermediate_size * 3 + _gqa_linear(c, hd)) * c.num_hidden_layers
    dense += c.vocab_size * c.hidden_size * 2
    return 6 * dense * sum(lengths) + \
        6 * _verl_windowed_pairs(c, lengths, 1024) * hd * c.num_attention_heads


def verl_gpt_oss(c, lengths):
    """_estimate_gpt_oss_flops, line 463 (mlp_matrices = 3, line 474)."""
    hd, d = _head_dim(c), c.hidden_size
    moe = d * c.num_local_experts + d * c.intermediate_size * 3 * c.num_experts_per_tok
    dense = (moe + _gqa_linear(c, hd)) * c.num_hidden_layers + c.vocab_size * d * 2
    return 6 * dense * sum(lengths) + \
        6 * _verl_windowed_pairs(c, lengths, 128) * hd * c.num_attention_heads


def verl_apertus(c, lengths):
    """_estimate_apertus_flops, line 423: 2 MLP matrices (line 438) and the
    q/k norm weights d + H_kv * Q per layer (line 443)."""
    hd, d = _head_dim(c), c.hidden_size
    per_layer = d * c.intermediate_size * 2 + _gqa_linear(c, hd) + d + \
        c.num_key_value_heads * hd
    dense = per_layer * c.num_hidden_layers + c.vocab_size * d * 2
    return 6 * dense * sum(lengths) + \
        6 * _sum_sq(lengths) * hd * c.num_attention_heads * c.num_hidden_layers


VERL = {"qwen2": verl_qwen2, "llama": verl_qwen2, "mistral": verl_qwen2, "qwen3": verl_qwen2,
        "seed_oss": verl_qwen2, "qwen2_moe": verl_qwen2_moe, "qwen3_moe": verl_qwen2_moe,
        "qwen3_vl": verl_qwen3_vl, "deepseek_v3": verl_deepseek_v3, "gemma3_text": verl_gemma3,
        "gpt_oss": verl_gpt_oss, "apertus": verl_apertus}


# ---------------------------------------------------------------------------
# VeOmni (VeomniFlopsCounter.estimate_func, line 84)
# ---------------------------------------------------------------------------

def veomni_dense_text(c, lengths, head_dim=None):
    """_compute_qwen_dense_text_flops, line 223 (_estimate_qwen2_flops, line
    594); with head_dim = hidden // heads it is _estimate_llama_flops (line
    610, head_dim line 618) and _estimate_seed_flops (line 300, line 308)."""
    hd = _head_dim(c) if head_dim is None else head_dim
    d = c.hidden_size
    q, kv = c.num_attention_heads * hd, c.num_key_value_heads * hd
    base = (d * c.intermediate_size * 3 + d * (2 * q + 2 * kv)) * c.num_hidden_layers
    base += c.vocab_size * d  # _compute_lm_head_params, line 118
    return 6 * base * sum(lengths) + \
        12 * _sum_sq(lengths) * hd * c.num_attention_heads * c.num_hidden_layers


def veomni_qwen_vit(v, images_seqlens):
    """_estimate_qwen_vit_flop (line 831), Qwen2.5-VL's tower (no embed_dim),
    full training."""
    tokens = sum(images_seqlens)
    dim, m, heads = v.hidden_size, v.spatial_merge_size, v.num_heads
    dense = (dim * v.intermediate_size * 3 + dim * 4 * dim) * v.depth + \
        (v.out_hidden_size + dim * m ** 2) * (dim * m ** 2)
    full = len(v.fullatt_block_indexes)
    attn = 12 * _sum_sq(images_seqlens) * (dim // heads) * heads * full
    if v.depth - full > 0:
        window = v.window_size // m // v.patch_size * m
        attn += 12 * tokens * window ** 2 * (dim // heads) * heads * (v.depth - full)
    return 6 * dense * tokens + attn


def veomni_vl(c, lengths, grids=()):
    """_estimate_qwen2_vl_flops (line 644) / _estimate_qwen3_vl_flops (line
    677): the text_config's dense text formula + the ViT estimate."""
    vit = 0
    if grids:
        seqlens = images_seqlens(grids)
        vit = qwen3_vit(c.vision_config, seqlens) if c.model_type == "qwen3_vl" else \
            veomni_qwen_vit(c.vision_config, seqlens)
    return veomni_dense_text(c.text_config, lengths) + vit


def veomni_llama(c, lengths):
    return veomni_dense_text(c, lengths, head_dim=c.hidden_size // c.num_attention_heads)


def veomni_qwen3_moe(c, lengths):
    """_compute_qwen3_moe_text_flops, line 262: router + k experts on every
    layer (line 281)."""
    hd, d = _head_dim(c), c.hidden_size
    q, kv = c.num_attention_heads * hd, c.num_key_value_heads * hd
    per_layer = d * c.num_experts + d * c.moe_intermediate_size * c.num_experts_per_tok * 3 + \
        d * (2 * q + 2 * kv)
    base = per_layer * c.num_hidden_layers + c.vocab_size * d
    return 6 * base * sum(lengths) + \
        12 * _sum_sq(lengths) * hd * c.num_attention_heads * c.num_hidden_layers


def veomni_deepseek_v3(c, lengths):
    """_estimate_deepseek_v3_flops, line 334: 12 * sum(s^2) * L * q_head_dim
    * H (line 376)."""
    q_head_dim = c.qk_nope_head_dim + c.qk_rope_head_dim
    return 6 * _deepseek_n(c, 1) * sum(lengths) + \
        12 * _sum_sq(lengths) * c.num_hidden_layers * q_head_dim * c.num_attention_heads


def _veomni_sliding_score(lengths, window):
    """_compute_sliding_attention_score_sum, line 519."""
    total = 0
    for s in lengths:
        total += s * (s + 1) // 2 if s <= window else \
            window * (window + 1) // 2 + (s - window) * window
    return total


def veomni_gpt_oss(c, lengths):
    """_estimate_gpt_oss_flops, line 529."""
    hd, d = _head_dim(c), c.hidden_size
    q, kv = c.num_attention_heads * hd, c.num_key_value_heads * hd
    per_layer = d * c.num_local_experts + d * c.intermediate_size * c.num_experts_per_tok * 3 + \
        d * (q + kv + kv + q)
    base = per_layer * c.num_hidden_layers + c.vocab_size * d
    kinds = c.layer_types
    score = _sum_sq(lengths) * kinds.count("full_attention") + \
        _veomni_sliding_score(lengths, c.sliding_window) * kinds.count("sliding_attention")
    return 6 * base * sum(lengths) + 12 * score * hd * c.num_attention_heads


VEOMNI = {"qwen2": veomni_dense_text, "qwen3": veomni_dense_text, "llama": veomni_llama,
          "seed_oss": veomni_llama,
          "qwen3_vl": veomni_vl, "qwen2_5_vl": veomni_vl,
          "qwen3_moe": veomni_qwen3_moe, "deepseek_v3": veomni_deepseek_v3,
          "gpt_oss": veomni_gpt_oss}


# ---------------------------------------------------------------------------
# Megatron-LM: num_floating_point_operations (line 802) -> transformer_flops
# (line 1009), the THD path (total_real_tokens, seqlen_squared_sum)
# ---------------------------------------------------------------------------

def megatron_args(c, quick_geglu=False, vocab_multiple=128):
    """The arguments a Megatron-LM run of the model takes (the names of
    megatron/training/arguments.py); ``quick_geglu``: --quick-geglu in place
    of --swiglu; the vocabulary padded as vocab_size_with_padding
    (megatron/core/tokenizers/utils/build_tokenizer.py line 133)."""
    mt = c.model_type
    d, layers, heads = c.hidden_size, c.num_hidden_layers, c.num_attention_heads
    kv = getattr(c, "num_key_value_heads", heads)
    experts = getattr(c, "num_experts", None) or getattr(c, "num_local_experts", None) or \
        getattr(c, "n_routed_experts", None)
    pattern = None
    if experts:
        first = getattr(c, "first_k_dense_replace", 0)
        pattern = [0] * first + [1] * (layers - first)
    shared = getattr(c, "shared_expert_intermediate_size", None)
    if mt == "deepseek_v3":
        shared = c.n_shared_experts * c.moe_intermediate_size
    mtp = getattr(c, "num_nextn_predict_layers", 0) or None
    ffn = (getattr(c, "intermediate_size", None) or getattr(c, "n_inner", None) or 4 * d)
    return types.SimpleNamespace(
        num_layers=layers, hidden_size=d, num_attention_heads=heads,
        group_query_attention=kv != heads, num_query_groups=kv,
        kv_channels=getattr(c, "head_dim", None) or d // heads, ffn_hidden_size=ffn,
        swiglu=mt != "gpt2" and not quick_geglu, num_experts=experts,
        moe_layer_freq=pattern, moe_router_topk=getattr(c, "num_experts_per_tok", None),
        moe_ffn_hidden_size=getattr(c, "moe_intermediate_size", None) or (ffn if experts else None),
        moe_latent_size=None, moe_shared_expert_intermediate_size=shared, mtp_num_layers=mtp,
        multi_latent_attention=mt == "deepseek_v3", q_lora_rank=getattr(c, "q_lora_rank", None),
        kv_lora_rank=getattr(c, "kv_lora_rank", None),
        qk_head_dim=getattr(c, "qk_nope_head_dim", None),
        qk_pos_emb_head_dim=getattr(c, "qk_rope_head_dim", None),
        v_head_dim=getattr(c, "v_head_dim", None), attention_output_gate=False,
        padded_vocab_size=int(math.ceil(c.vocab_size / vocab_multiple) * vocab_multiple))


def _megatron_attention(a):
    """(token-linear, core per pair) of one attention layer (lines 1079-1170)."""
    if a.multi_latent_attention:
        qk = a.qk_head_dim + a.qk_pos_emb_head_dim
        q_term = a.hidden_size * a.num_attention_heads * qk if a.q_lora_rank is None else \
            a.q_lora_rank * (a.hidden_size + a.num_attention_heads * qk + 1)
        linear = 3 * 2 * (q_term + a.kv_lora_rank * (
            a.hidden_size + a.num_attention_heads * (a.qk_head_dim + a.v_head_dim) + 1) +
            a.hidden_size * a.qk_pos_emb_head_dim +
            a.num_attention_heads * a.v_head_dim * a.hidden_size)
        core = 3 * 2 * (a.num_attention_heads * qk / 2 + a.num_attention_heads * a.v_head_dim / 2)
        return linear, core
    groups = a.num_query_groups if a.group_query_attention else a.num_attention_heads
    q = a.kv_channels * a.num_attention_heads
    k = v = a.kv_channels * groups
    return 3 * 2 * (a.hidden_size * (q + k + v) + q * a.hidden_size), 3 * 2 * q / 2 * 2


def megatron(a, lengths):
    """transformer_flops, line 1009, without linear attention."""
    if a.num_experts is None:
        dense, moe, routed, last_moe = a.num_layers, 0, 0, 0
    else:
        moe = sum(a.moe_layer_freq)
        dense, routed, last_moe = a.num_layers - moe, a.moe_router_topk, a.moe_layer_freq[-1]
    mtp = a.mtp_num_layers or 0
    moe += last_moe * mtp
    dense += (1 - last_moe) * mtp
    layers = a.num_layers + mtp
    moe_ffn = a.moe_ffn_hidden_size if a.moe_ffn_hidden_size is not None else a.ffn_hidden_size
    shared = a.moe_shared_expert_intermediate_size or 0
    ffn_factor = 3 if a.swiglu else 2  # line 1070
    linear, core = _megatron_attention(a)
    per_token = (3 * 2 * a.hidden_size * (a.ffn_hidden_size * ffn_factor * dense +
                                          moe_ffn * routed * ffn_factor * moe +
                                          shared * ffn_factor * moe) +
                 linear * layers +
                 3 * 2 * mtp * (3 * a.hidden_size + 2 * a.hidden_size * a.hidden_size) +
                 3 * 2 * a.hidden_size * a.padded_vocab_size * (mtp + 1))
    return sum(lengths) * per_token + _sum_sq(lengths) * core * layers
