"""Other frameworks' MFU formulas by name: ``transformer_flops(...,
convention="verl")`` counts a batch the way verl, VeOmni, Megatron-LM,
torchtitan or nanoGPT does, and itemizes how that differs from ours.

A convention is a preset of eight choices (formula, embedding, lm_head,
router, MTP, causal half or full, windows, vision tower), each row citing the
file and commit whose formula it reproduces; the presets and the arithmetic
are the C core's (``csrc/core/conventions.c``). Explicit arguments of
``transformer_flops`` override the preset's choice (``formula=``,
``causal_attention=``, ``include_embedding=``, ``include_lm_head=``).
Units: FLOPs.
"""
from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Any

from .._native import _C
from .._validate import check_choice
from ._result import TransformerFlops

#: Choice -> what its difference means, for the itemized explanation.
ITEMS = {
    "formula": "weights a token meets: every parameter (palm), matmul weights only (matmul), "
               "or no attention term (6n)",
    "embedding": "the token embedding table counted as a matmul weight",
    "lm_head": "the lm_head matmul",
    "router": "the MoE router matmul",
    "mtp": "multi-token prediction layers",
    "causal": "causal attention: full s² or half",
    "windows": "sliding / chunked windows: the span, ignored (square), half the span, or the "
               "kept pairs",
    "tower": "the vision tower",
}


def convention_table() -> list[dict[str, Any]]:
    """Every preset (ours first): name, source, covers, choices."""
    return _C.conventions()


def convention_names() -> tuple[str, ...]:
    return tuple(row["name"] for row in convention_table())


def resolve_choices(name: str, overrides: Mapping[str, Any]) -> tuple[dict[str, Any],
                                                                      dict[str, str]]:
    """(the preset's row, its choices with the explicit arguments over them)."""
    table = {row["name"]: row for row in convention_table()}
    key = check_choice(name, "convention", tuple(table), ignore_case=True)
    row = table[key]
    choices = dict(row["choices"])
    if overrides.get("formula") is not None:
        choices["formula"] = overrides["formula"]
    if overrides.get("causal_attention") is not None:
        choices["causal"] = overrides["causal_attention"]
    if overrides.get("include_embedding") is not None:
        choices["embedding"] = "counted" if overrides["include_embedding"] else "excluded"
    if overrides.get("include_lm_head") is not None:
        choices["lm_head"] = "counted" if overrides["include_lm_head"] else "excluded"
    return row, choices


def difference_items(raw: Mapping[str, Any], ours: Mapping[str, str],
                     theirs: Mapping[str, str]) -> tuple[Mapping[str, Any], ...]:
    """Each choice that differs: (item, ours, theirs, delta FLOPs, its share
    of our count), in the order the switches were made."""
    base = raw["ours_model_flops"]
    out = []
    for item, delta in raw["delta"].items():
        if ours[item] == theirs[item] and delta == 0.0:
            continue
        out.append(types.MappingProxyType({
            "item": item, "ours": ours[item], "theirs": theirs[item], "delta_flops": delta,
            "delta_share": delta / base if base else 0.0, "meaning": ITEMS[item]}))
    return tuple(out)


def convention_text(conv: Mapping[str, Any]) -> str:
    """The convention's one-line description with the difference from ours."""
    info = conv["convention"]
    choices = " · ".join(f"{k} {v}" for k, v in info["choices"].items())
    ours = info["ours_model_flops"]
    total = (info["model_flops"] - ours) / ours if ours else 0.0
    items = ", ".join(f"{d['item']} {d['delta_share']:+.2%}" for d in info["difference"]
                      if d["delta_flops"])
    return (f"convention {info['name']} ({info['source']}): {choices} · vs ours "
            f"{total:+.2%}" + (f" ({items})" if items else " (no difference)") +
            f" · sequences from {conv['sequences']}")


def convention_flops(name: str, overrides: Mapping[str, Any], core_inputs: Mapping[str, Any],
                     ours: TransformerFlops) -> TransformerFlops:
    """The batch counted under convention ``name``; ``ours`` is the default
    count of the same batch (parameters, tokens)."""
    row, choices = resolve_choices(name, overrides)
    raw = _C.convention_flops(core_inputs["dims"], choices,
                              **{k: v for k, v in core_inputs.items() if k != "dims"})
    ours_choices = convention_table()[0]["choices"]
    tokens = ours.num_tokens
    conventions = dict(ours.conventions)
    conventions.update(
        formula=choices["formula"], causal_attention=choices["causal"],
        include_lm_head=choices["lm_head"] == "counted",
        include_embedding=choices["embedding"] != "excluded",
        convention=types.MappingProxyType({
            "name": row["name"], "source": row["source"], "covers": row["covers"],
            "choices": types.MappingProxyType(choices),
            "model_flops": raw["model_flops"], "ours_model_flops": raw["ours_model_flops"],
            "difference": difference_items(raw, ours_choices, choices)}))
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
