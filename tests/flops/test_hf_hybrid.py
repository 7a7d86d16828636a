"""The analytic count of Qwen3.5, the MLA family and the Mamba / convolution
hybrids, against the exact count.

Each model type is built small from its transformers config (CPU, eager
attention), one forward + backward is counted by FlopCounter, and the
analytic model FLOPs (``formula="matmul"``, read from the config object and
from the dict transformers saves) equal the count exactly, as does the
parameter count ``model.num_parameters()``:

* every type at S_IN = 16 tokens (inside one chunk of every scan: the gated
  DeltaNet and KDA chunk of 64, the SSD chunk of 8) and beyond it, at 72
  tokens for the DeltaNet / KDA types (2 chunks, the second padded) and 24 for
  the others (3 SSD chunks): the inter-chunk terms;
* variants at S_IN that switch on every flag and layout the readers know
  (biases, norms, latent experts, dense layers, hub-style keys);
* Qwen3.5 and Qwen3.5-MoE as the composite (vision + text) configs their
  checkpoints ship, with one image;
* ``mfu-tracker estimate`` / ``profile`` on saved configs take the analytic
  path.

None of these families has a sliding window or attention chunk: "beyond the
window" is beyond the scans' chunk. Hand arithmetic for each new block (KDA,
Mamba-1, short convolution, latent experts, the parallel and block layouts)
is written beside its expected number.
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

B = 2                  # sequences per batch
S_IN = 16              # inside one chunk of every scan
T = B * S_IN           # 32 tokens
# beyond it: 2 DeltaNet / KDA chunks of 64 (the second padded); 3 SSD chunks
# of 8 (and as many for the other types: none has a window or chunk)
S_OUT = {"qwen3_5_text": 72, "qwen3_5_moe_text": 72, "kimi_linear": 72}

SMALL = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
             intermediate_size=96, vocab_size=128, pad_token_id=0, eos_token_id=1, bos_token_id=2)
MOE = dict(num_experts_per_tok=2, moe_intermediate_size=32)
DELTANET = dict(head_dim=16, linear_key_head_dim=8, linear_value_head_dim=12,
                linear_num_key_heads=2, linear_num_value_heads=4, num_hidden_layers=4)
MLA = dict(num_key_value_heads=4, kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=16,
           v_head_dim=16)
SSD = dict(mamba_n_heads=8, mamba_d_state=8, mamba_n_groups=2, mamba_chunk_size=8)

# key -> (model_type, config fields over SMALL); "type/variant" keys switch on
# what the base leaves off
CONFIGS = {
    "qwen3_5_text": ("qwen3_5_text", DELTANET),
    "qwen3_5_moe_text": ("qwen3_5_moe_text", dict(DELTANET, num_experts=4, **MOE,
                                                  shared_expert_intermediate_size=48)),
    "deepseek_v2": ("deepseek_v2", dict(MLA, n_routed_experts=4, **MOE, first_k_dense_replace=1,
                                        num_hidden_layers=3, q_lora_rank=24, n_shared_experts=1)),
    "glm4_moe_lite": ("glm4_moe_lite", dict(MLA, n_routed_experts=4, **MOE, num_hidden_layers=3,
                                            q_lora_rank=24, n_shared_experts=1)),
    "kimi_linear": ("kimi_linear", dict(MLA, num_experts=4, **MOE, num_hidden_layers=5,
                                        num_shared_experts=1, linear_head_dim=8,
                                        linear_num_heads=4)),
    "granitemoehybrid": ("granitemoehybrid", dict(SSD, num_local_experts=4, num_experts_per_tok=2,
                                                  shared_intermediate_size=48,
                                                  layer_types=["mamba", "attention"])),
    "nemotron_h": ("nemotron_h", dict(layers_block_type=["linear_attention", "moe",
                                                         "full_attention", "mlp"],
                                      head_dim=16, mamba_num_heads=8, mamba_head_dim=16,
                                      ssm_state_size=8, n_groups=2, chunk_size=8,
                                      n_routed_experts=4, **MOE,
                                      moe_shared_expert_intermediate_size=48)),
    "falcon_h1": ("falcon_h1", dict(SSD, mamba_d_ssm=128)),
    "jamba": ("jamba", dict(num_experts=4, num_experts_per_tok=2, num_hidden_layers=4,
                            attn_layer_period=2, attn_layer_offset=1, expert_layer_period=2,
                            expert_layer_offset=1, mamba_d_state=8, mamba_dt_rank=8)),
    "lfm2": ("lfm2", dict(layer_types=["conv", "full_attention"], conv_L_cache=3)),
}
BASES = sorted(CONFIGS)
VARIANTS = {
    "qwen3_5_text/bias": ("qwen3_5_text", dict(attention_bias=True, num_hidden_layers=2,
                                               layer_types=["full_attention",
                                                            "linear_attention"])),
    "deepseek_v2/direct_q": ("deepseek_v2", dict(q_lora_rank=None, attention_bias=True,
                                                 topk_method="group_limited_greedy", n_group=2,
                                                 topk_group=1)),
    "glm4_moe_lite/types": ("glm4_moe_lite", dict(mlp_layer_types=["sparse", "dense", "sparse"],
                                                  attention_bias=True, n_shared_experts=2)),
    # the layer list from a hub config's linear_attn_config (1-based)
    "kimi_linear/hub": ("kimi_linear", dict(q_lora_rank=24, num_hidden_layers=3,
                                            layer_types=None, linear_attn_config={
                                                "full_attn_layers": [3], "kda_layers": [1, 2],
                                                "num_heads": 2, "head_dim": 16,
                                                "short_conv_kernel_size": 3})),
    "granitemoehybrid/dense": ("granitemoehybrid", dict(
        num_local_experts=0, attention_bias=True, mamba_proj_bias=True, mamba_conv_bias=False,
        position_embedding_type="rope", layer_types=["attention", "mamba"])),
    "nemotron_h/latent": ("nemotron_h", dict(moe_latent_size=24, mlp_bias=True, use_bias=True,
                                             use_conv_bias=False)),
    "falcon_h1/norm": ("falcon_h1", dict(mamba_rms_norm=True, projectors_bias=True,
                                         attention_bias=True, mlp_bias=True, mamba_d_ssm=None,
                                         mamba_n_heads=4)),
    "jamba/dense": ("jamba", dict(num_experts=1, mamba_dt_rank="auto", mamba_proj_bias=True,
                                  mamba_conv_bias=False, attn_layer_period=4,
                                  attn_layer_offset=2)),
    "lfm2/bias": ("lfm2", dict(conv_bias=True, block_ffn_dim_multiplier=1.5, block_multiple_of=32,
                               layer_types=None, full_attn_idxs=[1])),
    "lfm2/unadjusted": ("lfm2", dict(block_auto_adjust_ff_dim=False)),
}


def _fields(key: str) -> tuple[str, dict]:
    if key in CONFIGS:
        return CONFIGS[key]
    model_type, extra = VARIANTS[key]
    fields = {**CONFIGS[key.split("/")[0]][1], **extra}
    return model_type, {k: v for k, v in fields.items()
                        if v is not None or k in ("q_lora_rank", "mamba_d_ssm")}


@functools.lru_cache(maxsize=None)
def _built(key: str):
    """(config object, saved config dict, model), built once per module run."""
    model_type, fields = _fields(key)
    config = transformers.AutoConfig.for_model(model_type, **{**SMALL, **fields})
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    return config, json.loads(config.to_json_string()), model


@functools.lru_cache(maxsize=None)
def _counted(key: str, seq_len: int) -> int:
    """The exact count of one forward + backward of B sequences."""
    _, saved, model = _built(key)
    ids = torch.randint(0, 128, (B, seq_len), generator=torch.Generator().manual_seed(0))
    with FlopCounter() as fc:
        model(input_ids=ids, labels=ids).loss.backward()
    assert fc.errors == 0
    return fc.model_flops


def _analytic(config, seq_len: int = S_IN, **kw):
    return transformer_flops(config, seq_len=seq_len, batch_size=B, formula="matmul", **kw)


@pytest.mark.parametrize("beyond", [False, True], ids=["inside", "beyond"])
@pytest.mark.parametrize("key", BASES)
def test_analytic_equals_the_exact_count(key, beyond):
    seq_len = S_OUT.get(key, 24) if beyond else S_IN
    config, saved, model = _built(key)
    a, b = _analytic(saved, seq_len), _analytic(config, seq_len)
    assert a.model_flops == b.model_flops == _counted(key, seq_len)
    assert a.num_params == b.num_params == model.num_parameters()
    assert a.conventions["model_type"] == config.model_type


@pytest.mark.parametrize("key", BASES)
def test_one_token_sequences_equal_the_exact_count(key):
    # a training step (no cache) on sequences of one token: each scan pads
    # them to one chunk, each convolution computes its kernel - 1 padding
    # positions too; the exact count (meta, with a cache that must not pad
    # the convolution's input to the kernel) is the same
    config, saved, model = _built(key)
    ids = torch.randint(0, 128, (B, 1), generator=torch.Generator().manual_seed(0))
    with FlopCounter() as fc:
        model(input_ids=ids, use_cache=False).logits.float().sum().backward()
    model.zero_grad(set_to_none=True)
    assert _analytic(saved, 1).model_flops == fc.model_flops
    assert transformer_flops(saved, seq_lens=[1, 1], formula="matmul").model_flops == \
        fc.model_flops
    assert transformer_flops(saved, seq_lens=[1, 1], formula="exact").model_flops == \
        fc.model_flops


@pytest.mark.parametrize("key", sorted(VARIANTS))
def test_every_flag_and_layout_equals_the_exact_count(key):
    config, saved, model = _built(key)
    a = _analytic(saved)
    assert a.model_flops == _analytic(config).model_flops == _counted(key, S_IN)
    assert a.num_params == model.num_parameters()
    # each variant changes the count: it exercises something the base does not
    assert a.model_flops != _analytic(_built(key.split("/")[0])[1]).model_flops or \
        a.num_params != _built(key.split("/")[0])[2].num_parameters()


# ---------------------------------------------------------------------------
# Hub configs as their checkpoints ship them (older keys)
# ---------------------------------------------------------------------------

def test_hub_style_keys_read_as_transformers_reads_them():
    _, saved, model = _built("kimi_linear/hub")
    hub = {k: v for k, v in saved.items()
           if k not in ("layer_types", "linear_head_dim", "linear_num_heads",
                        "linear_conv_kernel_dim")}
    hub["linear_attn_config"] = {"full_attn_layers": [3], "kda_layers": [1, 2], "num_heads": 2,
                                 "head_dim": 16, "short_conv_kernel_size": 3}
    assert _analytic(hub).model_flops == _counted("kimi_linear/hub", S_IN)
    _, saved, _ = _built("nemotron_h")
    legacy = {k: v for k, v in saved.items() if k not in ("layers_block_type", "n_groups",
                                                          "conv_kernel", "chunk_size")}
    legacy.update(hybrid_override_pattern="ME*-", mamba_n_groups=2, mamba_d_conv=4,
                  mamba_chunk_size=8, num_hidden_layers=4)
    assert _analytic(legacy).model_flops == _counted("nemotron_h", S_IN)
    _, saved, _ = _built("lfm2")
    legacy = {k: v for k, v in saved.items() if k != "intermediate_size"}
    legacy["block_ff_dim"] = saved["intermediate_size"]
    assert _analytic(legacy).model_flops == _counted("lfm2", S_IN)


# config.json files written by hand hold a few keys; transformers fills in
# the rest from its config class: the readers must take the same defaults
PARTIAL = {
    "qwen3_5_text": dict(num_hidden_layers=4),
    "qwen3_5_moe_text": dict(num_hidden_layers=4),
    "deepseek_v2": dict(MLA, n_routed_experts=4, **MOE, num_hidden_layers=3),
    "glm4_moe_lite": dict(MLA, n_routed_experts=4, **MOE, num_hidden_layers=3),
    "kimi_linear": dict(MLA, num_experts=4, num_experts_per_token=2, moe_intermediate_size=32,
                        num_hidden_layers=3, linear_attn_config={
                            "full_attn_layers": [3], "kda_layers": [1, 2], "num_heads": 2,
                            "head_dim": 16}),
    # every mamba_* key absent: BambaMixer's class defaults (128 heads of "auto" dim, ...)
    "granitemoehybrid": dict(layer_types=["mamba", "attention"], num_local_experts=4,
                             shared_intermediate_size=48),
    "nemotron_h": dict(hybrid_override_pattern="ME*-", head_dim=16, mamba_num_heads=8,
                       mamba_head_dim=16, ssm_state_size=8, mamba_n_groups=2,
                       n_routed_experts=4, **MOE, moe_shared_expert_intermediate_size=48),
    "falcon_h1": dict(SSD, mamba_d_ssm=None),
    "jamba": dict(num_experts=4, num_hidden_layers=4, attn_layer_period=4, attn_layer_offset=2,
                  mamba_d_state=8),
    "lfm2": dict(full_attn_idxs=[1]),
}


@pytest.mark.parametrize("model_type", sorted(PARTIAL))
def test_absent_keys_read_as_the_config_class_defaults(model_type):
    from mfu_tracker.flops._hf_config import dims_from_config

    fields = {**SMALL, **PARTIAL[model_type]}
    if model_type.startswith("qwen3_5"):  # their defaults: head_dim 256, kv heads 4 / 2
        fields.pop("num_key_value_heads")
    written = {"model_type": model_type, **fields}
    config = transformers.AutoConfig.for_model(model_type, **fields)
    assert dims_from_config(written).dims == dims_from_config(config).dims
    if model_type == "qwen3_5_text":  # the same inside the composite config
        composite = {"model_type": "qwen3_5", "text_config": written,
                     "vision_config": dict(VISION, model_type="qwen3_5")}
        config = transformers.Qwen3_5Config(text_config=fields, vision_config=VISION)
        assert dims_from_config(composite).dims == dims_from_config(config).dims


def test_unknown_layer_types_name_the_key():
    _, saved, _ = _built("granitemoehybrid")
    with pytest.raises(ValueError, match=r"config\.layer_types .*'sliding_attention'"):
        _analytic(dict(saved, layer_types=["mamba", "sliding_attention"]))
    _, saved, _ = _built("nemotron_h")
    with pytest.raises(ValueError, match=r"hybrid_override_pattern .*'X'"):
        _analytic({k: v for k, v in saved.items() if k != "layers_block_type"}
                  | {"hybrid_override_pattern": "M*X"})


# ---------------------------------------------------------------------------
# The new blocks by hand (T = 32 tokens, d = 64, V = 128)
# ---------------------------------------------------------------------------

def _six(weights: int) -> int:
    """Model FLOPs of `weights` matmul weights over T tokens: 6 per weight."""
    return 6 * weights * T


def test_kda_layer_by_hand():
    _, saved, _ = _built("kimi_linear")
    f = _analytic(saved)
    no_kda = _analytic(saved, num_linear_layers=0)  # the 4 KDA layers become MLA layers
    # MLA (q_lora_rank None): q_proj 64 * 4 * 24 + kv_a 64 * 24 + kv_b
    # 16 * 4 * 32 + o 4 * 16 * 64 = 6,144 + 1,536 + 2,048 + 4,096
    mla = 13_824
    # KDA, 4 heads of 8 (HD = 32): q, k, v 3 * 64 * 32 = 6,144; f_a + f_b and
    # g_a + g_b 2 * (64 * 8 + 8 * 32) = 1,536; b_proj 64 * 4 = 256; o 32 * 64
    # = 2,048: 9,984 weights
    kda = 6_144 + 1_536 + 256 + 2_048
    # scan, chunk 64, 16 tokens padded to 1 chunk, per head:
    # 2*64^2*8 + 4*64^2*8 + 6*64*8*8 = 65,536 + 131,072 + 24,576 = 221,184;
    # model 3x less the first chunk's 2 zero-state reads 4*64*8*8 = 16,384
    # and less the backward of the last chunk's state update (the final
    # state, which no loss reads) 2 * 2*64*8*8 = 16,384; no triangular solve:
    # 630,784 per head and sequence, x 4 heads x 2 sequences
    scan = 4 * 2 * (3 * 221_184 - 16_384 - 16_384)
    # conv1d over 96 channels, kernel 4, (16 + 3) positions per sequence:
    # 2 * 4 * 96 * 38 = 29,184 forward, 3x for the model
    conv = 3 * 2 * 4 * 96 * 38
    # attention of an MLA layer: 2 * 4 * (16 + 8 + 16) = 320 FLOPs a pair,
    # 2 * 256 pairs, 3x
    attention = 3 * 320 * 2 * 256
    assert f.model_flops - no_kda.model_flops == 4 * (_six(kda - mla) + scan + conv - attention)
    assert f.scan_flops == 4 * 4 * 2 * 221_184


def test_mamba1_layer_by_hand():
    _, saved, _ = _built("jamba")
    f = _analytic(saved)
    # Mamba-1, I = 128, N = 8, R = 8: in_proj 64 * 256 + x_proj 128 * 24 +
    # dt_proj 8 * 128 + out_proj 128 * 64 = 16,384 + 3,072 + 1,024 + 8,192
    weights = 28_672
    # readout state [128, 8] @ C [8, 1] per token: 2 * 128 * 8 = 2,048 FLOPs
    assert f.scan_flops == 2 * 2_048 * T  # 2 Mamba-1 layers
    # conv1d over 128 channels, kernel 4, 19 positions per sequence: 19,456 each
    conv = 2 * 4 * 128 * 38
    attention = 2 * 4 * 32 * 2 * 256  # a GQA layer's pairs: 2 * H * 2Q = 256 FLOPs
    gqa = 64 * 64 + 2 * 64 * 32 + 64 * 64  # q, k, v, o: 12,288
    as_attention = _analytic(saved, num_ssm_layers=0)
    assert f.model_flops - as_attention.model_flops == 2 * (
        _six(weights - gqa) + 3 * 2_048 * T + 3 * conv - 3 * attention)
    # params: + conv 128 * 4 + 128 (bias) + dt bias 128 + A_log 128 * 8 + D 128
    # + the dt / B / C norms 8 + 16
    assert f.num_params - as_attention.num_params == 2 * (
        weights + 512 + 128 + 128 + 1_024 + 128 + 24 - gqa)


def test_short_conv_layer_by_hand():
    _, saved, _ = _built("lfm2")
    f = _analytic(saved)
    as_attention = _analytic(saved, num_short_conv_layers=0)
    conv_weights = 64 * 192 + 64 * 64     # in_proj [64 -> 192], out_proj: 16,384
    gqa = 64 * 64 + 2 * 64 * 32 + 64 * 64  # 12,288
    # conv1d over 64 channels, kernel 3, 18 positions per sequence, 3x model
    conv = 3 * 2 * 3 * 64 * 36
    attention = 3 * 256 * 2 * 256
    assert f.model_flops - as_attention.model_flops == \
        _six(conv_weights - gqa) + conv - attention
    # params: + the conv kernel 64 * 3, - q / k norms 2 * 16
    assert f.num_params - as_attention.num_params == conv_weights - gqa + 192 - 32


def test_latent_experts_by_hand():
    _, saved, model = _built("nemotron_h/latent")
    f = _analytic(saved)
    full_width = _analytic(saved, moe_latent_size=0)
    # active: 2 experts of up + down at 24 -> 32 -> 24 instead of 64 -> 32 ->
    # 64, plus fc1 [64 -> 24] and fc2 [24 -> 64]: 2*2*24*32 + 2*64*24 =
    # 3,072 + 3,072 = 6,144 against 2*2*64*32 = 8,192
    assert full_width.model_flops - f.model_flops == _six(8_192 - 6_144)
    # params: 4 experts 4 * 2 * 32 * 40 fewer; fc1, fc2 and their biases
    # (mlp_bias) 3,072 + 24 + 64 more
    assert full_width.num_params - f.num_params == 4 * 2 * 32 * 40 - (3_072 + 88)
    assert f.num_params == model.num_parameters()


def test_nemotron_blocks_hold_one_mixer_or_one_mlp():
    _, saved, _ = _built("nemotron_h")
    f = _analytic(saved)
    # 4 blocks, one norm each + the final norm: 5 * 64 norm weights; a
    # Mamba-2 (in_proj 64 * 296 + out 128 * 64), a GQA, a MoE (router
    # 64 * 4, 2 experts 2*64*32 each, shared 2*64*48) and a dense (2*64*96)
    # block, + the lm_head 128 * 64
    weights = (64 * 296 + 128 * 64) + 12_288 + (256 + 2 * 4_096 + 6_144) + 12_288 + 8_192
    # SSD, chunk 8: 2 chunks x 2 sequences of 2*64*8 + 2*64*16 + 4*8*16*8 =
    # 7,168 per head, and the state pass 2 * (2 + 1)^2 * 16 * 8 per sequence:
    # 8 heads x (28,672 + 4,608) = 266,240
    ssd = 8 * (4 * 7_168 + 2 * 2 * 3 ** 2 * 16 * 8)
    conv = 2 * 4 * 160 * 38
    attention = 256 * 2 * 256
    assert f.model_flops == _six(weights) + 3 * ssd + 3 * conv + 3 * attention
    assert f.scan_flops == ssd


def test_falcon_runs_attention_and_ssm_in_every_layer():
    _, saved, _ = _built("falcon_h1")
    f = _analytic(saved)
    serial = _analytic(saved, ssm_parallel=False, num_layers=4, num_ssm_layers=2)
    # 2 parallel layers = 2 SSM + 2 attention mixers; as 4 serial layers
    # the MLPs and norms of 2 more layers are added: 2 * 3 * 64 * 96 weights
    # and 2 * 2 * 64 norm weights
    assert serial.model_flops - f.model_flops == _six(2 * 3 * 64 * 96)
    assert serial.num_params - f.num_params == 2 * 3 * 64 * 96 + 2 * 2 * 64
    assert f.attention_flops == 2 * 256 * 2 * 256 and f.scan_flops > 0


def test_declared_mtp_layers():
    from mfu_tracker.flops._hf_config import counter_notes

    _, saved, _ = _built("qwen3_5_text")
    hub = dict(saved, mtp_num_hidden_layers=1)  # as Qwen3.5 checkpoints declare it
    with_mtp, without = _analytic(hub), _analytic(hub, num_mtp_layers=0)
    # one MTP module: one more full-attention layer (what a 5th layer with 2
    # full-attention layers adds), fc [2d -> d] = 2 * 64 * 64 and a second
    # lm_head 128 * 64 at 6 FLOPs per weight per token; transformers builds
    # none (the equality above holds with num_mtp_layers=0)
    layer = _analytic(saved, num_layers=5, num_linear_layers=3).model_flops - without.model_flops
    assert with_mtp.model_flops - without.model_flops == layer + _six(2 * 64 * 64 + 128 * 64)
    assert without.model_flops == _counted("qwen3_5_text", S_IN)
    assert any("estimate counts them" in n for n in counter_notes(hub))
    # Nemotron-H's MTP blocks are not DeepSeek's: not counted, and said so
    _, saved, _ = _built("nemotron_h")
    hub = dict(saved, num_nextn_predict_layers=1)
    assert _analytic(hub).model_flops == _counted("nemotron_h", S_IN)
    assert counter_notes(hub) == ["nemotron_h's MTP blocks (num_nextn_predict_layers) are "
                                  "counted neither here nor by estimate: transformers builds none"]


# ---------------------------------------------------------------------------
# Qwen3.5 as its checkpoints ship: the composite config, one image
# ---------------------------------------------------------------------------

VLM_TEXT = dict(SMALL, vocab_size=160, head_dim=16, linear_key_head_dim=8,
                linear_value_head_dim=12, linear_num_key_heads=2, linear_num_value_heads=4,
                layer_types=["linear_attention", "full_attention"],
                rope_parameters={"rope_type": "default", "rope_theta": 1e4,
                                 "mrope_section": [2, 3, 3], "mrope_interleaved": True,
                                 "partial_rotary_factor": 0.25})
VISION = dict(depth=3, hidden_size=32, intermediate_size=48, num_heads=2, patch_size=4,
              spatial_merge_size=2, temporal_patch_size=2, out_hidden_size=64,
              num_position_embeddings=64)
TOKENS = dict(image_token_id=150, video_token_id=151, vision_start_token_id=152,
              vision_end_token_id=153)
GRID = [[1, 12, 20]]  # 240 patches, 60 image tokens


@pytest.mark.parametrize("moe", [False, True], ids=["qwen3_5", "qwen3_5_moe"])
def test_qwen3_5_with_one_image_equals_the_exact_count(moe):
    cls = transformers.Qwen3_5MoeConfig if moe else transformers.Qwen3_5Config
    text = dict(VLM_TEXT, num_experts=4, **MOE, shared_expert_intermediate_size=48) if moe \
        else VLM_TEXT
    config = cls(text_config=text, vision_config=VISION, **TOKENS)
    torch.manual_seed(0)
    model = transformers.AutoModelForImageTextToText.from_config(config,
                                                                 attn_implementation="eager")
    ids = torch.randint(0, 140, (1, 96), generator=torch.Generator().manual_seed(0))
    ids[0, 5], ids[0, 6:66], ids[0, 66] = 152, 150, 153
    pixels = torch.randn(240, 3 * 2 * 4 * 4, generator=torch.Generator().manual_seed(1))
    with FlopCounter() as fc:
        model(input_ids=ids, labels=ids, pixel_values=pixels, image_grid_thw=torch.tensor(GRID),
              mm_token_type_ids=(ids == 150).long()).loss.backward()
    saved = json.loads(config.to_json_string())
    f = transformer_flops(saved, seq_len=96, image_grid_thw=GRID, formula="matmul")
    assert f.model_flops == fc.model_flops
    assert f.num_params == model.num_parameters()
    text_only = transformer_flops(saved, seq_len=96, formula="matmul")
    assert f.language_flops == text_only.model_flops
    assert f.vision_flops == f.model_flops - f.language_flops > 0


# ---------------------------------------------------------------------------
# Errors, and the keyword path
# ---------------------------------------------------------------------------

def test_bad_hybrid_dims_name_the_field():
    base = dict(hidden_size=64, num_layers=2, num_heads=4, vocab_size=128, intermediate_size=96,
                seq_len=8)
    cases = [
        (dict(linear_kind="kda", num_linear_layers=1, linear_num_key_heads=2,
              linear_num_value_heads=4, linear_key_head_dim=8, linear_value_head_dim=8),
         "linear_num_value_heads"),
        (dict(ssm_kind="mamba1", num_ssm_layers=1, ssm_intermediate_size=128, ssm_state_size=8),
         "ssm_dt_rank"),
        (dict(num_short_conv_layers=1), "short_conv_kernel"),
        (dict(num_short_conv_layers=3, short_conv_kernel=3), "num_short_conv_layers"),
        (dict(num_mlp_only_layers=3), "num_mlp_only_layers"),
        (dict(num_mlp_only_layers=1, num_mixer_only_layers=2), "num_mixer_only_layers"),
        (dict(moe_latent_size=8), "moe_latent_size"),
        (dict(ssm_parallel=True, num_ssm_layers=2, num_short_conv_layers=1, short_conv_kernel=3,
              ssm_num_heads=2, ssm_head_dim=8, ssm_state_size=4), "num_ssm_layers"),
        (dict(ssm_kind="mamba3"), "ssm_kind"),
    ]
    for extra, field in cases:
        with pytest.raises((ValueError, TypeError), match=field):
            transformer_flops(**base, **extra)
    with pytest.raises(ValueError, match="lora_rank"):
        transformer_flops(**base, num_short_conv_layers=1, short_conv_kernel=3, lora_rank=8)


def test_ssm_proj_bias_keyword_still_biases_both_projections():
    dims = dict(hidden_size=64, num_layers=2, num_heads=4, vocab_size=128, mlp="none",
                intermediate_size=0, norms_per_layer=1, num_ssm_layers=2, ssm_num_heads=8,
                ssm_head_dim=16, ssm_state_size=8, ssm_num_groups=1, seq_len=8)
    plain = transformer_flops(**dims)
    both = transformer_flops(**dims, ssm_proj_bias=True)
    in_only = transformer_flops(**dims, ssm_proj_bias=True, ssm_out_proj_bias=False)
    # in_proj [64 -> 128 + 144 + 8 = 280] and out_proj [128 -> 64] biases, 2 layers
    assert both.num_params - plain.num_params == 2 * (280 + 64)
    assert in_only.num_params - plain.num_params == 2 * 280


# ---------------------------------------------------------------------------
# The command line on saved configs: the analytic path
# ---------------------------------------------------------------------------

def _line(out: str, label: str) -> str:
    match = re.search(rf"^{re.escape(label)}\s+(.*)$", out, re.M)
    assert match, (label, out)
    return match.group(1)


@pytest.mark.parametrize("key", ["nemotron_h", "kimi_linear"])
def test_estimate_and_profile_use_the_analytic_path(key, tmp_path, capsys):
    config, saved, _ = _built(key)
    config.save_pretrained(tmp_path)
    assert main(["estimate", "--model", str(tmp_path), "--gpu", "H100 SXM", "--seq-len", "16",
                 "--tokens-per-sec", "1e9"]) == 0
    out = capsys.readouterr().out
    assert "no analytic formula" not in out
    palm = transformer_flops(saved, seq_len=16)
    # MFU = FLOP/token x tokens/s / 989.4 TFLOP/s (H100 SXM dense bf16)
    assert _line(out, "MFU:") == f"{100 * palm.flops_per_token * 1e9 / 989.4e12:.2f}%"
    assert main(["profile", "--model", str(tmp_path), "--seq-len", "16"]) == 0
    out = capsys.readouterr().out
    ratio = float(re.search(r"analytic \(matmul\):.*counted / analytic = ([\d.]+)", out).group(1))
    assert ratio == pytest.approx(1.0, abs=1e-6)


def test_granite_hybrid_refuses_a_layer_type_it_does_not_know():
    from mfu_tracker.flops import _hf_config, _hf_hybrid

    cfg = _hf_config._Config(dict(model_type="granitemoehybrid", hidden_size=64,
                                  num_hidden_layers=2, num_attention_heads=4,
                                  intermediate_size=96, vocab_size=100,
                                  layer_types=["mamba", "convolution"]))
    with pytest.raises(ValueError, match="convolution"):
        _hf_hybrid.granitemoehybrid(cfg, {})
