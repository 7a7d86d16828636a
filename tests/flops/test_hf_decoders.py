"""The analytic count on the dense and MoE decoder families of the C core's
``family_dense.c`` / ``family_moe.c``, against the exact count.

Each model type is built small from its transformers config (CPU, eager
attention; the config also as ``save_pretrained`` writes it), one forward +
backward is counted by FlopCounter, and:

* inside every window (S_IN = the window) the analytic model FLOPs
  (``formula="matmul"``) equal the counter's, and the parameter count equals
  ``model.num_parameters()``;
* beyond the window (S_OUT) the counter counts the full square under the
  mask (eager attention: what ran), the analytic count the window; the
  difference is the masked pairs, by hand below (0 without a window);
* a config without ``layer_types`` (as older transformers saved it) reads
  the same layers as the one transformers fills in;
* ``mfu-tracker estimate`` and ``profile`` take the analytic path on each
  saved config.

The configs switch on what the defaults leave off where it changes the count
(biases with use_bias / attention_out_bias, PhiMoE's lm_head bias, windows,
dense layers before the MoE ones, shared experts).
"""
from __future__ import annotations

import functools
import json
import re

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from _cli import field, run_cli  # noqa: E402
from mfu_tracker.counter import FlopCounter  # noqa: E402
from mfu_tracker.flops import transformer_flops  # noqa: E402

B = 2                 # sequences per batch
W = 16                # every sliding window
S_IN, S_OUT = 16, 40  # inside every window; beyond it
PAIR = 4 * 4 * 16     # attention FLOPs per (query, key) pair: 2 * H * (Q + Q), H 4, Q 16

SMALL = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
             intermediate_size=96, vocab_size=128, pad_token_id=0, eos_token_id=1, bos_token_id=2)
EXPERTS = dict(num_experts_per_tok=2, moe_intermediate_size=32)

# model_type -> (config fields over SMALL, sliding layers among them)
FAMILIES = {
    # dense
    # NoPE (so sliding) every 3rd layer of 3; every pattern below leaves
    # a different number of windowed layers when read backwards
    "smollm3": (dict(use_sliding_window=True, sliding_window=W, no_rope_layer_interval=3,
                     num_hidden_layers=3), 1),
    "olmo3": (dict(sliding_window=W, num_hidden_layers=4), 3),  # 3 sliding, then full
    "ministral3": (dict(head_dim=16, sliding_window=W), 2),
    "seed_oss": (dict(head_dim=16, attention_out_bias=True), 0),
    "glm4": (dict(head_dim=16), 0),
    "gemma": (dict(head_dim=16), 0),
    "ernie4_5": (dict(head_dim=16, use_bias=True), 0),
    "exaone4": (dict(sliding_window=W, sliding_window_pattern=3, num_hidden_layers=3), 2),
    "cohere2": (dict(sliding_window=W, sliding_window_pattern=3, num_hidden_layers=3), 2),
    "apertus": (dict(), 0),
    "arcee": (dict(), 0),
    "starcoder2": (dict(sliding_window=W), 2),
    # mixture of experts
    "olmoe": (dict(num_experts=4, num_experts_per_tok=2), 0),
    "minimax_m2": (dict(head_dim=16, num_local_experts=4, num_experts_per_tok=2), 0),
    "phimoe": (dict(num_local_experts=4, num_experts_per_tok=2, sliding_window=W,
                    lm_head_bias=True), 2),
    "ernie4_5_moe": (dict(head_dim=16, moe_num_experts=4, moe_k=2, moe_intermediate_size=32,
                          moe_num_shared_experts=1, num_hidden_layers=3, use_bias=True), 0),
    "hunyuan_v1_moe": (dict(head_dim=16, num_experts=4, moe_topk=2), 0),
    "dots1": (dict(n_routed_experts=4, **EXPERTS, n_shared_experts=1, first_k_dense_replace=1,
                   num_hidden_layers=3, sliding_window=W, max_window_layers=1), 2),
    "afmoe": (dict(head_dim=16, num_experts=4, **EXPERTS, num_shared_experts=1,
                   num_dense_layers=1, num_hidden_layers=3, sliding_window=W,
                   global_attn_every_n_layers=2, attention_bias=True), 2),
}


def _config(model_type: str, **over):
    return transformers.AutoConfig.for_model(model_type,
                                             **{**SMALL, **FAMILIES[model_type][0], **over})


@functools.lru_cache(maxsize=None)
def _built(model_type: str):
    """(config object, saved config dict, model), built once per module run."""
    config = _config(model_type)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    return config, json.loads(config.to_json_string()), model


def _count(model, seq_len: int) -> int:
    ids = torch.randint(0, 128, (B, seq_len), generator=torch.Generator().manual_seed(0))
    with FlopCounter() as fc:
        model(input_ids=ids, labels=ids).loss.backward()
    assert fc.errors == 0
    return fc.model_flops


@functools.lru_cache(maxsize=None)
def _counted(model_type: str, seq_len: int) -> int:
    return _count(_built(model_type)[2], seq_len)


def _masked_pairs(s: int, w: int) -> int:
    """Pairs a full-square kernel computes that a sliding window of w
    excludes, per sequence of s: s^2 - s*min(s, w)."""
    return s * s - s * min(s, w)


@pytest.mark.parametrize("seq_len", [S_IN, S_OUT])
@pytest.mark.parametrize("model_type", sorted(FAMILIES))
def test_analytic_equals_the_exact_count(model_type, seq_len):
    config, saved, model = _built(model_type)
    sliding = FAMILIES[model_type][1]
    a = transformer_flops(saved, seq_len=seq_len, batch_size=B, formula="matmul")
    b = transformer_flops(config, seq_len=seq_len, batch_size=B, formula="matmul")
    assert a.model_flops == b.model_flops
    # 40 tokens, window 16: 1,600 - 640 = 960 masked pairs per sequence and
    # sliding layer, model = 3x forward: 3 * 256 * 2 * 960 = 1,474,560 each
    assert _masked_pairs(S_OUT, W) == 960 and _masked_pairs(S_IN, W) == 0
    masked = 3 * PAIR * sliding * B * _masked_pairs(seq_len, W)
    assert _counted(model_type, seq_len) - a.model_flops == masked
    assert a.num_params == model.num_parameters()
    assert a.conventions["model_type"] == model_type
    assert dict(a.conventions["windows"]) == ({"sliding": W} if sliding else {})


# Windowed families that fill in layer_types from other keys (each key a
# config may carry, as older versions saved it), and the layers they window.
OLD_KEYS = {
    "smollm3": {}, "olmo3": {}, "exaone4": {}, "dots1": {}, "afmoe": {},
    # Cohere2Config pops its pattern when it builds layer_types
    "cohere2": {"sliding_window_pattern": 3},
}


@pytest.mark.parametrize("model_type", sorted(OLD_KEYS))
def test_a_config_without_layer_types_reads_the_same_layers(model_type):
    _, saved, _ = _built(model_type)
    old = {k: v for k, v in saved.items() if k != "layer_types"}
    old.update(OLD_KEYS[model_type])
    new = transformer_flops(saved, seq_len=S_OUT, batch_size=B, formula="matmul")
    assert transformer_flops(old, seq_len=S_OUT, batch_size=B,
                             formula="matmul").model_flops == new.model_flops
    # and the windowed layers do matter: all full differs
    full = dict(saved, layer_types=["full_attention"] * saved["num_hidden_layers"])
    assert transformer_flops(full, seq_len=S_OUT, batch_size=B,
                             formula="matmul").model_flops > new.model_flops


def test_exaone4_reads_its_older_letter_pattern():
    _, saved, _ = _built("exaone4")
    old = {k: v for k, v in saved.items() if k != "layer_types"}

    def model_flops(config, **dims):
        return transformer_flops(config, seq_len=S_OUT, batch_size=B, formula="matmul",
                                 **dims).model_flops

    # "LLG": layers 0 and 1 local, 2 global, as the saved layer_types
    assert model_flops(dict(old, sliding_window_pattern="LLG")) == model_flops(saved)
    # "LG" repeats: L G L -> 2 local; "LGG": 1 local
    assert model_flops(dict(old, sliding_window_pattern="LG")) == model_flops(saved)
    assert model_flops(dict(old, sliding_window_pattern="LGG")) == \
        model_flops(saved, num_sliding_layers=1) != model_flops(saved)
    none = transformer_flops(dict(old, sliding_window_pattern=0), seq_len=S_OUT, batch_size=B,
                             formula="matmul")
    assert dict(none.conventions["windows"]) == {}


def test_mistral_style_models_window_every_layer_whatever_layer_types_say():
    # Ministral3Model / Starcoder2Model / MixtralModel (PhiMoE) pick the
    # sliding mask from sliding_window alone
    for model_type in ("ministral3", "starcoder2", "phimoe"):
        _, saved, _ = _built(model_type)
        listed = dict(saved, layer_types=["full_attention"] * 2)
        assert transformer_flops(listed, seq_len=S_OUT, batch_size=B).model_flops == \
            transformer_flops(saved, seq_len=S_OUT, batch_size=B).model_flops


# Flags a saved config may leave out (older versions, hand-written configs)
FLAG_KEYS = ("attention_bias", "attention_out_bias", "use_bias", "mlp_bias", "lm_head_bias",
             "tie_word_embeddings", "use_bidirectional_attention")


@pytest.mark.parametrize("model_type", sorted(FAMILIES))
def test_a_config_without_its_flags_reads_the_config_class_defaults(model_type):
    # the C family row starts each flag at the config class's default
    config, saved, _ = _built(model_type)
    keys = [k for k in FLAG_KEYS if k in saved]
    defaults = {k: getattr(type(config), k) for k in keys}
    bare = {k: v for k, v in saved.items() if k not in keys}
    a = transformer_flops(bare, seq_len=S_IN, causal_attention="half")
    b = transformer_flops(dict(saved, **defaults), seq_len=S_IN, causal_attention="half")
    assert (a.num_params, a.model_flops) == (b.num_params, b.model_flops)


def test_ernie_moe_layers_between_start_and_end_every_interval():
    # 4 layers, interval 2 from 1 to 2: experts on layer 1 only
    config = _config("ernie4_5_moe", num_hidden_layers=4, moe_layer_start_index=1,
                     moe_layer_end_index=2, moe_layer_interval=2)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    saved = json.loads(config.to_json_string())
    a = transformer_flops(saved, seq_len=S_IN, batch_size=B, formula="matmul")
    assert a.model_flops == _count(model, S_IN) and a.num_params == model.num_parameters()
    # -1 = to the last layer: experts on layers 1 and 3
    b = transformer_flops(dict(saved, moe_layer_end_index=-1), seq_len=S_IN, batch_size=B,
                          formula="matmul")
    one_more = transformer_flops(saved, seq_len=S_IN, batch_size=B, formula="matmul",
                                 num_dense_layers=2)
    assert b.model_flops == one_more.model_flops != a.model_flops


# ---------------------------------------------------------------------------
# What a family's implementation fixes, by hand or by its count
# ---------------------------------------------------------------------------

def test_phimoe_runs_two_experts_whatever_num_experts_per_tok_says():
    # sparsemixer picks a top-1 and a top-2 expert for every token
    config = _config("phimoe", num_experts_per_tok=1)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    saved = json.loads(config.to_json_string())
    a = transformer_flops(saved, seq_len=S_IN, batch_size=B, formula="matmul")
    assert a.model_flops == _count(model, S_IN) == _counted("phimoe", S_IN)
    one = transformer_flops(saved, seq_len=S_IN, batch_size=B, formula="matmul",
                            experts_per_token=1)
    # one expert fewer: 3 * 64 * 96 weights, 2 layers, 32 tokens, 6 FLOPs each
    assert a.model_flops - one.model_flops == 6 * 32 * 2 * 3 * 64 * 96 == 7_077_888


def test_hunyuan_per_layer_top_k_must_be_one_value():
    config = _config("hunyuan_v1_moe", moe_topk=[2, 2])
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    saved = json.loads(config.to_json_string())
    assert saved["moe_topk"] == [2, 2]
    assert transformer_flops(saved, seq_len=S_IN, batch_size=B,
                             formula="matmul").model_flops == _count(model, S_IN)
    # transformers builds [1, 2] too; one experts_per_token cannot say it
    with pytest.raises(ValueError, match=r"config.moe_topk differs between layers \(\[1, 2\]\)"
                                         r".*count the model exactly"):
        transformer_flops(dict(saved, moe_topk=[1, 2]), seq_len=S_IN)


def test_gemma_bidirectional_attention_is_never_halved():
    config = _config("gemma", use_bidirectional_attention=True)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    saved = json.loads(config.to_json_string())
    full = transformer_flops(saved, seq_len=S_IN, batch_size=B, formula="matmul")
    half = transformer_flops(saved, seq_len=S_IN, batch_size=B, formula="matmul",
                             causal_attention="half")
    assert full.model_flops == half.model_flops == _count(model, S_IN)
    # 256 FLOPs a pair, 16^2 pairs, 2 sequences, 2 layers
    assert half.attention_flops == PAIR * 256 * B * 2 == 262_144
    assert "bidirectional attention" in half.conventions_str
    _, causal, _ = _built("gemma")
    assert transformer_flops(causal, seq_len=S_IN, batch_size=B,
                             causal_attention="half").attention_flops == 262_144 / 2


def _flop_counter_mode(model, seq_len: int) -> int:
    """torch.utils.flop_counter.FlopCounterMode on one forward + backward of
    one sequence: every matmul that ran (eager attention: the full square)."""
    from torch.utils.flop_counter import FlopCounterMode

    ids = torch.randint(3, 100, (1, seq_len), generator=torch.Generator().manual_seed(0))
    with FlopCounterMode(display=False) as mode:
        model(input_ids=ids).logits.float().sum().backward()
    model.zero_grad(set_to_none=True)
    return mode.get_total_flops()


def _bidirectional_pairs(s: int, w: int) -> int:
    """The (query, key) pairs with |q - k| < w, one head, one sequence."""
    return sum(min(q, w - 1) + min(s - 1 - q, w - 1) + 1 for q in range(s))


def test_bidirectional_gemma3_text_is_counted_bidirectional():
    # EmbeddingGemma's type: a saved sliding_window of 8 becomes a window of
    # 8 // 2 + 1 = 5 (|q - k| < 5, 4 keys each side) when transformers builds
    # it; layer 0 slides, layer 1 is full, both bidirectional
    config = transformers.Gemma3TextConfig(
        **dict(SMALL, vocab_size=160), head_dim=16, sliding_window=8,
        layer_types=["sliding_attention", "full_attention"], use_bidirectional_attention=True)
    assert config.sliding_window == 5
    saved = json.loads(config.to_json_string())
    assert saved["sliding_window"] == 8
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    per_pair = 3 * PAIR   # forward + the attention backward (2x), per pair and layer
    for s in (1, 5, 16):
        truth = _flop_counter_mode(model, s)
        for given in (saved, config):      # the saved dict and the built object
            full = transformer_flops(given, seq_len=s, formula="matmul")
            half = transformer_flops(given, seq_len=s, formula="matmul",
                                     causal_attention="half")
            # FlopCounterMode counts the square the eager kernel computes
            # under the mask; the count charges the window's span,
            # s * min(s, 2w - 1) (9 keys), and "half" its kept pairs: the
            # full layer is never halved
            assert truth - full.model_flops == per_pair * (s * s - s * min(s, 9))
            assert truth - half.model_flops == per_pair * (s * s - _bidirectional_pairs(s, 5))
            assert "bidirectional sliding window 5" in full.conventions_str
    # at 16 tokens: 16 * 9 = 144 charged of 256, 124 kept
    assert _bidirectional_pairs(16, 5) == 16 * 9 - 2 * (4 + 3 + 2 + 1) == 124


def test_phimoe_lm_head_bias_is_a_parameter_not_a_matmul():
    _, saved, _ = _built("phimoe")
    unbiased = dict(saved, lm_head_bias=False)
    for formula in ("palm", "6n"):
        # 128 bias terms in N: 6 FLOPs each per token, 32 tokens
        assert transformer_flops(saved, seq_len=S_IN, batch_size=B, formula=formula).model_flops \
            - transformer_flops(unbiased, seq_len=S_IN, batch_size=B,
                                formula=formula).model_flops == 6 * 128 * 32
    assert transformer_flops(saved, seq_len=S_IN, formula="matmul").model_flops == \
        transformer_flops(unbiased, seq_len=S_IN, formula="matmul").model_flops


def test_structure_that_cannot_be_counted_is_refused_by_name():
    _, gemma, _ = _built("gemma")
    with pytest.raises(ValueError, match="bidirectional.*chunked"):
        transformer_flops(gemma, seq_len=S_IN, bidirectional=True, attention_chunk_size=W,
                          num_chunked_layers=1)
    _, afmoe, _ = _built("afmoe")
    with pytest.raises(ValueError, match="attention_gate_proj.*needs attention_gate"):
        transformer_flops(afmoe, seq_len=S_IN, attention_gate=False)


def test_apertus_xielu_scalars_are_parameters():
    _, saved, model = _built("apertus")
    with_act = transformer_flops(saved, seq_len=S_IN)
    relu2 = transformer_flops(dict(saved, hidden_act="relu2"), seq_len=S_IN)
    # alpha_p and alpha_n in each of 2 layers' MLPs
    assert with_act.num_params - relu2.num_params == 2 * 2
    assert sum(p.numel() for n, p in model.named_parameters() if "act_fn" in n) == 4


def test_afmoe_lora_is_refused_naming_the_separate_gate():
    _, saved, _ = _built("afmoe")
    with pytest.raises(ValueError, match="lora_rank.*separate attention gate_proj"):
        transformer_flops(saved, seq_len=S_IN, lora_rank=8)


# ---------------------------------------------------------------------------
# The command line takes the analytic path on every saved config
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("model_type", sorted(FAMILIES))
def test_estimate_and_profile_read_the_saved_config(model_type, tmp_path, capsys):
    config, saved, _ = _built(model_type)
    config.save_pretrained(tmp_path)
    status, out, _ = run_cli(capsys, "estimate", "--model", str(tmp_path), "--gpu", "H100 SXM",
                             "--seq-len", "16", "--tokens-per-sec", "1e9")
    assert status == 0 and "counted exactly instead" not in out
    palm = transformer_flops(saved, seq_len=16)
    # MFU = FLOP/token x 1e9 tokens/s / 989.4 TFLOP/s (H100 SXM dense bf16)
    assert field(out, "MFU") == f"{100 * palm.flops_per_token * 1e9 / 989.4e12:.2f}%"
    status, out, _ = run_cli(capsys, "profile", "--model", str(tmp_path), "--seq-len", "16")
    assert status == 0
    ratio = float(re.search(r"analytic \(matmul\):.*counted / analytic = ([\d.]+)", out).group(1))
    assert ratio == pytest.approx(1.0, abs=1e-6)


def test_moe_layers_reads_the_familys_rule():
    import types as _types

    from mfu_tracker.flops import _hf_decoders

    every = _types.SimpleNamespace(moe="all")
    assert _hf_decoders.moe_layers(None, every, 5) == 5
    per_layer = _types.SimpleNamespace(moe=lambda cfg, i: i % 2 == 1)  # odd layers: 1, 3
    assert _hf_decoders.moe_layers(None, per_layer, 5) == 2
