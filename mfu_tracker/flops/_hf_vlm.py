"""The vision side of composite VLM configs whose tower is counted
analytically by the fixed-resolution formulas (``csrc/core/model/vision_tiles.c``):
Gemma 3 (SigLIP + pooled projector), Llama 4 (its encoder, pixel shuffle,
projector) and the LLaVA family (a CLIP or SigLIP encoder + LLaVA's
projector: llava, llava_next, llava_onevision). The language model is read
from ``text_config`` by its own family (:mod:`._hf_config`).

Also the image input: ``pixel_values`` (tiles x channels x height x width)
as the C core's grids, one row per image of ``tiles`` tiles, with LLaVA-NeXT's
"anyres" tiling recomputed from ``image_sizes`` the way its processor and
model cut an image (so padding tiles in a batch are never counted).
"""
from __future__ import annotations

import math
from typing import Any

from .._validate import check_int_rows

#: composite model_type -> tower family.
COMPOSITES = {"gemma3": "gemma3", "llama4": "llama4", "llava": "llava",
              "llava_next": "llava", "llava_onevision": "llava"}

# vision_config.model_type -> the LLaVA tower kind.
_LLAVA_TOWERS = {"clip_vision_model": "llava_clip", "siglip_vision_model": "llava_siglip"}

# tower dims field -> vision_config keys
_KEYS = {
    "depth": ("num_hidden_layers",),
    "hidden_size": ("hidden_size",),
    "intermediate_size": ("intermediate_size",),
    "num_heads": ("num_attention_heads",),
    "in_channels": ("num_channels",),
    "patch_size": ("patch_size",),
    "image_size": ("image_size",),
}


def tower_kind(top: Any, model_type: str) -> str | None:
    """The C core's tower kind for a composite config (``top``: the config
    reader of :mod:`._hf_config`), None for a tower it has no formula for."""
    family = COMPOSITES.get(model_type)
    if family != "llava":
        return family
    vision = top.sub("vision_config")
    vision_type = vision.get("model_type") if vision is not None else "clip_vision_model"
    return _LLAVA_TOWERS.get(vision_type)


def tile_vision_dims(top: Any, kind: str, text_hidden: int) -> dict[str, Any] | None:
    """The tower's dims from ``top``'s ``vision_config`` (None without one)."""
    vision = top.sub("vision_config")
    if vision is None:
        return None
    out: dict[str, Any] = {"kind": kind, "out_hidden_size": text_hidden}
    for field, keys in _KEYS.items():
        out[field] = vision.require(f"vision.{field}", keys)
    if kind in ("gemma3", "llava_siglip"):
        out["use_head"] = vision.flag("vision_use_head", True)  # SiglipVisionConfig's default
    if kind == "gemma3":
        out["tokens_per_image"] = top.int("vision.tokens_per_image", ("mm_tokens_per_image",),
                                          default=256, minimum=1)
    elif kind.startswith("llava"):
        layer = top.get("vision_feature_layer", -2)
        layers = list(layer) if isinstance(layer, (list, tuple)) else [layer]
        out["feature_layers"] = len(layers)
        out["unused_layers"] = _unused_layers(layers, out["depth"])
        out["keep_cls"] = top.get("vision_feature_select_strategy", "default") == "full"
        out["projector_bias"] = top.flag("multimodal_projector_bias", True)
        out["image_newline"] = top.get("model_type") in ("llava_next", "llava_onevision")
    else:  # llama4
        ratio = float(vision.get("pixel_shuffle_ratio", 0.5))
        out["pixel_shuffle_inverse"] = int(round(1.0 / ratio)) if ratio > 0 else 0
        for field in ("projector_input_dim", "projector_output_dim", "vision_output_dim"):
            out[field] = vision.require(f"vision.{field}", (field,))
    return out


def _unused_layers(layers: list[Any], depth: int) -> int:
    """The encoder layers above the deepest hidden state LLaVA reads
    (``hidden_states[i]``, 0 = the embeddings, ``depth`` = the last layer;
    negative from the end): they run, and no loss reaches them."""
    deepest = -1
    for i in layers:
        if isinstance(i, bool) or not isinstance(i, int) or not -(depth + 1) <= i <= depth:
            raise ValueError(f"config.vision_feature_layer must hold hidden-state indices "
                             f"between {-(depth + 1)} and {depth}, got {layers}")
        deepest = max(deepest, i % (depth + 1))
    return depth - deepest


# ---------------------------------------------------------------------------
# pixel_values -> tiles
# ---------------------------------------------------------------------------

def pixel_shape(pixel_values: Any, min_dims: int = 4) -> tuple[int, ...]:
    """pixel_values' shape (the tensor or its shape), at least ``min_dims``
    dimensions (a tiled tower's [..., channels, height, width]: 4), each >= 1."""
    shape = getattr(pixel_values, "shape", pixel_values)
    try:
        dims = tuple(int(n) for n in shape)
    except (TypeError, ValueError):
        raise TypeError("pixel_values must be a tensor (or its shape: tiles x channels x "
                        f"height x width), not {type(pixel_values).__name__}") from None
    if len(dims) < min_dims or min(dims) < 1:
        raise ValueError(f"pixel_values must have a shape with at least {min_dims} dims"
                         + (" [..., channels, height, width]" if min_dims == 4 else "")
                         + f", each >= 1, got {list(dims)}")
    return dims


def _best_resolution(size: tuple[int, int], pinpoints: list[list[int]]) -> tuple[int, int]:
    """LLaVA-NeXT's select_best_resolution: the pinpoint keeping the most
    of the image's pixels once scaled to fit, then the least waste."""
    height, width = size
    best, best_kept, best_waste = (0, 0), -1, math.inf
    for h, w in pinpoints:
        scale = min(w / width, h / height)
        kept = min(int(width * scale) * int(height * scale), width * height)
        waste = h * w - kept
        if kept > best_kept or (kept == best_kept and waste < best_waste):
            best, best_kept, best_waste = (h, w), kept, waste
    return best


def _anyres_tiles(size: tuple[int, int], pinpoints: list[list[int]], tile: int) -> int:
    """Tiles of one image: the crops of its best resolution + the base image."""
    h, w = _best_resolution(size, pinpoints)
    return math.ceil(h / tile) * math.ceil(w / tile) + 1


def tile_grids(pixel_values: Any, image_sizes: Any, vision: dict[str, Any],
               pinpoints: Any) -> tuple[list[list[int]], str]:
    """The C core's grids ([tiles, h, w] in patches) of ``pixel_values`` and
    their description. 5-D pixel_values [images, crops, C, H, W] with
    ``image_sizes`` keep only each image's real crops (anyres)."""
    dims = pixel_shape(pixel_values)
    patch = vision["patch_size"]
    h, w = dims[-2] // patch, dims[-1] // patch
    if image_sizes is None:
        tiles = [math.prod(dims[:-3])]
    else:
        if len(dims) != 5 or not pinpoints:
            raise ValueError("image_sizes applies to LLaVA-NeXT / OneVision pixel_values "
                             "[images, crops, channels, height, width] of a config with "
                             "image_grid_pinpoints")
        sizes = check_int_rows(image_sizes, "image_sizes")
        if len(sizes) != dims[0] or any(len(s) != 2 for s in sizes):
            raise ValueError(f"image_sizes must hold one [height, width] per image ({dims[0]}), "
                             f"got {sizes}")
        tiles = [min(dims[1], _anyres_tiles((s[0], s[1]), pinpoints, vision["image_size"]))
                 for s in sizes]
    rows = [[t, h, w] for t in tiles]
    return rows, f"{len(tiles)} image(s) in {sum(tiles)} tile(s) of {h}x{w} patches"
