"""The framework presets against each framework's own formula on real-size
configs: verl, VeOmni and Megatron-LM, transcribed by hand in
``_framework_formulas.py`` (file, line and commit cited there), on 14
configs (Llama-3-8B, Qwen2.5-7B, Qwen3-8B/4B/30B-A3B, Qwen1.5-MoE-A2.7B,
DeepSeek-V3 with and without its MTP layer, Gemma-3-4B, gpt-oss-20b,
Mixtral-8x7B, Seed-OSS-36B, Mistral-7B-v0.1, GPT-2) and three batches
(uniform, packed, long): every row a framework counts matches it to float
precision, every other row is refused naming what the framework logs. The
configs are the public config.json values, written as dicts; five of them
have a head_dim other than hidden_size / num_heads (Qwen3-4B, Qwen3-30B,
Gemma-3-4B, gpt-oss-20b, Seed-OSS-36B).
"""
from __future__ import annotations

import pytest

import _framework_formulas as fw
from mfu_tracker import transformer_flops

transformers = pytest.importorskip("transformers")

UNIFORM = [2048] * 4
PACKED = [1500, 700, 2048, 3000, 944]
LONG = [8192, 6000, 2000]
BATCHES = {"uniform": UNIFORM, "packed": PACKED, "long": LONG}

_QWEN3 = dict(model_type="qwen3", num_hidden_layers=36, num_attention_heads=32,
              num_key_value_heads=8, head_dim=128, vocab_size=151936)
DEEPSEEK_V3 = dict(
    model_type="deepseek_v3", hidden_size=7168, num_hidden_layers=61, num_attention_heads=128,
    num_key_value_heads=128, intermediate_size=18432, moe_intermediate_size=2048,
    n_routed_experts=256, n_shared_experts=1, num_experts_per_tok=8, first_k_dense_replace=3,
    q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64,
    v_head_dim=128, n_group=8, topk_group=4, vocab_size=129280, num_nextn_predict_layers=1,
    tie_word_embeddings=False)
CONFIGS = {
    "Llama-3-8B": dict(model_type="llama", hidden_size=4096, num_hidden_layers=32,
                       num_attention_heads=32, num_key_value_heads=8, intermediate_size=14336,
                       vocab_size=128256, tie_word_embeddings=False),
    "Qwen2.5-7B": dict(model_type="qwen2", hidden_size=3584, num_hidden_layers=28,
                       num_attention_heads=28, num_key_value_heads=4, intermediate_size=18944,
                       vocab_size=152064, tie_word_embeddings=False, use_sliding_window=False,
                       sliding_window=131072, max_window_layers=28),
    "Qwen3-8B": dict(_QWEN3, hidden_size=4096, intermediate_size=12288, tie_word_embeddings=False),
    "Qwen3-4B": dict(_QWEN3, hidden_size=2560, intermediate_size=9728, tie_word_embeddings=True),
    "Qwen3-30B-A3B": dict(_QWEN3, model_type="qwen3_moe", hidden_size=2048, num_hidden_layers=48,
                          num_key_value_heads=4, intermediate_size=6144, moe_intermediate_size=768,
                          num_experts=128, num_experts_per_tok=8, decoder_sparse_step=1,
                          mlp_only_layers=[], tie_word_embeddings=False),
    "Qwen1.5-MoE-A2.7B": dict(model_type="qwen2_moe", hidden_size=2048, num_hidden_layers=24,
                              num_attention_heads=16, num_key_value_heads=16,
                              intermediate_size=5632, moe_intermediate_size=1408,
                              shared_expert_intermediate_size=5632, num_experts=60,
                              num_experts_per_tok=4, decoder_sparse_step=1, mlp_only_layers=[],
                              vocab_size=151936, tie_word_embeddings=False),
    "DeepSeek-V3": DEEPSEEK_V3,
    "DeepSeek-V3 (no MTP)": dict(DEEPSEEK_V3, num_nextn_predict_layers=0),
    "Gemma-3-4B": dict(model_type="gemma3_text", hidden_size=2560, num_hidden_layers=34,
                       num_attention_heads=8, num_key_value_heads=4, head_dim=256,
                       intermediate_size=10240, vocab_size=262208, sliding_window=1024,
                       layer_types=["sliding_attention" if (i + 1) % 6 else "full_attention"
                                    for i in range(34)],
                       query_pre_attn_scalar=256, tie_word_embeddings=True),
    "gpt-oss-20b": dict(model_type="gpt_oss", hidden_size=2880, num_hidden_layers=24,
                        num_attention_heads=64, num_key_value_heads=8, head_dim=64,
                        intermediate_size=2880, num_local_experts=32, num_experts_per_tok=4,
                        vocab_size=201088, sliding_window=128,
                        layer_types=["sliding_attention", "full_attention"] * 12,
                        tie_word_embeddings=False),
    "Mixtral-8x7B": dict(model_type="mixtral", hidden_size=4096, num_hidden_layers=32,
                         num_attention_heads=32, num_key_value_heads=8, intermediate_size=14336,
                         num_local_experts=8, num_experts_per_tok=2, vocab_size=32000,
                         sliding_window=None, tie_word_embeddings=False),
    "Seed-OSS-36B": dict(model_type="seed_oss", hidden_size=5120, num_hidden_layers=64,
                         num_attention_heads=80, num_key_value_heads=8, head_dim=128,
                         intermediate_size=27648, vocab_size=155136, attention_bias=True,
                         attention_out_bias=False, mlp_bias=False, tie_word_embeddings=False),
    "Mistral-7B-v0.1": dict(model_type="mistral", hidden_size=4096, num_hidden_layers=32,
                            num_attention_heads=32, num_key_value_heads=8,
                            intermediate_size=14336, vocab_size=32000, sliding_window=4096,
                            tie_word_embeddings=False),
    "GPT-2": dict(model_type="gpt2", n_embd=768, n_layer=12, n_head=12, n_positions=1024,
                  vocab_size=50257),
}
# GPT-2's positions end at 1024: its uniform batch is 4 x 1024
GPT2_UNIFORM = [1024] * 4


def hf_config(config):
    """The transformers config object of a config dict (what the frameworks read)."""
    fields = {k: v for k, v in config.items() if k != "model_type"}
    return transformers.AutoConfig.for_model(config["model_type"], **fields)


def theirs(convention, config, lengths, quick_geglu=None):
    """The framework's own count, or None where it has no formula."""
    c = hf_config(config)
    if convention == "verl":
        f = fw.VERL.get(c.model_type)
        return None if f is None else f(c, lengths)
    if convention == "veomni":
        f = fw.VEOMNI.get(c.model_type)
        return None if f is None else f(c, lengths)
    quick = c.model_type == "gpt_oss" if quick_geglu is None else quick_geglu
    return fw.megatron(fw.megatron_args(c, quick_geglu=quick), lengths)


def _lengths(name, batch):
    return GPT2_UNIFORM if name == "GPT-2" and batch == "uniform" else BATCHES[batch]


def ours(convention, config, lengths):
    if len(set(lengths)) == 1:
        return transformer_flops(config, seq_len=lengths[0], batch_size=len(lengths),
                                 convention=convention)
    return transformer_flops(config, seq_lens=lengths, convention=convention)


GRID = [(conv, name, batch) for conv in ("verl", "veomni", "megatron") for name in CONFIGS
        for batch in BATCHES]


@pytest.mark.parametrize("convention, name, batch", GRID,
                         ids=[f"{c}-{n}-{b}" for c, n, b in GRID])
def test_preset_equals_the_framework_on_real_configs(convention, name, batch):
    config, lengths = CONFIGS[name], _lengths(name, batch)
    expected = theirs(convention, config, lengths)
    if expected is None:
        with pytest.raises(ValueError, match="logs MFU 0"):
            ours(convention, config, lengths)
        return
    f = ours(convention, config, lengths)
    assert f.model_flops / expected == pytest.approx(1.0, abs=1e-13)
    info = f.conventions["convention"]
    items = sum(d["delta_flops"] for d in info["difference"])
    assert info["ours_model_flops"] + items == pytest.approx(f.model_flops, rel=1e-12)


def test_the_grid_covers_what_each_framework_counts():
    """verl counts 12 of the 14 configs (not Mixtral, not GPT-2), VeOmni 9
    (not Mistral, Gemma 3, Qwen1.5-MoE, Mixtral, GPT-2), Megatron-LM all."""
    counted = {conv: [n for n in CONFIGS if theirs(conv, CONFIGS[n], [16]) is not None]
               for conv in ("verl", "veomni", "megatron")}
    assert len(counted["verl"]) == 12 and "Mixtral-8x7B" not in counted["verl"]
    assert len(counted["veomni"]) == 9 and "Mistral-7B-v0.1" not in counted["veomni"]
    assert len(counted["megatron"]) == 14
