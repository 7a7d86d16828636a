"""VLMs whose images need more than a pixel tensor, counted with their
towers on the exact path, against ``torch.utils.flop_counter.FlopCounterMode``
on the real tiny model with one image (forward + backward, eager attention):

* Mistral 3 and LightOn OCR (a Pixtral tower: ``image_sizes``);
* LFM2-VL (SigLIP 2 with its own patch mask: ``image_sizes`` in pixels,
  the processor's ``spatial_shapes`` x patch_size);
* Janus (its understanding tower) and Chameleon (a VQ-VAE whose image
  tokens are integers: its encoder runs forward only);
* Mllama (cross-attention: each sequence counted with its own images).

And the images' errors: more image tokens than the batch holds, a pixel
size the tower refuses, sizes a tower does not take.
"""
from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from mfu_tracker import transformer_flops  # noqa: E402
from flops.test_hf_vlm import IMG, S, TEXT  # noqa: E402 -- the same tiny language model

# a Pixtral tower: 2 layers, width 32, 8-pixel patches
PIXTRAL = dict(model_type="pixtral", hidden_size=32, intermediate_size=48, num_hidden_layers=2,
               num_attention_heads=2, head_dim=16, image_size=64, patch_size=8)


def _pixels(*shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(1))


def _case(kind: str):
    """(config, the real step's image inputs, transformer_flops' image
    keywords) for one image of 32 x 48 pixels (4 x 6 patches of 8)."""
    if kind in ("mistral3", "lighton_ocr"):
        if kind == "mistral3":
            cfg = transformers.Mistral3Config(text_config=dict(TEXT, model_type="mistral"),
                                              vision_config=PIXTRAL, image_token_index=IMG,
                                              spatial_merge_size=2)
        else:
            cfg = transformers.LightOnOcrConfig(text_config=dict(TEXT, model_type="qwen3"),
                                                vision_config=PIXTRAL, image_token_id=IMG,
                                                spatial_merge_size=2)
        inputs = dict(pixel_values=_pixels(1, 3, 32, 48), image_sizes=torch.tensor([[32, 48]]))
        return cfg, inputs, dict(pixel_values=(1, 3, 32, 48), image_sizes=[[32, 48]])
    if kind == "lfm2_vl":
        text = dict(TEXT, model_type="lfm2", layer_types=["conv", "full_attention"])
        text.pop("head_dim")
        vision = dict(model_type="siglip2_vision_model", hidden_size=32, intermediate_size=48,
                      num_hidden_layers=2, num_attention_heads=2, patch_size=8, num_patches=16,
                      vision_use_head=False)
        cfg = transformers.Lfm2VlConfig(text_config=text, vision_config=vision,
                                        image_token_id=IMG, downsample_factor=2,
                                        projector_hidden_size=48)
        mask = torch.zeros(1, 32, dtype=torch.long)
        mask[0, :24] = 1   # 4 x 6 patches of the 32 slots
        inputs = dict(pixel_values=_pixels(1, 32, 3 * 8 * 8),
                      spatial_shapes=torch.tensor([[4, 6]]), pixel_attention_mask=mask)
        return cfg, inputs, dict(pixel_values=(1, 32, 192), image_sizes=[[32, 48]])
    if kind == "janus":
        vision = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, image_size=32,
                      patch_size=8, projection_dim=64, num_image_tokens=16, mlp_ratio=1.5)
        vq = dict(embed_dim=8, num_embeddings=32, latent_channels=32, base_channels=32,
                  channel_multiplier=[1, 1], num_res_blocks=1, projection_dim=64,
                  image_token_embed_dim=64, num_patches=4)
        cfg = transformers.JanusConfig(text_config=dict(TEXT, model_type="llama"),
                                       vision_config=vision, vq_config=vq, image_token_id=IMG)
        return cfg, dict(pixel_values=_pixels(1, 3, 32, 32)), dict(pixel_values=(1, 3, 32, 32))
    if kind == "chameleon":
        # 32-pixel images, two downsamplings: 8 x 8 = 64 image tokens
        vq = dict(embed_dim=8, num_embeddings=16, latent_channels=8, resolution=32,
                  base_channels=32, channel_multiplier=[1, 1, 1], num_res_blocks=1)
        vocab = {"<image>": IMG, **{f"IMGIMG{_letters(i)}Z": 100 + i for i in range(16)}}
        cfg = transformers.ChameleonConfig(**TEXT, vq_config=vq, vocabulary_map=vocab,
                                           image_token_id=IMG)
        return cfg, dict(pixel_values=_pixels(1, 3, 32, 32)), dict(pixel_values=(1, 3, 32, 32))
    assert kind == "mllama"  # 1 image of 2 tiles of 32 x 32 pixels
    text = dict(TEXT, model_type="mllama_text_model", num_hidden_layers=3,
                cross_attention_layers=[1])
    vision = dict(hidden_size=32, num_hidden_layers=2, num_global_layers=1, attention_heads=2,
                  intermediate_size=48, vision_output_dim=64, image_size=32, patch_size=8,
                  max_num_tiles=2, intermediate_layers_indices=[0],
                  supported_aspect_ratios=[[1, 1], [1, 2], [2, 1]])
    cfg = transformers.MllamaConfig(text_config=text, vision_config=vision,
                                    image_token_index=IMG)
    inputs = dict(pixel_values=_pixels(1, 1, 2, 3, 32, 32), aspect_ratio_ids=torch.tensor([[2]]),
                  aspect_ratio_mask=torch.tensor([[[1, 1]]]),
                  cross_attention_mask=torch.ones(1, S, 1, 2, dtype=torch.long))
    return cfg, inputs, dict(pixel_values=(1, 1, 2, 3, 32, 32))


def _letters(i: int) -> str:
    """Chameleon's image token names spell the code's digits as A-J."""
    return "".join(chr(ord("A") + int(d)) for d in str(i))


def _model(cfg):
    torch.manual_seed(0)
    return transformers.AutoModelForImageTextToText.from_config(cfg, attn_implementation="eager")


def _image_tokens(model, kind, inputs) -> int:
    """The placeholders of the image: the feature rows the tower makes
    (Mllama: its one <|image|> token)."""
    if kind == "mllama":
        return 1
    function = getattr(model, "get_image_features", None) or model.model.get_image_features
    with torch.no_grad():
        features = function(**inputs).pooler_output
    rows = features if isinstance(features, (list, tuple)) else [features]
    return sum(f.numel() // f.shape[-1] for f in rows)


def _truth(model, inputs=None, n_image: int = 0) -> int:
    """FlopCounterMode on one sequence of S tokens (with the image's n_image
    placeholders): every matmul and convolution that ran, forward and
    backward."""
    from torch.utils.flop_counter import FlopCounterMode

    ids = torch.randint(3, 99, (1, S), generator=torch.Generator().manual_seed(0))
    ids[0, 5], ids[0, 6:6 + n_image], ids[0, 6 + n_image] = 151, IMG, 152
    with FlopCounterMode(display=False) as mode:
        model(input_ids=ids, **(inputs or {})).logits.float().sum().backward()
    model.zero_grad(set_to_none=True)
    return mode.get_total_flops()


# LFM2's short convolution (depthwise, 64 channels, kernel 3, S + 2 positions
# computed): FlopCounterMode charges its weight gradient as a dense
# convolution's, 2 * 64 * 64 * 3 * 98; the count divides it by the groups
# (docs/flops.md, a deliberate difference): 2 * 64 * 63 * 3 * 98 more there
GROUPED_CONV = {"lfm2_vl": 2 * 64 * 63 * 3 * (S + 2)}

KINDS = ["mistral3", "lighton_ocr", "lfm2_vl", "janus", "chameleon", "mllama"]


@pytest.mark.parametrize("kind", KINDS)
def test_vlm_with_one_image_equals_flop_counter_mode(kind):
    cfg, inputs, given = _case(kind)
    model = _model(cfg)
    truth = _truth(model, inputs, _image_tokens(model, kind, inputs)) - GROUPED_CONV.get(kind, 0)
    text_truth = _truth(model) - GROUPED_CONV.get(kind, 0)
    saved = json.loads(cfg.to_json_string())
    f = transformer_flops(saved, seq_len=S, **given)
    assert f.conventions["formula"] == "exact"
    assert f.model_flops == truth
    assert f.num_params == model.num_parameters()   # the tower's included
    assert f.vision_flops > 0 and f.language_flops + f.vision_flops == f.model_flops
    assert "vision tower: pixel_values of shape" in f.conventions_str
    text = transformer_flops(saved, seq_len=S)
    assert text.model_flops == text_truth
    assert "vision tower NOT counted" in text.conventions_str
    if kind == "mllama":
        # its cross-attention layers run only with images: the language
        # model's share holds them, the text-only step skips them
        assert f.language_flops > text.model_flops
    else:
        assert f.language_flops == text.model_flops


def test_chameleon_encoder_runs_forward_only():
    cfg, inputs, given = _case("chameleon")
    model = _model(cfg)
    # the image's FLOPs: the VQ-VAE encoder's forward, run on its own
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as mode:
        model.model.vqmodel.encode(inputs["pixel_values"])
    f = transformer_flops(cfg, seq_len=S, **given)
    assert f.vision_flops == mode.get_total_flops() > 0


def test_mllama_images_belong_to_each_sequence():
    cfg, _, _ = _case("mllama")
    one = transformer_flops(cfg, seq_len=S, pixel_values=(1, 1, 2, 3, 32, 32))
    two = transformer_flops(cfg, seq_len=S, batch_size=2, pixel_values=(2, 1, 2, 3, 32, 32))
    assert two.model_flops == 2 * one.model_flops and two.vision_flops == 2 * one.vision_flops
    with pytest.raises(ValueError, match=r"pixel_values \[1, 1, 2, 3, 32, 32\].*one row per "
                                         r"sequence of the batch \(2\)"):
        transformer_flops(cfg, seq_len=S, batch_size=2, pixel_values=(1, 1, 2, 3, 32, 32))


def test_image_sizes_are_checked_against_the_tower():
    cfg, _, _ = _case("lfm2_vl")
    with pytest.raises(ValueError, match="needs each image's size: image_sizes="):
        transformer_flops(cfg, seq_len=S, pixel_values=(1, 32, 192))
    with pytest.raises(ValueError, match=r"image_sizes \[\[36, 48\]\]: each \[height, width\] "
                                         "must be a multiple of"):
        transformer_flops(cfg, seq_len=S, pixel_values=(1, 32, 192), image_sizes=[[36, 48]])
    janus, _, given = _case("janus")
    with pytest.raises(ValueError, match="takes no image sizes"):
        transformer_flops(janus, seq_len=S, image_sizes=[[32, 32]], **given)
    with pytest.raises(ValueError, match="image_sizes holds 2 .* holds 1 image"):
        transformer_flops(janus, seq_len=S, image_sizes=[[32, 32]] * 2, **given)
    with pytest.raises(ValueError, match="image_sizes needs pixel_values"):
        transformer_flops(janus, seq_len=S, image_sizes=[[32, 32]])


def test_pixtral_image_sizes_default_to_the_pixel_tensor():
    # one unpadded image: its size is the tensor's height x width
    cfg, _, given = _case("mistral3")
    assert transformer_flops(cfg, seq_len=S, pixel_values=(1, 3, 32, 48)).model_flops == \
        transformer_flops(cfg, seq_len=S, **given).model_flops


def test_more_image_tokens_than_the_batch_holds_is_an_error():
    cfg, _, given = _case("janus")   # 16 image tokens (exact path)
    assert transformer_flops(cfg, seq_len=16, **given).num_tokens == 16
    with pytest.raises(ValueError, match="seq_len: the images make 16 image tokens, more than "
                                         "the batch's 15 tokens"):
        transformer_flops(cfg, seq_len=15, **given)
    # analytic: Qwen2.5-VL merges 2 x 2 patches into a token, 20 x 20 patches
    # make 100 tokens; two sequences of 50 hold them, two of 49 cannot
    qwen = transformers.Qwen2_5_VLConfig(
        text_config=dict(TEXT, model_type="qwen2_5_vl_text"),
        vision_config=dict(depth=2, hidden_size=32, intermediate_size=48, num_heads=2,
                           out_hidden_size=64, patch_size=4, spatial_merge_size=2,
                           fullatt_block_indexes=[1]))
    grid = dict(image_grid_thw=[[1, 20, 20]])
    assert transformer_flops(qwen, seq_lens=[50, 50], **grid).vision_flops > 0
    with pytest.raises(ValueError, match="image_tokens: the images make more image tokens "
                                         "than the batch holds"):
        transformer_flops(qwen, seq_lens=[49, 49], **grid)


def test_a_pixel_size_the_tower_refuses_names_pixel_values():
    # Idefics 3 shuffles 2 x 2 patches into one token: 24 pixels are 3
    # patches of 8 a side, which do not pair up
    cfg = transformers.Idefics3Config(
        text_config=dict(TEXT, model_type="llama"), scale_factor=2, image_token_id=IMG,
        vision_config=dict(hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                           num_attention_heads=2, image_size=32, patch_size=8))
    with pytest.raises(ValueError, match=r"^pixel_values: model_type 'idefics3''s vision tower "
                                         r"cannot run on pixel_values of shape \[1, 1, 3, 24, "
                                         r"24\] \(image_size 32, patch_size 8\): transformers "
                                         "raises RuntimeError"):
        transformer_flops(cfg, seq_len=S, pixel_values=(1, 1, 3, 24, 24))


# ---------------------------------------------------------------------------
# mfu-tracker estimate on a VLM config: what it counted, how to give images
# ---------------------------------------------------------------------------

def test_estimate_says_whether_the_tower_was_counted(tmp_path, capsys):
    from _cli import field, run_cli

    cfg = transformers.LlavaConfig(
        text_config=dict(TEXT, model_type="llama"), image_token_index=IMG,
        vision_config=dict(model_type="clip_vision_model", hidden_size=32, intermediate_size=48,
                           num_hidden_layers=2, num_attention_heads=2, image_size=32,
                           patch_size=8, projection_dim=32))
    cfg.save_pretrained(tmp_path)
    base = ["estimate", "--model", str(tmp_path), "--gpu", "H100 SXM", "--seq-len", str(S),
            "--tokens-per-sec", "1e6"]
    status, out, _ = run_cli(capsys, *base)
    assert status == 0
    assert "note: vision tower NOT counted: no image given, so FLOP/token and MFU are the " \
           "language model's alone; give the batch's images: --pixel-values SHAPE" in out
    assert "MFU (language only)" not in out
    status, out, _ = run_cli(capsys, *base, "--pixel-values", "1,3,32,32")
    f = transformer_flops(json.loads(cfg.to_json_string()), seq_len=S, pixel_values=(1, 3, 32, 32))
    assert status == 0
    assert f"note: vision tower counted: 1 image(s) in 1 tile(s) of 4x4 patches " \
           f"({100 * f.vision_flops / f.model_flops:.2f}% of the step; MFU (language only) " \
           "leaves it out)" in out
    # a small model's FLOP/token in the unit that shows it (not 0.00 GFLOP)
    assert f.flops_per_token < 1e6   # 0.00 GFLOP in two decimals
    assert field(out, "FLOP/token") == f"{f.flops_per_token / 1e3:.4g} KFLOP"


def test_estimate_takes_image_sizes(tmp_path, capsys):
    from _cli import field, run_cli

    cfg, _, given = _case("mistral3")
    cfg.save_pretrained(tmp_path)
    status, out, _ = run_cli(capsys, "estimate", "--model", str(tmp_path), "--gpu", "H100 SXM",
                             "--seq-len", str(S), "--tokens-per-sec", "1e6", "--pixel-values",
                             "1,3,32,48", "--image-sizes", "32,48")
    f = transformer_flops(cfg, seq_len=S, **given)
    assert status == 0
    assert field(out, "FLOP/token") == f"{f.flops_per_token / 1e3:.4g} KFLOP"
    assert "image_sizes [[32, 48]]" in out
    status, _, err = run_cli(capsys, "estimate", "--model", str(tmp_path), "--gpu", "H100 SXM",
                             "--seq-len", str(S), "--tokens-per-sec", "1e6", "--image-sizes",
                             "32x48")
    assert status == 2 and "--image-sizes takes H,W or NxH,W" in err


def test_images_errors_are_value_errors_and_mllama_counts_jointly():
    from mfu_tracker.flops import _meta_images

    assert issubclass(_meta_images.ImagesError, ValueError)
    assert set(_meta_images.JOINT) == {"mllama"}
