"""The exact count of one training step of a model transformers can build,
on the ``meta`` device: no weights, no memory, no download.

Used by :func:`mfu_tracker.transformer_flops` for a ``model_type`` the
analytic formula does not know (and by ``mfu-tracker estimate`` / ``profile``
through it): the model is built from its config on ``meta``, one forward +
backward of one sequence runs under :class:`~mfu_tracker.FlopCounter`, and
its model / executed / forward FLOPs are kept per (config, length).

A meta tensor has a shape but no values, so nothing may read one
(``.item()``): transformers reads the position ids to detect packed
sequences when there is neither a cache nor a mask, and a padding mask to
skip it. The step therefore runs with ``use_cache=True`` (whatever the saved
config says: FLOPs do not change, the cache only stores keys and values),
and when a model still reads a value, with eager attention and an explicit
all-ones mask, then with input embeddings (the embedding lookup counts 0
FLOPs either way). The recipe that ran is recorded.

Any failure is one :class:`MetaCountError` line naming the model type and
the cause, whatever transformers raised.
"""
from __future__ import annotations

import collections
import copy
import dataclasses
import warnings
from collections.abc import Mapping
from typing import Any, NamedTuple

from .._install import extra_install
from ._meta_scans import batched_calls, batched_scans
from .presets import decode_special_floats

#: What a caller can do when a model cannot be counted here.
ALTERNATIVES = ("count a real training step with mfu_tracker.FlopCounter, or "
                "mfu_tracker.profile_flops(model, batch, device=\"meta\") on a model you build")



class Recipe(NamedTuple):
    """How one step is run: attention implementation, model inputs, whether
    a cache is passed, dtype (the config's or float32) and device."""

    attention: str
    inputs: str
    cache: bool = True
    dtype: str = "config"
    device: str = "meta"
    batched_scan: bool = False  # a token-by-token scan ran batched (_meta_scans.py)

    def __str__(self) -> str:
        where = ("on CPU with real weights (seed 0): the model reads tensor values, which "
                 "meta tensors do not have; FLOPs that depend on them (routing) are this "
                 "input's" if self.device == "cpu" else "on meta")
        batched = (", its token-by-token Mamba scan run as one batched matmul (the same "
                   "FLOPs)" if self.batched_scan else "")
        return (f"{self.attention} attention, {self.inputs}"
                f"{', use_cache' if self.cache else ''}, {where}{batched}")


#: Tried in order until one runs (the recipe that worked for a config
#: first): on meta, the config's dtype then float32 (an op that insists on
#: one), sdpa then eager attention (eager builds its mask without reading
#: it), the token ids with a cache, then an all-ones mask, then no cache,
#: then embeddings (no ids to read); last, on CPU, small models only.
RECIPES = (
    *(Recipe(attention, inputs, cache, dtype)
      for dtype in ("config", "float32")
      for attention in ("sdpa", "eager")
      for inputs, cache in (("input_ids", True), ("input_ids + attention_mask", True),
                            ("input_ids + attention_mask", False), ("inputs_embeds", True),
                            ("inputs_embeds", False),
                            ("inputs_embeds + attention_mask", True))),
    Recipe("sdpa", "input_ids", cache=False, dtype="float32", device="cpu"),
    Recipe("eager", "input_ids", cache=False, dtype="float32", device="cpu"),
)

#: The CPU recipes run only models this small (parameters; float32: 4 bytes
#: each): a model the meta device cannot run is counted for real only when
#: that costs little.
CPU_PARAMS_MAX = 50_000_000

_MODELS_KEPT = 2        # built meta models kept (each a full module tree, no tensors)
_STEPS_KEPT = 4096      # counted (config, length, convention, images) steps kept


class MetaCountError(ValueError):
    """The exact count failed: one line naming the model type and the cause."""


@dataclasses.dataclass(frozen=True)
class MetaStep:
    """The count of one forward + backward of one sequence (FLOPs, not FLOP/s).

    ``vision_flops``: the model FLOPs of the vision tower and projector
    modules (0 when no image ran); ``heavy_uncounted``: FLOP-heavy ops that
    ran outside the FLOP table (their FLOPs are missing).
    """

    model_flops: int
    executed_flops: int
    forward_flops: int
    vision_flops: int
    num_params: int
    num_embedding_params: int
    model_class: str
    recipe: str
    heavy_uncounted: tuple[str, ...]
    image_tokens: int = 0  # a tower's: the feature rows it hands the language model


class ExactConfig:
    """A transformers config ready for meta counts: the config object, its
    model type and a key that identifies it (its JSON) for the caches."""

    def __init__(self, hf_config: Any, model_type: str, key: str) -> None:
        self.hf_config = hf_config
        self.model_type = model_type
        self.key = key
        self.vision_config = getattr(hf_config, "vision_config", None)

    @property
    def has_tower(self) -> bool:
        """Whether the config describes an image encoder: a vision tower
        (``vision_config``) or a VQ-VAE image tokenizer (``vq_config``:
        Chameleon's encoder runs on every image)."""
        return any(getattr(self.hf_config, key, None) is not None
                   for key in ("vision_config", "vq_config"))


def _transformers() -> Any:
    try:
        import transformers
    except ImportError as exc:
        raise MetaCountError("the exact count builds the model with transformers, which is not "
                             f"installed: {extra_install('hf')}; or "
                             f"{ALTERNATIVES}") from exc
    return transformers


class _Quiet:
    """transformers' own logging (config warnings, kernel fall-backs) held at
    errors while a meta model is configured, built and run: the count's
    outcome is its result or its one error line."""

    def __enter__(self) -> "_Quiet":
        from transformers.utils import logging

        self._level = logging.get_verbosity()
        logging.set_verbosity_error()
        self._warnings = warnings.catch_warnings()
        self._warnings.__enter__()
        warnings.simplefilter("ignore")
        return self

    def __exit__(self, *exc: Any) -> None:
        from transformers.utils import logging

        self._warnings.__exit__(*exc)
        logging.set_verbosity(self._level)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    text = text if len(text) <= 300 else text[:297] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def exact_config(config: Any) -> ExactConfig:
    """``config`` (a ``config.json`` dict or a transformers config object)
    as an :class:`ExactConfig`; a config transformers refuses is a
    :class:`MetaCountError`."""
    transformers = _transformers()
    if isinstance(config, ExactConfig):
        return config
    if isinstance(config, Mapping):
        fields = decode_special_floats(dict(config))
        model_type = fields.pop("model_type", None)
        if not isinstance(model_type, str):
            raise MetaCountError("config has no model_type: transformers cannot build it")
        for key in ("architectures", "transformers_version", "_name_or_path"):
            fields.pop(key, None)
        try:
            with _Quiet():
                hf_config = transformers.AutoConfig.for_model(model_type, **fields)
        except BaseException as exc:  # noqa: BLE001 -- any refusal is one line
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            raise MetaCountError(f"model_type {model_type!r}: transformers refuses the config "
                                 f"({_one_line(exc)})") from None
    else:
        model_type = getattr(config, "model_type", None)
        if not isinstance(model_type, str) or not hasattr(config, "to_json_string"):
            raise MetaCountError(f"config of type {type(config).__name__} is not a transformers "
                                 "config (no model_type / to_json_string)")
        # a copy: building a model sets fields on its config (the attention
        # implementation), which must touch neither the user's object nor
        # the cache key
        hf_config = copy.deepcopy(config)
    try:
        key = hf_config.to_json_string(use_diff=False)
    except Exception:  # noqa: BLE001 -- a config that cannot serialize: identity instead
        key = f"{type(hf_config).__qualname__}@{id(hf_config)}"
    return ExactConfig(hf_config, model_type, key)


def _auto_class(transformers: Any, cfg: ExactConfig, with_images: bool) -> Any:
    from transformers.models.auto import modeling_auto as auto

    text = cfg.model_type in auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    vlm = cfg.model_type in auto.MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES
    if with_images:
        if not vlm:
            raise MetaCountError(f"model_type {cfg.model_type!r}: transformers has no "
                                 "image-text-to-text model for it, so images cannot run")
        return transformers.AutoModelForImageTextToText
    if text:
        return transformers.AutoModelForCausalLM
    if vlm:
        return transformers.AutoModelForImageTextToText
    raise MetaCountError(f"model_type {cfg.model_type!r}: transformers has no causal-LM or "
                         "image-text-to-text model for it")


_models: "collections.OrderedDict[tuple, Any]" = collections.OrderedDict()


def _dtype(cfg: ExactConfig, which: str) -> Any:
    """The config's dtype (bf16 when it has none: what training runs and what
    grouped-GEMM MoE experts need on meta), or float32. FLOPs do not depend
    on it."""
    import torch

    if which == "float32":
        return torch.float32
    name = getattr(cfg.hf_config, "dtype", None)
    dtype = name if isinstance(name, torch.dtype) else getattr(
        torch, str(name or "bfloat16").replace("torch.", ""), None)
    return dtype if isinstance(dtype, torch.dtype) and dtype.is_floating_point else torch.bfloat16


def build_model(cfg: ExactConfig, attention: str, dtype: str = "config",
                with_images: bool = False, device: str = "meta") -> Any:
    """The model of ``cfg`` on ``device`` (meta: no memory), in training mode
    (kept: the last :data:`_MODELS_KEPT` built)."""
    import torch

    key = (cfg.key, attention, dtype, with_images, device)
    if key in _models:
        _models.move_to_end(key)
        return _models[key]
    transformers = _transformers()
    auto = _auto_class(transformers, cfg, with_images)
    try:
        # seeded: a real (CPU) model's routing, where FLOPs depend on it, is
        # the same at every count
        with torch.device(device), _Quiet(), torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            model = auto.from_config(cfg.hf_config, attn_implementation=attention,
                                     dtype=_dtype(cfg, dtype))
    except BaseException as exc:  # noqa: BLE001 -- any refusal is one line
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        raise MetaCountError(f"model_type {cfg.model_type!r}: transformers cannot build the "
                             f"model ({_one_line(exc)})") from None
    model.train()  # a training step (RWKV rescales its weights in eval mode)
    languages = getattr(cfg.hf_config, "languages", None)
    if hasattr(model, "set_default_language") and languages and \
            getattr(cfg.hf_config, "default_language", None) is None:
        model.set_default_language(list(languages)[0])  # X-MOD: any adapter costs the same
    _models[key] = model
    while len(_models) > _MODELS_KEPT:
        _models.popitem(last=False)
    return model


def _inputs(model: Any, recipe: Recipe, batch_size: int, length: int,
            extra: Mapping[str, Any]) -> dict[str, Any]:
    import torch

    device = recipe.device
    kwargs: dict[str, Any] = {"use_cache": recipe.cache,
                              **{k: v.to(device) if hasattr(v, "to") else v
                                 for k, v in extra.items()}}
    if recipe.inputs.startswith("inputs_embeds"):
        embed = model.get_input_embeddings()
        kwargs.pop("input_ids", None)
        kwargs["inputs_embeds"] = torch.zeros(batch_size, length, embed.embedding_dim,
                                              device=device, dtype=embed.weight.dtype)
    elif "input_ids" not in kwargs:
        kwargs["input_ids"] = torch.zeros(batch_size, length, dtype=torch.long, device=device)
    if recipe.inputs.endswith("attention_mask"):
        kwargs["attention_mask"] = torch.ones(batch_size, length, dtype=torch.long,
                                              device=device)
    cache = _unpadded_cache(model) if recipe.cache else None
    if cache is not None:
        kwargs["cache"] = cache
    return kwargs


def _unpadded_cache(model: Any) -> Any:
    """A fresh cache that records its short-convolution states as they come
    (transformers' ``activate_past_recording``), or None for a model without
    such layers (or that takes no ``cache``). The cache a model makes itself
    pads a prefill shorter than the convolution kernel to the kernel
    (cache_utils.py, ``update_conv_state``): a 1-token step would convolve
    k positions where a training step, which has no cache, convolves one."""
    import inspect

    try:
        from transformers.cache_utils import DynamicCache, LinearAttentionCacheLayerMixin

        if "cache" not in inspect.signature(model.forward).parameters:
            return None
        cache = DynamicCache(config=model.config)
    except Exception:  # noqa: BLE001 -- no such cache here: the model makes its own
        return None
    if not any(isinstance(layer, LinearAttentionCacheLayerMixin)
               for layer in getattr(cache, "layers", ())):
        return None
    cache.activate_past_recording()
    return cache


def _logits(output: Any) -> Any:
    logits = getattr(output, "logits", None)
    if logits is None and isinstance(output, (tuple, list)) and output:
        logits = output[0]
    return logits


def _run(model: Any, kwargs: Mapping[str, Any], causal: str, modules: bool,
         forward_only: bool) -> Any:
    import torch

    from .counter._counter import FlopCounter

    params = [p for p in model.parameters() if p.requires_grad]
    with _Quiet():
        with FlopCounter(causal_attention=causal, modules=modules, audit=True) as fc:
            if forward_only:
                with torch.no_grad():
                    model(**kwargs)
            else:
                logits = _logits(model(**kwargs))
                if logits is None:
                    raise MetaCountError("the model returned no logits")
                torch.autograd.grad(logits.float().sum(), params, allow_unused=True)
    return fc


def _run_with_cache(model: Any, kwargs: dict[str, Any], causal: str, modules: bool,
                    forward_only: bool) -> Any:
    """:func:`_run`; a model that refuses the step's own cache (MiniMax keeps
    a cache class of its own) runs again with the cache it makes."""
    try:
        return _run(model, kwargs, causal, modules, forward_only)
    except Exception:  # noqa: BLE001 -- retried once, else raised as it was
        if "cache" not in kwargs:
            raise
    return _run(model, {k: v for k, v in kwargs.items() if k != "cache"}, causal, modules,
                forward_only)


class _BuildError(Exception):
    """transformers refused to build the model (one recipe)."""


def _model_for(cfg: ExactConfig, recipe: Recipe, with_images: bool) -> Any:
    """The model a recipe runs; None for a CPU recipe on a model too large
    to run for real (:data:`CPU_PARAMS_MAX`)."""
    try:
        if recipe.device == "cpu":
            size = build_model(cfg, "eager", "config", with_images).num_parameters()
            if size > CPU_PARAMS_MAX:
                return None
        return build_model(cfg, recipe.attention, recipe.dtype, with_images, recipe.device)
    except MetaCountError as exc:
        raise _BuildError(str(exc)) from None


def _recipes(cfg: ExactConfig, attention: str) -> tuple[Recipe, ...]:
    """The recipes to try: an attention implementation other than sdpa when
    asked, the recipe that last worked for ``cfg``, then :data:`RECIPES`."""
    worked = [_working_recipe[cfg.key]] if cfg.key in _working_recipe else []
    asked = [Recipe(attention, "input_ids")]
    order = (*asked, *worked) if attention != "sdpa" else (*worked, *asked)
    out: list[Recipe] = []
    for recipe in (*order, *RECIPES):
        if recipe not in out:
            out.append(recipe)
    return tuple(out)


def run_counted(cfg: ExactConfig, *, batch_size: int, length: int, causal: str,
                forward_only: bool = False, attention: str = "sdpa",
                modules: bool = False) -> tuple[Any, Any, Recipe]:
    """One step of ``batch_size`` sequences of ``length`` tokens (text: a
    VLM's tower does not run) on the meta device under a FlopCounter (its
    module table when ``modules``), trying the recipes in turn: (counter,
    model, recipe).

    Raises:
        MetaCountError: every recipe failed (the most telling cause), or an
            op call could not be counted.
    """
    errors: list[BaseException] = []
    for recipe in _recipes(cfg, attention):
        try:
            model = _model_for(cfg, recipe, False)
            if model is None:
                continue
            before = batched_calls()
            with batched_scans():
                fc = _run_with_cache(model, _inputs(model, recipe, batch_size, length, {}),
                                     causal, modules, forward_only)
        except BaseException as exc:  # noqa: BLE001 -- every failure is reported, none raised
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            errors.append(exc)
            continue
        recipe = recipe._replace(batched_scan=batched_calls() > before)
        _working_recipe[cfg.key] = recipe
        if fc.errors:
            raise MetaCountError(f"model_type {cfg.model_type!r}: {fc.errors} op call(s) could "
                                 "not be counted on the meta device, so the count would be "
                                 f"short; {ALTERNATIVES}")
        return fc, model, recipe
    cause = _cause(errors)
    if isinstance(cause, (_BuildError, MetaCountError)):
        raise MetaCountError(f"{cause}; {ALTERNATIVES}") from None
    raise MetaCountError(f"model_type {cfg.model_type!r}: the exact count on the meta device "
                         f"failed ({_one_line(cause)}); {ALTERNATIVES}") from None


_steps: "collections.OrderedDict[tuple, MetaStep]" = collections.OrderedDict()
_working_recipe: dict[str, Recipe] = {}


def cached_step(key: tuple) -> MetaStep | None:
    """A counted step kept under ``key``, or None."""
    if key in _steps:
        _steps.move_to_end(key)
        return _steps[key]
    return None


def cache_step(key: tuple, step: MetaStep) -> MetaStep:
    """Keep ``step`` under ``key`` (the last :data:`_STEPS_KEPT`)."""
    _steps[key] = step
    while len(_steps) > _STEPS_KEPT:
        _steps.popitem(last=False)
    return step


def step_flops(cfg: ExactConfig, length: int, causal: str) -> MetaStep:
    """One forward + backward of one sequence of ``length`` tokens, cached
    per (config, length, convention)."""
    key = (cfg.key, length, causal)
    step = cached_step(key)
    if step is not None:
        return step
    fc, model, recipe = run_counted(cfg, batch_size=1, length=length, causal=causal)
    embed = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    weight = getattr(embed, "weight", None)
    step = MetaStep(
        model_flops=fc.model_flops, executed_flops=fc.executed_flops,
        forward_flops=fc.forward_flops,
        vision_flops=0,
        num_params=int(model.num_parameters()),
        num_embedding_params=int(weight.numel()) if weight is not None else 0,
        model_class=type(model).__name__, recipe=str(recipe),
        heavy_uncounted=tuple(sorted({r.name for r in fc.uncounted() if r.heavy})),
    )
    return cache_step(key, step)


def _cause(errors: list[BaseException]) -> BaseException:
    """The most telling failure: the first that is neither a meta tensor's
    value being read nor transformers refusing sdpa (the recipes after the
    first exist to avoid those)."""
    for exc in errors:
        text = str(exc)
        if "meta tensors" not in text and "scaled_dot_product_attention" not in text \
                and "attention implementation" not in text:
            return exc
    return errors[-1]


def clear_caches() -> None:
    """Drop the built models and counted steps (tests; memory)."""
    _models.clear()
    _steps.clear()
    _working_recipe.clear()
