"""The analytic count on every family people train, against the exact count.

Each model type is built small from its transformers config (CPU, eager
attention, the config also saved as transformers 5 writes it), one
forward + backward is counted by FlopCounter, and:

* inside every window (S_IN = the window), analytic model FLOPs
  (``formula="matmul"``) equal the counter's model FLOPs (the brief asks
  0.5%; every family but the two noted below is exact), and the parameter
  count equals ``model.num_parameters()``;
* beyond the window (S_OUT), the counter counts the full square under the
  mask (eager attention; what ran), the analytic count the window: the
  difference is the masked pairs, written by hand below;
* the VLMs (Qwen2.5-VL, Qwen3-VL) with one image are counted exactly;
* ``mfu-tracker estimate --model`` and ``profile --model`` read each saved
  config (no dtype in it).

Noted: transformers' Llama 4 MoE runs every expert on every token, so its
count equals the analytic count with ``experts_per_token = num_experts``;
DeepSeek-V3 / GLM-4.5 configs declare an MTP layer transformers does not
build, compared with ``num_mtp_layers=0``.
"""
from __future__ import annotations

import functools
import json
import re

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from mfu_tracker.cli import main  # noqa: E402
from mfu_tracker.counter import FlopCounter  # noqa: E402
from mfu_tracker.flops import transformer_flops  # noqa: E402

B = 2                # sequences per batch
W = 16               # every sliding window and attention chunk
S_IN, S_OUT = 16, 40  # inside every window; beyond it
PAIR = 4 * 4 * 16    # attention FLOPs per (query, key) pair: 2 * H * (Q + Q), H 4, Q 16

SMALL = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
             intermediate_size=96, vocab_size=128, pad_token_id=0, eos_token_id=1, bos_token_id=2)
MOE = dict(num_experts_per_tok=2, moe_intermediate_size=32)
DEEPSEEK_MOE = dict(n_routed_experts=4, **MOE, first_k_dense_replace=1, n_group=1, topk_group=1,
                    num_hidden_layers=3, num_nextn_predict_layers=1)

# model_type -> config fields over SMALL
FAMILIES = {
    "gpt2": dict(n_embd=64, n_layer=2, n_head=4, n_positions=64, vocab_size=128,
                 eos_token_id=1, bos_token_id=2),
    "llama": dict(),
    "mistral": dict(sliding_window=W),
    "phi3": dict(sliding_window=W),
    "qwen2": dict(use_sliding_window=True, sliding_window=W, max_window_layers=1),
    "qwen3": dict(head_dim=16),
    "gemma2": dict(head_dim=16, sliding_window=W),
    "gemma3_text": dict(head_dim=16, sliding_window=W,
                        layer_types=["sliding_attention", "full_attention"]),
    "olmo2": dict(),
    "mixtral": dict(num_local_experts=4, num_experts_per_tok=2),
    "qwen2_moe": dict(num_experts=4, **MOE, shared_expert_intermediate_size=48,
                      mlp_only_layers=[1]),
    "qwen3_moe": dict(num_experts=4, **MOE, head_dim=16, decoder_sparse_step=2),
    "gpt_oss": dict(head_dim=16, num_local_experts=4, num_experts_per_tok=2, sliding_window=W),
    "deepseek_v3": dict(DEEPSEEK_MOE, num_key_value_heads=4, kv_lora_rank=16, q_lora_rank=24,
                        qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16),
    "glm4_moe": dict(DEEPSEEK_MOE, head_dim=16, use_qk_norm=True, attention_bias=True),
    "llama4_text": dict(num_local_experts=4, num_experts_per_tok=1, intermediate_size_mlp=80,
                        head_dim=16, num_hidden_layers=4, interleave_moe_layer_step=2,
                        attention_chunk_size=W),
    "qwen3_next": dict(num_experts=4, **MOE, shared_expert_intermediate_size=48, head_dim=16,
                       linear_key_head_dim=8, linear_value_head_dim=12, linear_num_key_heads=2,
                       linear_num_value_heads=4, num_hidden_layers=4),
    "mamba2": dict(num_heads=8, head_dim=16, state_size=8, n_groups=2, expand=2, chunk_size=8),
}

# Analytic keywords that match what transformers builds and runs.
AS_RUN = {
    "deepseek_v3": dict(num_mtp_layers=0),  # no MTP layer built
    "glm4_moe": dict(num_mtp_layers=0),
    "llama4_text": dict(experts_per_token=4),  # every expert on every token
}


@functools.lru_cache(maxsize=None)
def _built(model_type: str):
    """(config object, saved config dict, model), built once per module run."""
    fields = FAMILIES[model_type] if model_type == "gpt2" else {**SMALL, **FAMILIES[model_type]}
    config = transformers.AutoConfig.for_model(model_type, **fields)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    saved = json.loads(config.to_json_string())  # what save_pretrained writes
    return config, saved, model


@functools.lru_cache(maxsize=None)
def _counted(model_type: str, seq_len: int) -> int:
    """The exact count of one forward + backward of B sequences."""
    _, saved, model = _built(model_type)
    ids = torch.randint(0, 128, (B, seq_len), generator=torch.Generator().manual_seed(0))
    with FlopCounter() as fc:
        model(input_ids=ids, labels=ids).loss.backward()
    assert fc.errors == 0
    return fc.model_flops


@pytest.mark.parametrize("model_type", sorted(FAMILIES))
def test_analytic_equals_the_exact_count_inside_the_window(model_type):
    config, saved, model = _built(model_type)
    counted = _counted(model_type, S_IN)
    extra = AS_RUN.get(model_type, {})
    a = transformer_flops(saved, seq_len=S_IN, batch_size=B, formula="matmul", **extra)
    b = transformer_flops(config, seq_len=S_IN, batch_size=B, formula="matmul", **extra)
    assert a.model_flops == b.model_flops
    assert abs(a.model_flops - counted) <= 0.005 * counted  # the brief's 0.5%
    assert a.model_flops == counted                        # and in fact exact
    assert a.num_params == model.num_parameters()
    assert a.conventions["model_type"] == model_type


def test_llama4_counts_active_experts_the_implementation_runs_all():
    _, saved, _ = _built("llama4_text")
    active = transformer_flops(saved, seq_len=S_IN, batch_size=B, formula="matmul")
    every = transformer_flops(saved, seq_len=S_IN, batch_size=B, formula="matmul",
                              experts_per_token=4)
    # 2 MoE layers (interleave step 2 of 4), 3 more experts of 3 * 64 * 96
    # weights each (gate, up, down at width 96), 6 FLOPs per weight per
    # token, 32 tokens: 6 * 32 * 2 * 3 * 18,432 = 21,233,664
    assert every.model_flops - active.model_flops == 6 * 32 * 2 * 3 * (3 * 64 * 96) == 21_233_664
    assert _counted("llama4_text", S_IN) == every.model_flops


@pytest.mark.parametrize("model_type", ["deepseek_v3", "glm4_moe"])
def test_mtp_layer_is_counted_when_the_config_declares_it(model_type):
    _, saved, _ = _built(model_type)
    with_mtp = transformer_flops(saved, seq_len=S_IN, batch_size=B, formula="matmul")
    without = transformer_flops(saved, seq_len=S_IN, batch_size=B, formula="matmul",
                                num_mtp_layers=0)
    layers = transformer_flops(saved, seq_len=S_IN, batch_size=B, formula="matmul",
                               num_mtp_layers=0, num_layers=4, num_dense_layers=1)
    # one MTP module: one more MoE decoder layer (what a 4th layer adds), the
    # eh_proj [2d -> d] = 2 * 64 * 64 weights and a second lm_head 128 * 64,
    # at 6 FLOPs per weight per token (32 tokens)
    extra = 6 * 32 * (2 * 64 * 64 + 128 * 64)
    assert with_mtp.model_flops - without.model_flops == \
        (layers.model_flops - without.model_flops) + extra


# (model_type, windowed layers, span): the layers the window applies to
WINDOWED = [
    ("mistral", 2, "sliding"), ("phi3", 2, "sliding"), ("qwen2", 1, "sliding"),
    ("gemma2", 1, "sliding"), ("gemma3_text", 1, "sliding"), ("gpt_oss", 1, "sliding"),
    ("llama4_text", 3, "chunked"),
]


def _masked_pairs(span: str, s: int, w: int) -> int:
    """Pairs a full-square kernel computes that the window excludes, per
    sequence: sliding s^2 - s*w; chunked s^2 - sum over chunks len^2."""
    if span == "sliding":
        return s * s - s * w
    whole, rest = divmod(s, w)
    return s * s - (whole * w * w + rest * rest)


@pytest.mark.parametrize("model_type, layers, span", WINDOWED)
def test_beyond_the_window_the_window_rule_by_hand(model_type, layers, span):
    _, saved, _ = _built(model_type)
    extra = AS_RUN.get(model_type, {})
    analytic = transformer_flops(saved, seq_len=S_OUT, batch_size=B, formula="matmul", **extra)
    # mistral: 2 layers, 2 sequences of 40, window 16: 1,600 - 640 = 960
    # masked pairs each, model = 3x forward: 3 * 256 * 2 * 2 * 960 = 2,949,120;
    # llama4 chunks of 16: 40 = 16 + 16 + 8 -> 1,600 - 576 = 1,024 per layer
    assert _masked_pairs("sliding", 40, 16) == 960 and _masked_pairs("chunked", 40, 16) == 1024
    masked = 3 * PAIR * layers * B * _masked_pairs(span, S_OUT, W)
    assert _counted(model_type, S_OUT) - analytic.model_flops == masked
    assert analytic.conventions["windows"] == {span: W}


def test_half_convention_counts_the_unmasked_pairs():
    _, saved, _ = _built("mistral")
    half = transformer_flops(saved, seq_len=S_OUT, batch_size=B, formula="matmul",
                             causal_attention="half")
    # sum over 40 queries of min(p + 1, 16) = 1 + ... + 16 + 24 * 16 = 136 + 384 = 520
    # pairs per sequence and layer; 2 layers, 2 sequences, 256 FLOPs a pair
    assert half.attention_flops == PAIR * 2 * B * 520
    _, saved, _ = _built("llama4_text")
    half = transformer_flops(saved, seq_len=S_OUT, batch_size=B, formula="matmul",
                             causal_attention="half")
    full = transformer_flops(saved, seq_len=S_OUT, batch_size=B, formula="matmul")
    # chunks 16, 16, 8: 136 + 136 + 36 = 308 pairs (half) against 576 (full) per
    # chunked layer (3 of them); the one full layer: 1,600 / 2 = 800 against 1,600
    assert half.attention_flops == PAIR * B * (3 * 308 + 800)
    assert full.attention_flops == PAIR * B * (3 * 576 + 1600)
    assert "Σ len·(len+1)/2 per chunk" in half.conventions_str


def test_scan_flops_by_hand():
    _, saved, _ = _built("mamba2")
    f = transformer_flops(saved, seq_len=S_IN, batch_size=B, formula="matmul")
    # SSD, chunk 8, 16 tokens = 2 chunks, 8 heads of P 16, N 8 (2 groups):
    # per head and chunk 2*64*8 + 2*64*16 + 4*8*16*8 = 7,168; x 2 chunks x 8
    # heads x 2 sequences = 229,376; state pass 2*(2+1)^2*16*8 = 2,304 per
    # head and sequence -> 36,864; 266,240 per layer, 2 layers
    assert f.scan_flops == 2 * (229_376 + 36_864)


# ---------------------------------------------------------------------------
# VLMs: Qwen2.5-VL and Qwen3-VL, one image, counted exactly
# ---------------------------------------------------------------------------

VLM_TEXT = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                intermediate_size=96, vocab_size=160, head_dim=16,
                rope_parameters={"rope_type": "default", "rope_theta": 1e4,
                                 "mrope_section": [2, 3, 3]})
VISION = dict(depth=3, hidden_size=32, intermediate_size=48, num_heads=2, patch_size=4,
              spatial_merge_size=2, temporal_patch_size=2, out_hidden_size=64)
TOKENS = dict(image_token_id=150, video_token_id=151, vision_start_token_id=152,
              vision_end_token_id=153)
GRID = [[1, 12, 20]]  # 240 patches, 60 image tokens; merged grid 6 x 10
S_VLM = 96


def _vlm(kind: str):
    if kind == "qwen2_5_vl":
        vision = dict(VISION, window_size=16, fullatt_block_indexes=[1])  # windows of 2x2
        config = transformers.Qwen2_5_VLConfig(text_config=VLM_TEXT, vision_config=vision,
                                               **TOKENS)
    else:
        text = dict(VLM_TEXT, rope_parameters=dict(VLM_TEXT["rope_parameters"],
                                                  mrope_interleaved=True))
        vision = dict(VISION, num_position_embeddings=64, deepstack_visual_indexes=[1])
        config = transformers.Qwen3VLConfig(text_config=text, vision_config=vision, **TOKENS)
    torch.manual_seed(0)
    model = transformers.AutoModelForImageTextToText.from_config(config,
                                                                 attn_implementation="eager")
    return config, model


def _vlm_batch():
    ids = torch.randint(0, 140, (1, S_VLM), generator=torch.Generator().manual_seed(0))
    ids[0, 5], ids[0, 6:66], ids[0, 66] = 152, 150, 153
    pixels = torch.randn(240, 3 * 2 * 4 * 4, generator=torch.Generator().manual_seed(1))
    return ids, pixels


@pytest.mark.parametrize("kind", ["qwen2_5_vl", "qwen3_vl"])
def test_vlm_step_with_one_image_matches_the_analytic_count(kind):
    config, model = _vlm(kind)
    ids, pixels = _vlm_batch()
    extra = {}
    if kind == "qwen3_vl":
        extra["mm_token_type_ids"] = (ids == 150).long()
    with FlopCounter() as fc:
        model(input_ids=ids, labels=ids, pixel_values=pixels,
              image_grid_thw=torch.tensor(GRID), **extra).loss.backward()
    saved = json.loads(config.to_json_string())
    f = transformer_flops(saved, seq_len=S_VLM, image_grid_thw=torch.tensor(GRID),
                          formula="matmul")
    assert abs(f.model_flops - fc.model_flops) <= 0.005 * fc.model_flops  # the brief's 0.5%
    assert f.model_flops == fc.model_flops                                # exact
    text_only = transformer_flops(saved, seq_len=S_VLM, formula="matmul")
    assert f.language_flops == text_only.model_flops
    assert f.vision_flops == f.model_flops - f.language_flops > 0
    assert f.num_params == text_only.num_params == model.num_parameters()
    assert "1 image(s)" in f.conventions_str


def test_qwen2_5_vl_vision_tower_by_hand():
    config, _ = _vlm("qwen2_5_vl")
    f = transformer_flops(json.loads(config.to_json_string()), seq_len=S_VLM,
                          image_grid_thw=GRID, formula="matmul")
    # P = 240 patches, D 32, I 48; patch embed 32 * 3*2*4*4 = 3,072 weights:
    # forward 2 * 240 * 3,072 = 1,474,560, model 2x (pixels need no gradient)
    patch = 2 * 240 * 3072
    # blocks: qkv + proj 4 * 32^2 + SwiGLU 3 * 32 * 48 = 8,704 weights, 3 blocks
    blocks = 3 * 2 * 240 * 8704
    # attention, 2 * 2D = 128 FLOPs a pair: the full block 240^2 = 57,600
    # pairs; 2 windowed blocks, windows of 16/2/4 = 2 merged tokens on the
    # 6 x 10 merged grid: 3 x 5 windows of 2 x 2 = 16 patches: 15 * 256
    attention = 128 * (57_600 + 2 * 15 * 256)
    # merger 128 -> 128 -> 64 on 60 merged tokens
    merger = 2 * 60 * (128 * 128 + 128 * 64)
    assert f.vision_flops == 2 * patch + 3 * (blocks + attention + merger)


# ---------------------------------------------------------------------------
# The command line on every saved config
# ---------------------------------------------------------------------------

def _line(out: str, label: str) -> str:
    match = re.search(rf"^{re.escape(label)}\s+(.*)$", out, re.M)
    assert match, (label, out)
    return match.group(1)


@pytest.mark.parametrize("model_type", sorted(FAMILIES))
def test_estimate_and_profile_read_a_transformers_5_saved_config(model_type, tmp_path, capsys):
    config, saved, _ = _built(model_type)
    config.save_pretrained(tmp_path)  # config.json as transformers 5 writes it: no dtype
    assert "dtype" not in json.loads((tmp_path / "config.json").read_text())
    tps = 1e9
    assert main(["estimate", "--model", str(tmp_path), "--gpu", "H100 SXM", "--seq-len", "16",
                 "--tokens-per-sec", str(tps)]) == 0
    out = capsys.readouterr().out
    palm = transformer_flops(saved, seq_len=16)
    # MFU = FLOP/token x tokens/s / 989.4 TFLOP/s (H100 SXM dense bf16)
    assert _line(out, "MFU:") == f"{100 * palm.flops_per_token * tps / 989.4e12:.2f}%"
    assert main(["profile", "--model", str(tmp_path), "--seq-len", "16"]) == 0
    out = capsys.readouterr().out
    ratio = float(re.search(r"analytic \(matmul\):.*counted / analytic = ([\d.]+)", out).group(1))
    # Llama 4: every expert runs (test_llama4_counts_active_experts_...):
    # (32,735,232 + 21,233,664) / 32,735,232 at any batch of 16 tokens
    expected = (32_735_232 + 21_233_664) / 32_735_232 if model_type == "llama4_text" else 1.0
    assert ratio == pytest.approx(expected, abs=1e-6)


def test_estimate_of_a_vlm_prints_both_mfus(capsys):
    assert main(["estimate", "--model", "qwen2.5-vl-7b", "--gpu", "A800 SXM4 80GB", "--num-gpus", "32",
                 "--seq-len", "2560", "--image-grid", "1,64,64", "--tokens-per-sec",
                 "100000"]) == 0
    out = capsys.readouterr().out
    f = transformer_flops(__import__("mfu_tracker").presets.load_preset("qwen2.5-vl-7b"),
                          seq_len=2560, image_grid_thw=[[1, 64, 64]])
    # per GPU: FLOP/token x 100,000 / 32 / 312 TFLOP/s (A800 dense bf16)
    assert _line(out, "MFU:") == f"{100 * f.model_flops / 2560 * 1e5 / 32 / 312e12:.2f}%"
    assert _line(out, "MFU (language only):").startswith(
        f"{100 * f.language_flops / 2560 * 1e5 / 32 / 312e12:.2f}%")


def test_estimate_reads_org_name_from_the_local_hf_cache(tmp_path, monkeypatch, capsys):
    _, saved, _ = _built("qwen3_moe")
    repo = tmp_path / "hub" / "models--acme--tiny-moe"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("c0ffee")
    (repo / "snapshots" / "c0ffee").mkdir(parents=True)
    (repo / "snapshots" / "c0ffee" / "config.json").write_text(json.dumps(saved))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    assert main(["estimate", "--model", "acme/tiny-moe", "--gpu", "H100 SXM", "--seq-len", "16",
                 "--tokens-per-sec", "1e9"]) == 0
    out = capsys.readouterr().out
    palm = transformer_flops(saved, seq_len=16)
    assert _line(out, "MFU:") == f"{100 * palm.flops_per_token * 1e9 / 989.4e12:.2f}%"
    # without refs/main: the newest snapshot holding a config
    (repo / "refs" / "main").unlink()
    from mfu_tracker.presets import resolve_model_config

    assert resolve_model_config("acme/tiny-moe") == saved
    assert main(["estimate", "--model", "acme/absent", "--gpu", "H100 SXM", "--seq-len", "16",
                 "--tokens-per-sec", "1e9"]) == 2
    assert "HF cache" in capsys.readouterr().err


def test_estimate_falls_back_to_the_exact_meta_count_for_an_unknown_type(tmp_path, capsys):
    fields = dict(SMALL, num_key_value_heads=4)
    config = transformers.AutoConfig.for_model("stablelm", **fields)
    config.save_pretrained(tmp_path)
    assert main(["estimate", "--model", str(tmp_path), "--gpu", "H100 SXM", "--seq-len", "16",
                 "--tokens-per-sec", "1e9"]) == 0
    out = capsys.readouterr().out
    assert "has no analytic formula: counted exactly instead" in out
    # the same step counted on a real (CPU) model of the config
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="sdpa")
    ids = torch.zeros(1, 16, dtype=torch.long)
    with FlopCounter() as fc:
        model(input_ids=ids).logits.float().sum().backward()
    assert _line(out, "MFU:") == f"{100 * fc.model_flops / 16 * 1e9 / 989.4e12:.2f}%"
