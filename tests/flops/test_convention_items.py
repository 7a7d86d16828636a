"""Each quirk of a framework's formula, by name: the preset against the
hand transcription of the framework's function (``_framework_formulas.py``:
file, line and commit), the quirk's item against hand arithmetic written
beside it, and the refusals where a framework has no formula for a model
type. Real-size configs (``test_convention_grid.CONFIGS`` and Qwen3-VL-4B
below), whose head_dim differs from hidden_size / num_heads where a quirk
turns on it.
"""
from __future__ import annotations

import json

import pytest

import _framework_formulas as fw
from mfu_tracker import transformer_flops
from mfu_tracker.cli import main
from mfu_tracker.flops.presets import resolve_model_config
from test_convention_grid import CONFIGS, PACKED, hf_config

T = sum(PACKED)                      # 8,192 tokens
SQ = sum(s * s for s in PACKED)      # sum of s^2 over the packed batch

QWEN3_VL_4B = dict(
    model_type="qwen3_vl", tie_word_embeddings=True,
    text_config=dict(model_type="qwen3_vl_text", hidden_size=2560, num_hidden_layers=36,
                     num_attention_heads=32, num_key_value_heads=8, head_dim=128,
                     intermediate_size=9728, vocab_size=151936, tie_word_embeddings=True),
    vision_config=dict(model_type="qwen3_vl", depth=24, hidden_size=1024, intermediate_size=4096,
                       num_heads=16, in_channels=3, patch_size=16, spatial_merge_size=2,
                       temporal_patch_size=2, out_hidden_size=2560, num_position_embeddings=2304,
                       deepstack_visual_indexes=[5, 11, 17]))
GRIDS = [[1, 32, 32], [2, 16, 24]]   # an image of 32 x 32 patches, a 2-frame video


def _items(f):
    return {d["item"]: d for d in f.conventions["convention"]["difference"]}


def _count(config, convention, **kwargs):
    return transformer_flops(config, seq_lens=PACKED, convention=convention, **kwargs)


def test_verl_leaves_out_the_qwen2_moe_shared_expert():
    cfg = CONFIGS["Qwen1.5-MoE-A2.7B"]
    f = _count(cfg, "verl")
    assert f.model_flops == pytest.approx(fw.verl_qwen2_moe(hf_config(cfg), PACKED), rel=1e-13)
    item = _items(f)["no_shared_expert"]
    # the shared expert 3 x 2048 x 5632 and its gate 2048 on 24 layers, 6 FLOPs
    # a weight a token: -6 x 8,192 x 24 x (34,603,008 + 2,048)
    assert item["delta_flops"] == -6 * T * 24 * (3 * 2048 * 5632 + 2048)
    assert item["kind"] == "quirk" and item["meaning"].startswith("verl leaves out the shared")
    assert item["source"] == "verl/utils/flops_counter.py:335 @ b178a3c"


def test_estimate_under_verl_shows_the_mfu_verl_logs(capsys, tmp_path):
    """A 1 s step of 4 x 2048 tokens at 989 TFLOP/s: verl logs its count over
    the peak, 9.74%."""
    verl = fw.verl_qwen2_moe(hf_config(CONFIGS["Qwen1.5-MoE-A2.7B"]), [2048] * 4)
    assert f"{100 * verl / 989e12:.2f}" == "9.74"
    path = _config_file(CONFIGS["Qwen1.5-MoE-A2.7B"], tmp_path)
    assert main(["estimate", "--model", path, "--seq-len", "2048", "--batch-size", "4",
                 "--step-time", "1", "--peak-tflops", "989", "--convention", "verl"]) == 0
    assert "MFU:                   9.74%" in capsys.readouterr().out


@pytest.mark.parametrize("convention, formula", [("verl", fw.verl_qwen2_moe),
                                                  ("veomni", fw.veomni_qwen3_moe)])
def test_verl_and_veomni_count_every_qwen3_moe_layer_as_moe(convention, formula):
    cfg = dict(CONFIGS["Qwen3-30B-A3B"], mlp_only_layers=[0, 1])  # two dense layers
    f = _count(cfg, convention)
    assert f.model_flops == pytest.approx(formula(hf_config(cfg), PACKED), rel=1e-13)
    # each dense layer's 3 x 2048 x 6144 MLP becomes the router 2048 x 128 +
    # 8 experts of 3 x 2048 x 768 (the same 37,748,736): 262,144 more a layer
    assert _items(f)["every_layer_moe"]["delta_flops"] == 6 * T * 2 * 2048 * 128


def test_verl_qwen3_vl_takes_head_dim_from_hidden_size_and_its_vit_estimate():
    c = hf_config(QWEN3_VL_4B)
    f = _count(QWEN3_VL_4B, "verl")
    assert f.model_flops == pytest.approx(fw.verl_qwen3_vl(c, PACKED), rel=1e-13)
    # 2560 // 32 = 80, not 128: q, k, v, o shrink by 48 per head (32 q + 2 x 8
    # kv + 32 o heads x 2560 x 48) and the core 6 x SQ x 32 x 36 by 48 (half)
    item = _items(f)["head_dim_from_hidden"]
    assert item["delta_flops"] == -(6 * T * 36 * 2560 * (32 + 16 + 32) * 48 +
                                    6 * SQ * 32 * 36 * 48)
    with_images = _count(QWEN3_VL_4B, "verl", image_grid_thw=GRIDS)
    assert with_images.model_flops == pytest.approx(fw.verl_qwen3_vl(c, PACKED, GRIDS),
                                                    rel=1e-13)
    assert "vit_estimate" in _items(with_images)


def test_veomni_vl_towers_by_its_vit_estimates():
    c = hf_config(QWEN3_VL_4B)
    f = _count(QWEN3_VL_4B, "veomni", image_grid_thw=GRIDS)
    assert f.model_flops == pytest.approx(fw.veomni_vl(c, PACKED, GRIDS), rel=1e-13)
    qwen25 = resolve_model_config("qwen2.5-vl-7b")
    f = _count(qwen25, "veomni", image_grid_thw=GRIDS)
    assert f.model_flops == pytest.approx(fw.veomni_vl(hf_config(qwen25), PACKED, GRIDS),
                                          rel=1e-13)
    # verl's qwen2_5_vl formula is the text one: no tower
    f = _count(qwen25, "verl", image_grid_thw=GRIDS)
    assert f.model_flops == pytest.approx(fw.verl_qwen2(hf_config(qwen25).text_config, PACKED),
                                          rel=1e-13)


def test_veomni_seed_oss_takes_head_dim_from_hidden_size():
    f = _count(CONFIGS["Seed-OSS-36B"], "veomni")
    # 5120 // 80 = 64, not 128: the projections d x (2 x 80 + 2 x 8) heads lose
    # 64 each, 6 FLOPs a weight a token on 64 layers; the core 12 x SQ x 80 x 64
    # layers loses 64 per head
    assert _items(f)["head_dim_from_hidden"]["delta_flops"] == \
        -(6 * T * 64 * 5120 * (2 * 80 + 2 * 8) * 64 + 12 * SQ * 80 * 64 * 64)


def test_veomni_charges_mla_attention_times_value_at_the_query_head_dim():
    f = _count(CONFIGS["DeepSeek-V3"], "veomni")
    # 12 x SQ x 61 x 128 heads x 192 against ours (full) 6 x SQ x 61 x 128 x
    # (192 + 128): 6 x SQ x 61 x 128 x 64 more
    assert _items(f)["mla_av_at_qk_dim"]["delta_flops"] == 6 * SQ * 61 * 128 * 64


def test_megatron_leaves_the_router_out_of_the_moe_layers_only():
    """Mutant: the router subtraction over every layer, not the MoE ones
    (csrc/core/model/conventions.c router_weights without ``- num_dense_layers``):
    DeepSeek-V3's 3 leading dense layers have no router."""
    f = _count(CONFIGS["DeepSeek-V3"], "megatron")
    # 61 - 3 dense + 1 MTP layer = 59 routers of 7168 x 256 (the mutant: 62)
    assert _items(f)["router"]["delta_flops"] == -6 * T * 59 * 7168 * 256
    a = fw.megatron_args(hf_config(CONFIGS["DeepSeek-V3"]))
    assert f.model_flops == pytest.approx(fw.megatron(a, PACKED), rel=1e-13)


def test_megatron_counts_mla_lora_norms_mtp_norms_and_no_shared_gate():
    items = _items(_count(CONFIGS["DeepSeek-V3"], "megatron"))
    # +1 per LoRA rank (1536 + 512) on 61 + 1 MTP attention layers; the MTP
    # layer's 3 norms of 7168
    assert items["mla_lora_norms"]["delta_flops"] == 6 * T * 62 * (1536 + 512)
    assert items["mtp_norms"]["delta_flops"] == 6 * T * 3 * 7168
    items = _items(_count(CONFIGS["Qwen1.5-MoE-A2.7B"], "megatron"))
    # the shared expert's gate 2048 x 1 on 24 layers
    assert items["no_shared_expert_gate"]["delta_flops"] == -6 * T * 24 * 2048


def test_megatron_pads_the_vocabulary():
    gpt2 = CONFIGS["GPT-2"]
    items = _items(_count(gpt2, "megatron"))
    # 50,257 -> 50,304 rows of 768
    assert items["padded_vocab"]["delta_flops"] == 6 * T * 768 * (50304 - 50257)
    assert "50,257 -> 50,304" in items["padded_vocab"]["meaning"]
    tp8 = _count(gpt2, {"name": "megatron", "tensor_model_parallel_size": 8})
    a = fw.megatron_args(hf_config(gpt2), vocab_multiple=128 * 8)  # 51,200 rows
    assert tp8.model_flops == pytest.approx(fw.megatron(a, PACKED), rel=1e-13)


def test_megatron_gpt_oss_with_and_without_quick_geglu():
    cfg = CONFIGS["gpt-oss-20b"]
    c = hf_config(cfg)
    default = _count(cfg, "megatron")  # its gpt-oss recipes run --quick-geglu
    assert default.conventions["convention"]["options"]["quick_geglu"] is True
    assert default.model_flops == pytest.approx(
        fw.megatron(fw.megatron_args(c, quick_geglu=True), PACKED), rel=1e-13)
    # one of the 3 expert matrices of 2880 x 2880, 4 experts, 24 layers
    assert _items(default)["quick_geglu"]["delta_flops"] == -6 * T * 24 * 4 * 2880 * 2880
    swiglu = _count(cfg, {"name": "megatron", "quick_geglu": False})
    assert "quick_geglu" not in _items(swiglu)
    assert swiglu.model_flops == pytest.approx(
        fw.megatron(fw.megatron_args(c, quick_geglu=False), PACKED), rel=1e-13)
    llama = _count(CONFIGS["Llama-3-8B"], {"name": "megatron", "quick_geglu": True})
    assert llama.model_flops == pytest.approx(
        fw.megatron(fw.megatron_args(hf_config(CONFIGS["Llama-3-8B"]), quick_geglu=True),
                    PACKED), rel=1e-13)


def test_verl_ignores_mistral_window_and_says_so():
    f = transformer_flops(CONFIGS["Mistral-7B-v0.1"], seq_lens=[8192, 6000, 2000],
                          convention="verl")
    item = _items(f)["windows"]
    # after "half", the window's kept pairs sum min(p + 1, 4096) (a sequence
    # past 4096: 4096 x 4097 / 2 + (s - 4096) x 4096) become s^2 / 2 on the 32
    # layers, 2 x 32 heads x 2 x 128 FLOPs a pair, 3x forward
    kept = sum(4096 * 4097 // 2 + (s - 4096) * 4096 if s > 4096 else s * (s + 1) // 2
               for s in (8192, 6000, 2000))
    half = sum(s * s for s in (8192, 6000, 2000)) / 2
    assert item["delta_flops"] == 3 * 32 * (2 * 32 * 2 * 128) * (half - kept)
    assert item["meaning"] == "verl's _estimate_qwen2_flops ignores sliding windows: s² on " \
        "every layer"


def test_verl_apertus_counts_its_qk_norm_weights():
    apertus = dict(model_type="apertus", hidden_size=4096, num_hidden_layers=32,
                   num_attention_heads=32, num_key_value_heads=8, intermediate_size=21504,
                   vocab_size=131072, hidden_act="xielu", qk_norm=True, tie_word_embeddings=False)
    f = _count(apertus, "verl")
    assert f.model_flops == pytest.approx(fw.verl_apertus(hf_config(apertus), PACKED),
                                          rel=1e-13)
    # d + 8 kv heads x 128 on 32 layers
    assert _items(f)["qk_norm_weights"]["delta_flops"] == 6 * T * 32 * (4096 + 8 * 128)


@pytest.mark.parametrize("convention, config, words", [
    ("verl", CONFIGS["Mixtral-8x7B"], "verl has no formula for it: FlopsCounter logs MFU 0"),
    ("verl", CONFIGS["GPT-2"], "logs MFU 0 (verl/utils/flops_counter.py:534"),
    ("verl", QWEN3_VL_4B["text_config"], "'qwen3_vl_text': verl has no formula"),
    ("veomni", CONFIGS["Mistral-7B-v0.1"], "VeomniFlopsCounter logs MFU 0"),
    ("veomni", CONFIGS["Gemma-3-4B"], "count_flops.py:114 (_estimate_unknown_flops)"),
])
def test_a_framework_without_a_formula_for_the_type_is_refused(convention, config, words):
    with pytest.raises(ValueError, match=words.replace("(", r"\(").replace(")", r"\)")):
        _count(config, convention)


def test_refusals_of_the_hybrids_and_bad_options():
    qwen3_next = dict(model_type="qwen3_next", hidden_size=256, num_hidden_layers=4,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=64,
                      intermediate_size=512, moe_intermediate_size=128, num_experts=4,
                      num_experts_per_tok=2, shared_expert_intermediate_size=128,
                      vocab_size=1000, full_attention_interval=4, linear_num_key_heads=4,
                      linear_key_head_dim=32, linear_num_value_heads=8, linear_value_head_dim=32,
                      linear_conv_kernel_dim=4)
    with pytest.raises(ValueError, match="gated DeltaNet .* is not reproduced"):
        _count(qwen3_next, "veomni")
    with pytest.raises(ValueError, match="num_linear_layers: no framework convention"):
        _count(qwen3_next, "megatron")
    with pytest.raises(ValueError, match="'verl' takes no option 'quick_geglu'"):
        _count(CONFIGS["Llama-3-8B"], {"name": "verl", "quick_geglu": True})
    with pytest.raises(ValueError, match="needs \"name\""):
        _count(CONFIGS["Llama-3-8B"], {"quick_geglu": True})
    with pytest.raises(ValueError, match="quick_geglu.*'gelu'"):
        _count(CONFIGS["GPT-2"], {"name": "megatron", "quick_geglu": True})
    with pytest.raises(ValueError, match="make_vocab_size_divisible_by"):
        _count(CONFIGS["GPT-2"], {"name": "megatron", "make_vocab_size_divisible_by": 0})


def _config_file(config, tmp_path):
    path = tmp_path / f"{config['model_type']}.json"
    path.write_text(json.dumps(config))
    return str(path)


def test_explain_takes_packed_lengths_and_names_each_quirk(capsys, tmp_path):
    path = _config_file(CONFIGS["Qwen1.5-MoE-A2.7B"], tmp_path)
    assert main(["explain", "--model", path, "--seq-lens", ",".join(map(str, PACKED))]) == 0
    out = capsys.readouterr().out
    f = _count(CONFIGS["Qwen1.5-MoE-A2.7B"], "verl")
    share = _items(f)["no_shared_expert"]["delta_share"]
    assert "5 packed sequences (1500, 700, 2048, 3000, 944) = 8,192 tokens" in out
    assert f"quirk: verl leaves out the shared expert (and its gate): {share:+.2%}" in out
    assert "veomni:       no count: " in out and "VeomniFlopsCounter logs MFU 0" in out
    gpt_oss = _config_file(CONFIGS["gpt-oss-20b"], tmp_path)
    assert main(["explain", "--model", gpt_oss, "--seq-len", "2048", "--convention",
                 "megatron"]) == 0
    assert "under --quick-geglu" in capsys.readouterr().out
    assert main(["explain", "--model", gpt_oss, "--seq-len", "2048", "--convention",
                 "megatron", "--quick-geglu", "off"]) == 0
    assert "--quick-geglu" not in capsys.readouterr().out
    assert main(["explain", "--model", gpt_oss, "--seq-len", "2048", "--convention", "verl",
                 "--quick-geglu", "off"]) == 2
    assert "applies to --convention megatron" in capsys.readouterr().err


def test_the_module_names_the_items_a_convention_differs_on():
    from mfu_tracker.flops import _convention_items

    assert list(_convention_items.ITEMS)[:3] == ["formula", "embedding", "lm_head"]
