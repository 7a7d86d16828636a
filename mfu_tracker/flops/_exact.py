""":func:`~mfu_tracker.transformer_flops` for a model type without an
analytic formula (or with ``formula="exact"``): the exact count of one
forward + backward at the requested lengths, from the meta-device runs of
:mod:`._meta` (one per distinct sequence length, cached), summed over the
batch's sequences. Units: FLOPs.

A packed batch is the sum of its sequences: every layer but attention is
per token, and attention is per sequence, so counting each length once and
multiplying by how often it occurs is the count of the packed batch (with
the block-diagonal attention varlen kernels run).
"""
from __future__ import annotations

import collections
import types
from collections.abc import Mapping
from typing import Any

from .._validate import CAUSAL_ATTENTION, check_choice, check_int_rows
from ._hf_config import ConfigDims, dims_from_config, is_supported, named_config
from ._hf_vlm import pixel_shape
from ._meta import ALTERNATIVES, ExactConfig, MetaStep, exact_config, step_flops
from ._meta_images import JOINT, ImageStep, joint_row, joint_step, tower_step
from ._result import FORMULAS, TransformerFlops
from ._sequences import grid_rows, sequence_lengths

# Arguments the exact count cannot honour: (argument, the value it takes).
_FIXED = (("include_lm_head", True), ("include_embedding", False), ("lora_rank", None),
          ("lora_targets", None), ("activation_recompute", "none"),
          ("tie_word_embeddings", None), ("bias", None))


def check_exact_arguments(model_type: str, given: Mapping[str, Any],
                          dims: Mapping[str, Any]) -> None:
    """Refuse what the model as transformers builds it cannot show, naming
    the argument."""
    why = (f"model_type {model_type!r} has no analytic formula: its exact count runs the model "
           "as transformers builds it")
    formula = given.get("formula")
    if formula not in (None, "matmul", "exact"):
        raise ValueError(f"formula={formula!r} needs the analytic formula; {why} (every matmul "
                         "that runs: formula 'exact', which 'matmul' equals)")
    for argument, value in _FIXED:
        if given.get(argument) is not None and given[argument] != value:
            raise ValueError(f"{argument}={given[argument]!r} needs the analytic formula; {why} "
                             f"(leave {argument} at {value!r}, or {ALTERNATIVES})")
    if given.get("convention") is not None or given.get("context_parallel") is not None:
        raise ValueError(f"convention= and context_parallel= need the analytic formula; {why}")
    extra = {k: v for k, v in dims.items() if not (k == "num_mtp_layers" and v == 0)}
    if extra:
        raise TypeError(f"transformer_flops(): the dimension keyword(s) "
                        f"{', '.join(sorted(extra))} apply to the analytic formula; {why}")


def exact_images(config: Any, pixel_values: Any, image_grid_thw: Any,
                 image_sizes: Any = None) -> ImageStep | None:
    """The images of an exact count: pixel_values' shape (a tensor or the
    shape), the grid rows, each image's [height, width] (``image_sizes``);
    pixel_values from the grid for the towers that take flattened patches
    (Qwen-VL, GLM-4V)."""
    if pixel_values is None and image_grid_thw is None:
        if image_sizes is not None:
            raise ValueError("image_sizes needs pixel_values")
        return None
    grid = sizes = None
    if image_grid_thw is not None:
        grid = tuple(tuple(row) for row in grid_rows(image_grid_thw, "image_grid_thw"))
    if image_sizes is not None:
        rows = check_int_rows(image_sizes, "image_sizes")
        if any(len(row) != 2 or min(row) < 1 for row in rows):
            raise ValueError(f"image_sizes must hold one [height, width] per image, in pixels, "
                             f"each >= 1, got {rows}")
        sizes = tuple(tuple(row) for row in rows)
    if pixel_values is not None:
        shape = pixel_shape(pixel_values, min_dims=2)
        if sizes is not None and len(sizes) != shape[0]:
            raise ValueError(f"image_sizes holds {len(sizes)} [height, width] rows, but "
                             f"pixel_values {list(shape)} holds {shape[0]} image(s)")
    elif grid is not None:
        vision = getattr(exact_config(config).hf_config, "vision_config", None)
        channels = getattr(vision, "in_channels", None) or getattr(vision, "num_channels", 3)
        patch = getattr(vision, "patch_size", 14)
        temporal = getattr(vision, "temporal_patch_size", 1) or 1
        shape = (sum(t * h * w for t, h, w in grid), channels * temporal * patch * patch)
    return ImageStep(shape, grid, sizes)


def _tally(cfg: ExactConfig, lengths: list[int], causal: str,
           images: ImageStep | None) -> tuple[dict[str, int], MetaStep, MetaStep | None]:
    """Every count summed over the batch's sequences (each distinct length
    counted once), plus the vision tower on the images (a cross-attention
    VLM's: each sequence with its own images, in one step)."""
    totals: collections.Counter = collections.Counter()
    joint = images is not None and cfg.model_type in JOINT
    row = joint_row(cfg, images, len(lengths)) if joint else ()
    step = tower = None
    for length, times in sorted(collections.Counter(lengths).items()):
        step = joint_step(cfg, row, length, causal) if joint else step_flops(cfg, length, causal)
        totals.update(model=times * step.model_flops, executed=times * step.executed_flops,
                      forward=times * step.forward_flops, vision=times * step.vision_flops,
                      image_tokens=times * step.image_tokens)
    if step is None:
        raise ValueError("the batch holds no sequence with a token")
    if images is not None and not joint:
        tower = tower_step(cfg, images, causal)
        totals.update(model=tower.model_flops, executed=tower.executed_flops,
                      forward=tower.forward_flops, vision=tower.model_flops,
                      image_tokens=tower.image_tokens)
    return dict(totals), step, tower or (step if joint else None)


def _conventions_str(conv: Mapping[str, Any]) -> str:
    exact = conv["exact"]
    parts = [f"exact count: one forward + backward of {exact['model_class']} per sequence "
             f"length on the meta device, counted by FlopCounter ({exact['recipe']}); "
             + ("no analytic formula for model_type " + repr(conv["model_type"])
                if exact["reason"] == "no formula" else "formula 'exact' asked"),
             "causal attention: half s² (Megatron)" if conv["causal_attention"] == "half"
             else "causal attention: full s²",
             "lm_head counted · embedding excluded · full training · recompute: none",
             f"sequences from {conv['sequences']}"]
    if conv.get("vision") and conv["model_type"] in JOINT:
        parts.append(f"vision tower: {conv['vision']} (cross-attention: each sequence counted "
                     "in one step with its images, the tower's modules its vision FLOPs)")
    elif conv.get("vision"):
        parts.append(f"vision tower: {conv['vision']} (get_image_features counted on its own: "
                     f"{exact['tower_recipe']})")
    elif exact["tower"]:
        parts.append("vision tower NOT counted: no image input given (text-only step; "
                     "pass the batch's images to count it)")
    if exact["heavy_uncounted"]:
        parts.append("FLOP-heavy ops outside the FLOP table ran uncounted (their FLOPs are "
                     f"missing): {', '.join(exact['heavy_uncounted'])}")
    return " · ".join(parts)


def exact_transformer_flops(config: Any, *, lengths: list[int], source: str, causal: str,
                            images: ImageStep | None = None,
                            reason: str = "no formula") -> TransformerFlops:
    """The exact count of the batch ``lengths`` (every sequence's tokens)
    and its images."""
    cfg = exact_config(config)
    if sum(lengths) < 1:
        raise ValueError(f"{source}: the batch's tokens must be >= 1, got 0")
    if images is not None and not cfg.has_tower:
        raise ValueError(f"pixel_values / image_grid_thw given, but model_type "
                         f"{cfg.model_type!r} has no vision tower: its count cannot include "
                         "images")
    totals, step, tower = _tally(cfg, [n for n in lengths if n > 0], causal, images)
    tokens = sum(lengths)
    if totals.get("image_tokens", 0) > tokens:
        raise ValueError(f"{source}: the images make {totals['image_tokens']:,} image tokens, "
                         f"more than the batch's {tokens:,} tokens (the lengths count every "
                         "token, image placeholders included)")
    conventions = {
        "formula": "exact", "causal_attention": causal, "include_lm_head": True,
        "include_embedding": False, "activation_recompute": "none",
        "tie_word_embeddings": bool(getattr(cfg.hf_config, "tie_word_embeddings", False)),
        "lora": None, "sequences": source, "model_type": cfg.model_type,
        "windows": types.MappingProxyType({}),
        "vision": images.describe() if images is not None else None,
        "exact": types.MappingProxyType({
            "model_class": step.model_class, "recipe": step.recipe, "device": "meta",
            "reason": reason, "tower": cfg.has_tower,
            "heavy_uncounted": tuple(sorted(set(step.heavy_uncounted).union(
                tower.heavy_uncounted if tower else ()))),
            "tower_recipe": str(tower.recipe) if tower else None}),
    }
    return TransformerFlops(
        model_flops=float(totals["model"]), hardware_flops=float(totals["executed"]),
        forward_flops=float(totals["forward"]), attention_flops=None,
        flops_per_token=totals["model"] / tokens, num_tokens=tokens,
        num_params=(tower or step).num_params, num_embedding_params=step.num_embedding_params,
        num_active_params=None, num_adapter_params=0,
        conventions=types.MappingProxyType(conventions),
        conventions_str=_conventions_str(conventions),
        language_flops=float(totals["model"] - totals.get("vision", 0)),
        vision_flops=float(totals.get("vision", 0)), scan_flops=None,
    )


# ---------------------------------------------------------------------------
# The route from transformer_flops()
# ---------------------------------------------------------------------------

def counting_config(config: Any) -> ConfigDims | ExactConfig:
    """``config`` read once for repeated counts: its analytic dims, or, for a
    type without a formula, the transformers config the exact count builds
    (what the integrations keep). Raises as :func:`transformer_flops`."""
    config = named_config(config)
    if _exact_reason(config, None) is not None:
        return exact_config(config)
    return dims_from_config(config)


def _exact_reason(config: Any, formula: Any) -> str | None:
    """Why ``config`` takes the exact meta-device count (None: analytic)."""
    if isinstance(config, ExactConfig):
        return "no formula"
    if isinstance(config, ConfigDims) or config is None:
        return None
    if formula == "exact":
        return "asked"
    model_type = (config.get("model_type") if isinstance(config, Mapping)
                  else getattr(config, "model_type", None))
    return "no formula" if isinstance(model_type, str) and not is_supported(config) else None


def exact_route(config: Any, formula: Any, causal_attention: Any, dims: Mapping[str, Any],
                 given: Mapping[str, Any]) -> Any:
    """For a config without an analytic formula: a function of the batch
    that counts it exactly (:mod:`._exact`), the arguments checked; else
    None."""
    if formula is not None:
        check_choice(formula, "formula", (*FORMULAS, "exact"))
    config = named_config(config)
    reason = _exact_reason(config, formula)
    if reason is None:
        return None
    model_type = (config.model_type if isinstance(config, ExactConfig) else
                  config.get("model_type") if isinstance(config, Mapping) else config.model_type)
    causal = check_choice("full" if causal_attention is None else causal_attention,
                          "causal_attention", CAUSAL_ATTENTION, ignore_case=True)
    check_exact_arguments(model_type, given, dims)

    def count(seq_len: Any, batch_size: Any, seq_lens: Any, cu_seqlens: Any, position_ids: Any,
              attention_mask: Any, image_grid_thw: Any, video_grid_thw: Any,
              pixel_values: Any, image_sizes: Any) -> TransformerFlops:
        lengths, source = sequence_lengths(seq_len, batch_size, seq_lens, cu_seqlens,
                                           position_ids, attention_mask)
        if video_grid_thw is not None:
            raise ValueError(f"model_type {model_type!r} has no analytic formula: its exact "
                             "count takes images as pixel_values (with image_grid_thw or "
                             "image_sizes where the model takes them), not video_grid_thw")
        images = exact_images(config, pixel_values, image_grid_thw, image_sizes)
        return exact_transformer_flops(config, lengths=lengths or [seq_len] * batch_size,
                                       source=source, causal=causal, images=images,
                                       reason=reason)
    return count
