"""A VLM's images in the exact count (:mod:`._meta`): its vision tower and
projector, counted on their own through the model's ``get_image_features``
(the language model then runs the image placeholders as ordinary tokens),
or, for a model whose images enter the language model by cross-attention
(Mllama), one joint step of the sequence and its images.

Only what the model feeds its language model is made the loss (the
``pooler_output`` and what comes with it, never the encoder's other hidden
states), and a tower whose output reaches no trained weight (Chameleon's
VQ-VAE, whose image tokens are integers) is counted forward only: what
``torch.utils.flop_counter.FlopCounterMode`` counts of the real step.

Units: FLOPs; image sizes in pixels.
"""
from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from ._meta import (ALTERNATIVES, CPU_PARAMS_MAX, ExactConfig, MetaCountError, MetaStep, Recipe,
                    _logits, _model_for, _one_line, _Quiet, cache_step, cached_step)


class ImagesError(ValueError):
    """The images as given do not fit the model (no recipe helps)."""


@dataclasses.dataclass(frozen=True)
class ImageStep:
    """The images of one step (hashable: a cache key): the pixel_values
    shape, the image_grid_thw rows (towers that take them) and each image's
    [height, width] in pixels (``image_sizes``: towers that take them)."""

    pixel_shape: tuple[int, ...]
    grid: tuple[tuple[int, int, int], ...] | None = None
    sizes: tuple[tuple[int, int], ...] | None = None

    def describe(self) -> str:
        if self.grid is not None:
            patches = sum(t * h * w for t, h, w in self.grid)
            return f"{len(self.grid)} image(s), {patches:,} patches"
        sizes = f", image_sizes {[list(s) for s in self.sizes]}" if self.sizes else ""
        return f"pixel_values of shape {list(self.pixel_shape)}{sizes}"


# ---------------------------------------------------------------------------
# The tower on its own: get_image_features
# ---------------------------------------------------------------------------

def _tower_function(model: Any) -> Callable[..., Any] | None:
    """``get_image_features`` of the model or of its inner model (Janus)."""
    for owner in (model, getattr(model, "model", None)):
        function = getattr(owner, "get_image_features", None)
        if callable(function):
            return function
    return None


def _patch_size(hf_config: Any) -> int:
    vision = getattr(hf_config, "vision_config", None)
    patch = getattr(vision, "patch_size", 1)
    return int(patch[0] if isinstance(patch, (list, tuple)) else patch)


def _sizes(images: ImageStep, count: int) -> list[list[int]]:
    """image_sizes: the given rows, else every image the pixel tensor's
    height x width (unpadded images)."""
    if images.sizes is not None:
        return [list(s) for s in images.sizes]
    return [list(images.pixel_shape[-2:])] * count


def _spatial(images: ImageStep, patch: int, model_type: str) -> tuple[list[list[int]], int]:
    """LFM2-VL's spatial_shapes (patches per side) from image_sizes, and the
    patch slots of its pixel_values [images, patches, C * p^2]."""
    if images.sizes is None:
        raise ImagesError(f"model_type {model_type!r} needs each image's size: image_sizes="
                          f"[[height, width], ...] in pixels, multiples of its patch_size "
                          f"{patch} (the processor's spatial_shapes x patch_size)")
    slots = images.pixel_shape[1] if len(images.pixel_shape) == 3 else 0
    shapes = []
    for height, width in images.sizes:
        if height % patch or width % patch or (height // patch) * (width // patch) > slots:
            raise ImagesError(f"image_sizes {[list(s) for s in images.sizes]}: each [height, "
                              f"width] must be a multiple of model_type {model_type!r}'s "
                              f"patch_size {patch} and hold at most the {slots} patch slots "
                              f"of pixel_values {list(images.pixel_shape)} [images, patches, "
                              "channels x patch^2]")
        shapes.append([height // patch, width // patch])
    return shapes, slots


def tower_inputs(function: Callable[..., Any], model: Any, cfg: ExactConfig, images: ImageStep,
                 device: str) -> dict[str, Any]:
    """The keyword arguments of ``function`` (a ``get_image_features``) for
    the images: pixels of ones (meta: shapes only; an all-zero image is
    padding to Idefics 3), and as CPU tensors (their values are read) the
    grid, image_sizes, or LFM2-VL's spatial_shapes and patch mask."""
    import torch

    params = inspect.signature(function).parameters
    count = images.pixel_shape[0]
    kwargs: dict[str, Any] = {"pixel_values": torch.ones(
        images.pixel_shape, device=device, dtype=getattr(model, "dtype", torch.float32))}
    if images.grid is not None and "image_grid_thw" in params:
        kwargs["image_grid_thw"] = torch.tensor(images.grid, dtype=torch.long)
    if "image_sizes" in params:
        kwargs["image_sizes"] = torch.tensor(_sizes(images, count), dtype=torch.long)
    if "spatial_shapes" in params:
        shapes, slots = _spatial(images, _patch_size(cfg.hf_config), cfg.model_type)
        mask = torch.zeros(count, slots, dtype=torch.long)
        for i, (h, w) in enumerate(shapes):
            mask[i, :h * w] = 1
        kwargs.update(spatial_shapes=torch.tensor(shapes, dtype=torch.long),
                      pixel_attention_mask=mask.to(device))
    if images.sizes is not None and "image_sizes" not in params and "spatial_shapes" not in params:
        raise ImagesError(f"image_sizes given, but model_type {cfg.model_type!r}'s vision tower "
                          "takes no image sizes (its images are whole pixel_values tiles)")
    needed = [name for name, p in params.items() if p.default is inspect.Parameter.empty
              and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL) and name not in kwargs]
    if needed:
        raise MetaCountError(f"model_type {cfg.model_type!r}: its get_image_features needs "
                             f"{', '.join(needed)}, which the count cannot make; {ALTERNATIVES}")
    return kwargs


#: Fields a model reads of its get_image_features output beside the
#: pooler_output (transformers 5.24: Qwen3-VL's and its kin's
#: ``mm_encoder_outputs["image"].deepstack_features``, Ovis 2's
#: ``visual_indicator_features``); the rest (hidden states, Chameleon's VQ
#: loss) reaches no loss.
_WITH_POOLER = ("deepstack_features", "visual_indicator_features")


def _tensors(value: Any) -> list[Any]:
    """Every floating tensor inside a model output field."""
    import torch

    if isinstance(value, torch.Tensor):
        return [value] if value.is_floating_point() else []
    if isinstance(value, Mapping):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in _tensors(item)]
    return []


def consumed(output: Any) -> tuple[list[Any], int]:
    """What a VLM feeds its language model of ``get_image_features``'
    output, and the image tokens it makes (rows of the features): the
    ``pooler_output`` and the fields beside it (Qwen3-VL's deepstack
    features), never the encoder's hidden states (LLaVA reads one of them:
    the layers above it reach no loss: :data:`_WITH_POOLER`); an output
    without a pooler, its ``last_hidden_state``."""
    pooler = getattr(output, "pooler_output", None)
    if pooler is not None:
        extra = [t for key in _WITH_POOLER for t in _tensors(getattr(output, key, None))]
        features = _tensors(pooler)
        return features + extra, sum(t.numel() // t.shape[-1] for t in features if t.dim())
    last = getattr(output, "last_hidden_state", None)
    features = _tensors(last if last is not None else output)
    return features, sum(t.numel() // t.shape[-1] for t in features if t.dim())


def _reaches_a_weight(loss: Any, model: Any) -> bool:
    """Whether the features' gradient reaches a trained weight other than
    the input embedding (a lookup: no FLOPs): Chameleon's image tokens are
    integers, so its VQ-VAE encoder gets no backward. Read from the autograd
    graph's leaves, without running a backward (which would count)."""
    embed = getattr(model.get_input_embeddings(), "weight", None)
    weights = {id(p) for p in model.parameters() if p.requires_grad and p is not embed}
    seen: set[int] = set()
    stack = [getattr(loss, "grad_fn", None)]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if id(getattr(node, "variable", None)) in weights:  # an AccumulateGrad leaf
            return True
        stack.extend(next_node for next_node, _ in node.next_functions)
    return False


def _tower_run(model: Any, cfg: ExactConfig, images: ImageStep, device: str,
               causal: str) -> tuple[Any, int]:
    """(counter, image tokens) of one forward + backward of the tower; a
    tower whose output trains no weight, forward only."""
    import torch

    from .counter._counter import FlopCounter

    function = _tower_function(model)
    if function is None:
        raise MetaCountError(f"model_type {cfg.model_type!r}: its model has no "
                             f"get_image_features; {ALTERNATIVES}")
    kwargs = tower_inputs(function, model, cfg, images, device)
    params = [p for p in model.parameters() if p.requires_grad]
    with _Quiet(), FlopCounter(causal_attention=causal, modules=False, audit=True) as fc:
        features, tokens = consumed(function(**kwargs))
        if not features:
            raise MetaCountError("get_image_features returned no features")
        loss = sum(f.float().sum() for f in features)
        trained = _reaches_a_weight(loss, model)
        if trained:
            torch.autograd.grad(loss, params, allow_unused=True)
    if trained:
        return fc, tokens
    with _Quiet(), torch.no_grad(), FlopCounter(causal_attention=causal, modules=False,
                                                audit=True) as forward:
        function(**kwargs)
    return forward, tokens


# ---------------------------------------------------------------------------
# Cross-attention VLMs: the sequence and its images in one step
# ---------------------------------------------------------------------------

def _mllama_inputs(row: tuple[int, ...], length: int, device: str) -> dict[str, Any]:
    """MllamaForConditionalGeneration.forward's image inputs (transformers
    5.24 models/mllama/modeling_mllama.py) for one sequence whose images are
    ``row`` = [images, tiles, channels, height, width]: every tile real,
    every token attending to every tile (a mask costs no FLOPs: the
    cross-attention computes every pair)."""
    import torch

    images, tiles = row[0], row[1]
    return {"pixel_values": torch.ones((1, *row), device=device),
            "aspect_ratio_ids": torch.ones(1, images, dtype=torch.long, device=device),
            "aspect_ratio_mask": torch.ones(1, images, tiles, dtype=torch.long, device=device),
            "cross_attention_mask": torch.ones(1, length, images, tiles, dtype=torch.long,
                                               device=device)}


#: model_type -> (its tower's modules, the step's image inputs): VLMs whose
#: images reach the language model by cross-attention, not as placeholder
#: tokens (transformers 5.24 models/mllama/modeling_mllama.py: MllamaModel's
#: vision_model and multi_modal_projector, MllamaCrossAttentionDecoderLayer).
JOINT = {"mllama": (("model.vision_model", "model.multi_modal_projector"), _mllama_inputs)}


def joint_row(cfg: ExactConfig, images: ImageStep, sequences: int) -> tuple[int, ...]:
    """One sequence's images of a cross-attention VLM: pixel_values holds a
    row [images, tiles, channels, height, width] per sequence."""
    shape = images.pixel_shape
    if len(shape) != 6 or shape[0] != sequences:
        raise ImagesError(f"pixel_values {list(shape)}: model_type {cfg.model_type!r} attends "
                          "to each sequence's own images (cross-attention): give pixel_values "
                          "[sequences, images, tiles, channels, height, width], one row per "
                          f"sequence of the batch ({sequences})")
    return shape[1:]


def _joint_run(model: Any, cfg: ExactConfig, row: tuple[int, ...], length: int, recipe: Recipe,
               causal: str) -> tuple[Any, int]:
    """(counter, the tower's model FLOPs) of one sequence with its images."""
    import torch

    from .counter._counter import FlopCounter

    modules, make_inputs = JOINT[cfg.model_type]
    kwargs = make_inputs(row, length, recipe.device)
    # a cache, as the text steps pass one (_meta.py): without it the
    # language model reads the position ids, which meta tensors lack
    kwargs.update(input_ids=torch.zeros(1, length, dtype=torch.long, device=recipe.device),
                  use_cache=True)
    params = [p for p in model.parameters() if p.requires_grad]
    with _Quiet(), FlopCounter(causal_attention=causal, modules=True, audit=True) as fc:
        logits = _logits(model(**kwargs))
        torch.autograd.grad(logits.float().sum(), params, allow_unused=True)
    rows = fc.by_module
    tower = sum(row_.model_flops for name, row_ in rows.items()
                if any(name.endswith("." + m) for m in modules))
    return fc, int(tower)


# ---------------------------------------------------------------------------
# The recipes and the cache
# ---------------------------------------------------------------------------

_TOWER_RECIPES = (Recipe("sdpa", "pixel_values", cache=False),
                  Recipe("eager", "pixel_values", cache=False),
                  Recipe("sdpa", "pixel_values", False, "float32", "cpu"),
                  Recipe("eager", "pixel_values", False, "float32", "cpu"))

# What a meta tensor cannot do: a recipe that fails so says nothing of the
# images (the next recipe may run them).
_META_LIMITS = ("meta tensor", "device meta", "register_meta", "meta function",
                "on the expected device")


def _images_error(cfg: ExactConfig, images: ImageStep, errors: list[BaseException]) -> Exception:
    """One line: the images do not fit the tower (a failure that is not the
    meta device's), else the tower could not be counted at all."""
    telling = [e for e in errors if not any(m in str(e) for m in _META_LIMITS)]
    if telling and not isinstance(telling[0], MetaCountError):
        vision = getattr(cfg.hf_config, "vision_config", None)
        geometry = ", ".join(f"{key} {getattr(vision, key)}" for key in ("image_size", "patch_size")
                             if getattr(vision, key, None) is not None)
        return ValueError(f"pixel_values: model_type {cfg.model_type!r}'s vision tower cannot run "
                          f"on {images.describe()}" + (f" ({geometry})" if geometry else "")
                          + f": transformers raises {_one_line(telling[0])}")
    cause = telling[0] if telling else (errors[-1] if errors else
                                        MetaCountError("too large to count on CPU"))
    return MetaCountError(f"model_type {cfg.model_type!r}: its vision tower could not be "
                          f"counted on the images ({_one_line(cause)}); it reads tensor values, "
                          "which the meta device does not have, and only models of at most "
                          f"{CPU_PARAMS_MAX:,} parameters run on CPU; {ALTERNATIVES}")


def _step_of(fc: Any, model: Any, recipe: Recipe, vision: int, tokens: int) -> MetaStep:
    return MetaStep(model_flops=fc.model_flops, executed_flops=fc.executed_flops,
                    forward_flops=fc.forward_flops, vision_flops=vision,
                    num_params=int(model.num_parameters()), num_embedding_params=0,
                    model_class=type(model).__name__, recipe=str(recipe),
                    heavy_uncounted=tuple(sorted({r.name for r in fc.uncounted() if r.heavy})),
                    image_tokens=tokens)


def _counted(cfg: ExactConfig, images: ImageStep, key: tuple,
             run: Callable[[Any, Recipe], MetaStep]) -> MetaStep:
    """The first tower recipe that runs, cached under ``key``."""
    step = cached_step(key)
    if step is not None:
        return step
    errors: list[BaseException] = []
    for recipe in _TOWER_RECIPES:
        try:
            model = _model_for(cfg, recipe, True)
            if model is None:
                continue
            step = run(model, recipe)
        except ImagesError as exc:  # the images as given: no recipe helps
            raise ValueError(str(exc)) from None
        except BaseException as exc:  # noqa: BLE001 -- every failure is reported, none raised
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            errors.append(exc)
            continue
        else:
            return cache_step(key, step)
    raise _images_error(cfg, images, errors) from None


def tower_step(cfg: ExactConfig, images: ImageStep, causal: str) -> MetaStep:
    """The model's ``get_image_features`` (vision tower + projector) on the
    images, forward + backward (forward only when it trains no weight), on
    meta, else (small models) on CPU; cached. Its FLOPs are the step's
    vision FLOPs (the language model runs the image tokens as ordinary
    tokens)."""
    def run(model: Any, recipe: Recipe) -> MetaStep:
        fc, tokens = _tower_run(model, cfg, images, recipe.device, causal)
        return _step_of(fc, model, recipe, fc.model_flops, tokens)
    return _counted(cfg, images, (cfg.key, "tower", causal, images), run)


def joint_step(cfg: ExactConfig, row: tuple[int, ...], length: int, causal: str) -> MetaStep:
    """One sequence of ``length`` tokens with its images ``row`` of a
    cross-attention VLM (:data:`JOINT`), forward + backward; its
    ``vision_flops`` the tower's share; cached."""
    def run(model: Any, recipe: Recipe) -> MetaStep:
        fc, tower = _joint_run(model, cfg, row, length, recipe, causal)
        return _step_of(fc, model, recipe, tower, row[0])
    return _counted(cfg, ImageStep((1, *row)), (cfg.key, "joint", causal, row, length), run)
