"""Other frameworks' MFU formulas by name: ``transformer_flops(...,
convention="verl")`` counts a batch the way verl, VeOmni, Megatron-LM,
torchtitan or nanoGPT does, and itemizes how that differs from ours.

A convention is a preset of eight choices (formula, embedding, lm_head,
router, MTP, causal half or full, windows, vision tower) and, per model
type, a rule: the framework's function for the type, the windows it takes,
the quirks of that function (verl's qwen2_moe formula leaves out the shared
expert, Megatron-LM pads the vocabulary, ...) or a refusal where the
framework has no formula for the type. The presets, rules and arithmetic
are the C core's (``csrc/core/model/conventions*.c``), each rule citing the file,
line and commit it reproduces. Explicit arguments of ``transformer_flops``
override the preset's choice (``formula=``, ``causal_attention=``,
``include_embedding=``, ``include_lm_head=``).

``convention`` is a preset name, or a mapping with ``"name"`` and the
framework's options: for ``"megatron"``, ``quick_geglu`` (bool; default
True for gpt_oss, as Megatron-LM's gpt-oss recipes run ``--quick-geglu``,
else False), ``make_vocab_size_divisible_by`` (default 128) and
``tensor_model_parallel_size`` (default 1): the vocabulary is padded to a
multiple of their product, as Megatron-LM pads it. Units: FLOPs.
"""
from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Any

from .._native import _C
from .._validate import check_choice, check_flag, check_int
from ._convention_items import convention_text, difference_items, where
from ._result import TransformerFlops

#: The options each preset takes in ``convention={"name": ..., ...}``.
OPTIONS = {"megatron": ("quick_geglu", "make_vocab_size_divisible_by",
                        "tensor_model_parallel_size")}


def convention_table() -> list[dict[str, Any]]:
    """Every preset (ours first): name, framework, source, covers, choices,
    rules."""
    return _C.conventions()


def convention_names() -> tuple[str, ...]:
    return tuple(row["name"] for row in convention_table())


def _split(convention: Any) -> tuple[str, dict[str, Any]]:
    """(preset name, options) of a name or a {"name": ..., option: value} mapping."""
    if isinstance(convention, Mapping):
        options = dict(convention)
        if "name" not in options:
            raise ValueError("convention: a mapping needs \"name\" (the preset), e.g. "
                             "{\"name\": \"megatron\", \"quick_geglu\": False}")
        return options.pop("name"), options
    return convention, {}


def _options(name: str, options: Mapping[str, Any], rule: Mapping[str, Any],
             dims: Mapping[str, Any]) -> tuple[list[str], int, dict[str, Any]]:
    """(quirks, vocab multiple, the options as used) of preset ``name``."""
    allowed = OPTIONS.get(name, ())
    for key in options:
        if key not in allowed:
            raise ValueError(f"convention: {name!r} takes no option {key!r}"
                             + (f" (its options: {', '.join(allowed)})" if allowed else ""))
    quirks = list(rule["quirks"])
    if name != "megatron":
        return quirks, 1, {}
    quick = check_flag(options.get("quick_geglu", "quick_geglu" in quirks),
                       "convention['quick_geglu']")
    if quick and dims.get("mlp", "swiglu") != "swiglu":
        raise ValueError(f"convention['quick_geglu']: --quick-geglu makes a gated MLP; this "
                         f"model's MLP is {dims.get('mlp')!r} (2 matrices already)")
    quirks = [q for q in quirks if q != "quick_geglu"] + (["quick_geglu"] if quick else [])
    divisible = check_int(options.get("make_vocab_size_divisible_by", 128),
                          "convention['make_vocab_size_divisible_by']", 1)
    tp = check_int(options.get("tensor_model_parallel_size", 1),
                   "convention['tensor_model_parallel_size']", 1)
    used = {"quick_geglu": quick, "make_vocab_size_divisible_by": divisible,
            "tensor_model_parallel_size": tp}
    return quirks, divisible * tp, used


def _refuse(row: Mapping[str, Any], rule: Mapping[str, Any], model_type: str) -> None:
    raise ValueError(f"convention={row['name']!r} has no count of model_type {model_type!r}: "
                     f"{rule['refused']} ({where(row, rule)}). {row['framework']} counts: "
                     f"{row['covers']}")


def resolve_choices(convention: Any, overrides: Mapping[str, Any], model_type: str,
                    dims: Mapping[str, Any]) -> dict[str, Any]:
    """The preset's row, its rule for ``model_type``, the choices (the
    preset's, the rule's windows, then the explicit arguments), the quirks,
    the vocabulary multiple and the options. ValueError where the framework
    has no formula for ``model_type``."""
    name, options = _split(convention)
    table = {row["name"]: row for row in convention_table()}
    key = check_choice(name, "convention", tuple(table), ignore_case=True)
    row = table[key]
    rule = _C.convention_rule(key, model_type)
    if rule["refused"] is not None:
        _refuse(row, rule, model_type)
    quirks, multiple, used = _options(key, options, rule, dims)
    choices = dict(row["choices"])
    if rule["windows"] is not None:
        choices["windows"] = rule["windows"]
    if overrides.get("formula") is not None:
        choices["formula"] = overrides["formula"]
    if overrides.get("causal_attention") is not None:
        choices["causal"] = overrides["causal_attention"]
    if overrides.get("include_embedding") is not None:
        choices["embedding"] = "counted" if overrides["include_embedding"] else "excluded"
    if overrides.get("include_lm_head") is not None:
        choices["lm_head"] = "counted" if overrides["include_lm_head"] else "excluded"
    return {"row": row, "rule": rule, "choices": choices, "quirks": quirks,
            "vocab_multiple": multiple, "options": used}


def convention_flops(convention: Any, overrides: Mapping[str, Any],
                     core_inputs: Mapping[str, Any], ours: TransformerFlops) -> TransformerFlops:
    """The batch counted under ``convention`` (a preset name or a mapping
    with its options); ``ours`` is the default count of the same batch
    (parameters, tokens, model type)."""
    model_type = ours.conventions["model_type"]
    how = resolve_choices(convention, overrides, model_type, core_inputs["dims"])
    row, rule, choices = how["row"], how["rule"], how["choices"]
    raw = _C.convention_flops(core_inputs["dims"], choices, quirks=how["quirks"],
                              vocab_multiple=how["vocab_multiple"],
                              **{k: v for k, v in core_inputs.items() if k != "dims"})
    tokens = ours.num_tokens
    conventions = dict(ours.conventions)
    conventions.update(
        formula=choices["formula"], causal_attention=choices["causal"],
        include_lm_head=choices["lm_head"] == "counted",
        include_embedding=choices["embedding"] != "excluded",
        convention=types.MappingProxyType({
            "name": row["name"], "framework": row["framework"], "source": row["source"],
            "covers": row["covers"], "function": rule["function"], "line": rule["line"],
            "choices": types.MappingProxyType(choices), "quirks": tuple(how["quirks"]),
            "options": types.MappingProxyType(how["options"]),
            "model_flops": raw["model_flops"], "ours_model_flops": raw["ours_model_flops"],
            "difference": difference_items(raw, convention_table()[0]["choices"], how,
                                           core_inputs["dims"])}))
    return TransformerFlops(
        model_flops=raw["model_flops"], hardware_flops=raw["model_flops"],
        forward_flops=raw["forward_flops"], attention_flops=raw["attention_flops"],
        flops_per_token=raw["model_flops"] / tokens, num_tokens=tokens,
        num_params=ours.num_params, num_embedding_params=ours.num_embedding_params,
        num_active_params=ours.num_active_params, num_adapter_params=0,
        conventions=types.MappingProxyType(conventions),
        conventions_str=convention_text(conventions),
        language_flops=raw["model_flops"] - raw["vision_flops"],
        vision_flops=raw["vision_flops"], scan_flops=0.0,
    )
