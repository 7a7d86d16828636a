"""VLMs are counted with their vision tower and projector, never silently
text-only.

Each VLM is built tiny from its transformers config, one training step with
one image runs on CPU under FlopCounter, and ``transformer_flops`` of the
saved config with that image must equal it:

* analytically (csrc/core/model/vision_tiles.c) for Gemma 3 (SigLIP, with and
  without its attention-pooling head), Llama 4 (whose MoE runs every expert:
  compared with ``experts_per_token = num_experts``, as in
  test_analytic_zoo.py), LLaVA (CLIP), LLaVA-NeXT (CLIP, "anyres" tiles from
  ``image_sizes``, the padding tile dropped) and LLaVA-OneVision (SigLIP,
  the "full" strategy keeping every token), parameters included;
* exactly, through the meta path (the text on meta, the tower through
  ``get_image_features``), for SmolVLM / Idefics 3, InternVL, GLM-4.1V and
  Qwen3-VL-MoE.

Image inputs on a model without a tower are an error; a count whose batch
has no image says the tower is not counted.
"""
from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from mfu_tracker import transformer_flops  # noqa: E402
from mfu_tracker.cli import main  # noqa: E402
from mfu_tracker.counter import FlopCounter  # noqa: E402

TEXT = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            intermediate_size=96, vocab_size=160, head_dim=16, pad_token_id=0, eos_token_id=1,
            bos_token_id=2)
IMG = 150   # the image placeholder token
S = 96      # tokens per sequence, image placeholders included
PIN = [[32, 64], [64, 32], [64, 64]]  # LLaVA-NeXT pinpoints (tiles of 32)
# a tower of 2 layers, width 32, on 32 x 32 pixel tiles of 8 x 8 patches: 16 patches
VIS = dict(hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=2,
           image_size=32, patch_size=8)


def _analytic_case(kind: str):
    """(config, pixel inputs of one image, extra transformer_flops keywords)."""
    one_tile = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    if kind.startswith("gemma3"):
        vis = dict(VIS, vision_use_head=kind == "gemma3")  # SigLIP's default: the head
        cfg = transformers.Gemma3Config(text_config=dict(TEXT, model_type="gemma3_text"),
                                        vision_config=vis, mm_tokens_per_image=4,
                                        image_token_id=IMG, boi_token_id=151, eoi_token_id=152)
        return cfg, {"pixel_values": one_tile}, {}
    if kind == "llama4":
        vis = dict(VIS, intermediate_size=128, projector_input_dim=64, projector_output_dim=64,
                   vision_output_dim=64, pixel_shuffle_ratio=0.5)
        text = dict(TEXT, model_type="llama4_text", num_local_experts=4, num_experts_per_tok=1,
                    intermediate_size_mlp=80)
        cfg = transformers.Llama4Config(text_config=text, vision_config=vis,
                                        image_token_index=IMG)
        return cfg, {"pixel_values": one_tile}, {"experts_per_token": 4}  # every expert runs
    if kind.startswith("llava") and kind in ("llava", "llava_multi", "llava_embeddings"):
        # the default reads hidden_states[-2] (the top layer forward only);
        # [-3, 1] the embeddings and layer 1's output, concatenated; [0]
        # the embeddings alone (both layers forward only)
        layers = {"llava": -2, "llava_multi": [-3, 1], "llava_embeddings": [0]}[kind]
        cfg = transformers.LlavaConfig(
            text_config=dict(TEXT, model_type="llama"), image_token_index=IMG,
            vision_config=dict(VIS, model_type="clip_vision_model", projection_dim=32),
            vision_feature_layer=layers)
        return cfg, {"pixel_values": one_tile}, {}
    tiles = torch.randn(1, 6, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    inputs = {"pixel_values": tiles, "image_sizes": torch.tensor([[40, 70]])}
    if kind == "llava_next":
        cfg = transformers.LlavaNextConfig(
            text_config=dict(TEXT, model_type="llama"), image_token_index=IMG,
            vision_config=dict(VIS, model_type="clip_vision_model", projection_dim=32),
            image_grid_pinpoints=PIN)
    else:
        cfg = transformers.LlavaOnevisionConfig(
            text_config=dict(TEXT, model_type="qwen2"), image_token_index=IMG,
            vision_config=dict(VIS, model_type="siglip_vision_model", vision_use_head=False),
            image_grid_pinpoints=PIN)
    return cfg, inputs, {}


def _model(cfg):
    torch.manual_seed(0)
    model = transformers.AutoModelForImageTextToText.from_config(cfg, attn_implementation="eager")
    if cfg.model_type == "llama4":
        # transformers 5.24's Llama4ForConditionalGeneration reads
        # outputs.image_outputs from its language model's output, which has
        # none: the step runs to the end, then the attribute is missing
        def add_image_outputs(module, args, output):
            object.__setattr__(output, "image_outputs", None)
            return output
        model.language_model.register_forward_hook(add_image_outputs)
    return model


def _image_tokens(model, inputs) -> int:
    """Placeholder tokens of the image: the features the model makes of it."""
    with torch.no_grad():
        out = model.get_image_features(**inputs)
    features = out.pooler_output if out.pooler_output is not None else out.last_hidden_state
    if isinstance(features, (list, tuple)):
        return sum(f.shape[0] for f in features)
    return features.shape[0] * features.shape[1] if features.dim() == 3 else features.shape[0]


def _step_inputs(model, inputs, n_image: int, extra=None) -> dict:
    """One sequence of S tokens with the image's n_image placeholders."""
    ids = torch.randint(3, 140, (1, S), generator=torch.Generator().manual_seed(0))
    ids[0, 5], ids[0, 6:6 + n_image], ids[0, 6 + n_image] = 151, IMG, 152
    kwargs = dict(inputs, **(extra or {}), input_ids=ids)
    if model.config.model_type.startswith("gemma3"):
        kwargs["token_type_ids"] = (ids == IMG).long()
    if model.config.model_type in ("glm4v", "qwen3_vl_moe"):
        kwargs["mm_token_type_ids"] = (ids == IMG).long()
    return kwargs


def _counted_step(model, inputs, n_image: int, extra=None) -> int:
    with FlopCounter() as fc:
        model(**_step_inputs(model, inputs, n_image, extra)).logits.float().sum().backward()
    model.zero_grad(set_to_none=True)
    assert fc.errors == 0
    return fc.model_flops


def _true_step(model, inputs, n_image: int) -> int:
    """torch.utils.flop_counter.FlopCounterMode on the same step: what ran,
    forward and backward (eager attention: matmuls; no recompute), so a
    module whose output reaches no loss (SigLIP's pooling head, LLaVA's
    layers above vision_feature_layer) is counted forward only."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as mode:
        model(**_step_inputs(model, inputs, n_image)).logits.float().sum().backward()
    model.zero_grad(set_to_none=True)
    return mode.get_total_flops()


ANALYTIC = ["gemma3", "gemma3_no_head", "llama4", "llava", "llava_multi", "llava_embeddings",
            "llava_next", "llava_onevision"]


@pytest.mark.parametrize("kind", ANALYTIC)
def test_analytic_tower_equals_the_exact_count_of_a_one_image_step(kind):
    cfg, inputs, extra = _analytic_case(kind)
    model = _model(cfg)
    counted = _true_step(model, inputs, _image_tokens(model, inputs))
    saved = json.loads(cfg.to_json_string())
    f = transformer_flops(saved, seq_len=S, formula="matmul", **inputs, **extra)
    assert f.conventions["formula"] == "matmul"            # the analytic path
    assert f.model_flops == counted
    # the exact counter agrees: no backward for what never reaches the loss
    assert _counted_step(model, inputs, _image_tokens(model, inputs)) == counted
    assert f.num_params == model.num_parameters()
    text_only = transformer_flops(saved, seq_len=S, formula="matmul", **extra)
    assert f.language_flops == text_only.model_flops
    assert f.vision_flops == f.model_flops - f.language_flops > 0
    assert "vision tower: 1 image(s)" in f.conventions_str
    assert "vision tower: not counted (no image in this batch" in text_only.conventions_str


def test_llava_next_counts_the_tiles_image_sizes_keep():
    cfg, inputs, _ = _analytic_case("llava_next")
    saved = json.loads(cfg.to_json_string())
    f = transformer_flops(saved, seq_len=S, formula="matmul", **inputs)
    # 40 x 70 pixels: of the pinpoints, 64 x 64 keeps the most (scale 64/70:
    # 64 x 36 = 2,304 pixels; 32 x 64 keeps 56 x 32 = 1,792): 2 x 2 crops of 32
    # + the base image = 5 tiles of the 6 the batch holds
    assert f.conventions["vision"] == "1 image(s) in 5 tile(s) of 4x4 patches"
    one = transformer_flops(saved, seq_len=S, formula="matmul",
                            pixel_values=inputs["pixel_values"][:, :1])
    text = transformer_flops(saved, seq_len=S, formula="matmul")
    assert f.vision_flops == 5 * (one.model_flops - text.model_flops)


def test_gemma3_tower_by_hand():
    cfg, inputs, _ = _analytic_case("gemma3")
    f = transformer_flops(json.loads(cfg.to_json_string()), seq_len=S, formula="matmul",
                          **inputs)
    # one tile, N = 16 patches, D 32, I 48, 2 layers; patch embed 32 * 3 * 8^2 =
    # 6,144 weights: 2 * 16 * 6,144 forward, model 2x (pixels need no gradient)
    patch = 2 * 16 * 6144
    layers = 2 * 2 * 16 * (4 * 32 * 32 + 2 * 32 * 48)      # 2 layers, 16 tokens
    attention = 2 * 4 * 32 * 16 * 16                        # 4D per pair, 16^2 pairs
    # the pooling head: q and out on the probe, k and v on 16 patches, its
    # MLP on the probe, attention of 1 query over 16 keys
    head = 2 * (2 * 32 * 32 + 16 * 2 * 32 * 32 + 2 * 32 * 48) + 4 * 16 * 32
    projector = 2 * 4 * 32 * 64                             # 4 pooled tokens, D -> d 64
    # the projector pools last_hidden_state: the head's output reaches no
    # loss, so it runs forward only (77,824 FLOPs)
    assert head == 77_824
    assert f.vision_flops == 2 * patch + head + 3 * (layers + attention + projector)


EXACT = ["idefics3", "smolvlm", "internvl", "glm4v", "qwen3_vl_moe"]


def _exact_case(kind: str):
    """(config, the step's pixel inputs, transformer_flops image keywords)."""
    if kind in ("idefics3", "smolvlm"):
        cls = transformers.Idefics3Config if kind == "idefics3" else transformers.SmolVLMConfig
        cfg = cls(text_config=dict(TEXT, model_type="llama"), vision_config=VIS, scale_factor=2,
                  image_token_id=IMG)
        pixels = torch.randn(1, 1, 3, 32, 32, generator=torch.Generator().manual_seed(1))
        return cfg, {"pixel_values": pixels}, {"pixel_values": (1, 1, 3, 32, 32)}
    if kind == "internvl":
        vis = dict(VIS, image_size=[32, 32], patch_size=[8, 8])
        cfg = transformers.InternVLConfig(text_config=dict(TEXT, model_type="qwen2"),
                                          vision_config=vis, image_token_id=IMG,
                                          downsample_ratio=0.5)
        pixels = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(1))
        return cfg, {"pixel_values": pixels}, {"pixel_values": pixels}
    vis = dict(depth=2, hidden_size=32, intermediate_size=48, num_heads=2, patch_size=4,
               spatial_merge_size=2, temporal_patch_size=2, out_hidden_size=64)
    rope = {"rope_type": "default", "rope_theta": 1e4, "mrope_section": [2, 3, 3]}
    if kind == "glm4v":
        cfg = transformers.Glm4vConfig(
            text_config=dict(TEXT, model_type="glm4v_text", rope_parameters=rope),
            vision_config=dict(vis, image_size=16), image_token_id=IMG,
            image_start_token_id=151, image_end_token_id=152)
    else:
        text = dict(TEXT, model_type="qwen3_vl_moe_text", num_experts=4, num_experts_per_tok=2,
                    moe_intermediate_size=32, rope_parameters=dict(rope, mrope_interleaved=True))
        cfg = transformers.Qwen3VLMoeConfig(
            text_config=text, image_token_id=IMG, vision_start_token_id=151,
            vision_end_token_id=152, video_token_id=153,
            vision_config=dict(vis, num_position_embeddings=64, deepstack_visual_indexes=[1]))
    grid = [[1, 4, 4]]  # 16 patches of 3 x 2 x 4 x 4 values, 4 merged tokens
    pixels = torch.randn(16, 3 * 2 * 4 * 4, generator=torch.Generator().manual_seed(1))
    return cfg, {"pixel_values": pixels, "image_grid_thw": torch.tensor(grid)}, \
        {"image_grid_thw": grid}


@pytest.mark.parametrize("kind", EXACT)
def test_exact_vlm_with_one_image_equals_the_counted_step(kind):
    cfg, inputs, given = _exact_case(kind)
    model = _model(cfg)
    counted = _counted_step(model, inputs, 4)
    f = transformer_flops(cfg, seq_len=S, **given)
    assert f.conventions["formula"] == "exact"
    assert f.model_flops == counted
    text_only = transformer_flops(cfg, seq_len=S)
    assert f.language_flops == text_only.model_flops
    assert f.vision_flops == f.model_flops - f.language_flops > 0
    assert "get_image_features counted on its own" in f.conventions_str
    assert "vision tower NOT counted" in text_only.conventions_str


def test_composite_configs_of_listed_families_are_read():
    for config in (transformers.Gemma3Config(), transformers.Llama4Config()):
        f = transformer_flops(config, seq_len=128)
        assert f.conventions["formula"] == "palm" and f.vision_flops == 0
        assert "vision tower: not counted" in f.conventions_str
    gemma = transformers.Gemma3Config()
    text = transformer_flops(gemma.text_config, seq_len=128)
    assert transformer_flops(gemma, seq_len=128).num_params > text.num_params  # + the tower


def test_images_on_a_model_without_a_tower_are_an_error():
    llama = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
             "num_attention_heads": 4, "vocab_size": 100, "intermediate_size": 128}
    for images in ({"image_grid_thw": [[1, 4, 4]]}, {"pixel_values": (1, 3, 32, 32)}):
        with pytest.raises(ValueError, match="has no vision tower"):
            transformer_flops(llama, seq_len=16, **images)
    stablelm = transformers.AutoConfig.for_model(  # the exact path
        "stablelm", hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, intermediate_size=96, vocab_size=128)
    with pytest.raises(ValueError, match="has no vision tower"):
        transformer_flops(stablelm, seq_len=16, pixel_values=(1, 3, 32, 32))
    cfg, inputs, _ = _analytic_case("llava")
    with pytest.raises(ValueError, match="pixel_values.*not image_grid_thw"):
        transformer_flops(cfg, seq_len=S, image_grid_thw=[[1, 4, 4]])


def test_estimate_prints_the_language_only_mfu_for_a_tiled_tower(tmp_path, capsys):
    cfg, inputs, _ = _analytic_case("gemma3")
    cfg.save_pretrained(tmp_path)
    assert main(["estimate", "--model", str(tmp_path), "--gpu", "H100 SXM", "--seq-len", str(S),
                 "--pixel-values", "1,3,32,32", "--tokens-per-sec", "1e6"]) == 0
    out = capsys.readouterr().out
    f = transformer_flops(json.loads(cfg.to_json_string()), seq_len=S, **inputs)
    # MFU = FLOP/token x tokens/s / 989.4 TFLOP/s (H100 SXM dense bf16)
    assert f"MFU:                   {100 * f.model_flops / S * 1e6 / 989.4e12:.2f}%" in out
    assert f"MFU (language only):   {100 * f.language_flops / S * 1e6 / 989.4e12:.2f}%" in out


@pytest.mark.parametrize("kind", ["llava", "gemma3"])
def test_the_exact_tower_loss_is_what_the_language_model_reads(kind):
    # LLaVA reads hidden_states[-2] (its top encoder layer's output reaches
    # nothing), Gemma 3 the projector's pooling of last_hidden_state (not
    # SigLIP's pooling head): the exact count's loss holds only what the
    # model feeds its language model, so no backward reaches either
    from mfu_tracker.flops._meta_images import consumed

    cfg, inputs, _ = _analytic_case(kind)
    model = _model(cfg)
    features, tokens = consumed(model.get_image_features(**inputs))
    sum(f.float().sum() for f in features).backward()
    tower = model.model.vision_tower
    layers = tower.encoder.layers
    unused = tower.head if kind == "gemma3" else layers[-1]
    assert all(p.grad is None for p in unused.parameters())
    assert all(p.grad is not None for p in layers[0].parameters())
    assert tokens == _image_tokens(model, inputs)


def test_pixel_shape_takes_a_tensor_or_a_shape_and_names_a_short_one():
    from mfu_tracker.flops import _hf_vlm

    assert _hf_vlm.pixel_shape(torch.ones(2, 3, 8, 8)) == _hf_vlm.pixel_shape((2, 3, 8, 8)) \
        == (2, 3, 8, 8)
    with pytest.raises(ValueError, match="pixel_values must have a shape with at least 4 dims"):
        _hf_vlm.pixel_shape((2, 3))
