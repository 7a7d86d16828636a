"""The itemized difference between a framework convention's count and ours:
one item per choice that differs (formula, embedding, ..., tower) and one
per quirk of the framework's formula for the model type, each with its
FLOPs and its share of our count, in the order the C core switched them
(``csrc/core/model/conventions.h``): ours + the items = the framework's count.
Units: FLOPs.
"""
from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Any

from .._native import _C

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

#: What a rule's windows choice does, for the item of a rule that sets it.
_WINDOWS = {
    "square": "ignores sliding windows: s² on every layer",
    "half_span": "charges s·min(s, w) on sliding layers, halved",
    "kept": "charges the kept pairs Σ min(pos + 1, w) on sliding layers",
    "span": "charges the window's span",
}


def _quirk_texts() -> dict[str, str]:
    return {q["name"]: q["text"] for q in _C.convention_quirks()}


def where(row: Mapping[str, Any], rule: Mapping[str, Any], line: int = 0) -> str:
    """``file:line @ commit`` of a line a rule cites, ``file:line (function)
    @ commit`` of the rule's function; the preset's source where the rule
    cites no line."""
    file, _, commit = row["source"].partition(" @ ")
    if line and line != rule["line"]:
        return f"{file}:{line} @ {commit}"
    if rule["line"]:
        return f"{file}:{rule['line']} ({rule['function']}) @ {commit}"
    return row["source"]


def _quirk_meaning(name: str, text: str, framework: str, how: Mapping[str, Any],
                   dims: Mapping[str, Any]) -> str:
    meaning = f"{framework} {text}"
    if name == "padded_vocab":
        vocab, multiple = int(dims["vocab_size"]), how["vocab_multiple"]
        padded = -(-vocab // multiple) * multiple
        meaning += f" ({vocab:,} -> {padded:,}, a multiple of {multiple})"
    return meaning


def _item(item: str, kind: str, ours: Any, theirs: Any, delta: float, base: float,
          meaning: str, source: str) -> Mapping[str, Any]:
    return types.MappingProxyType({
        "item": item, "kind": kind, "ours": ours, "theirs": theirs, "delta_flops": delta,
        "delta_share": delta / base if base else 0.0, "meaning": meaning, "source": source})


def difference_items(raw: Mapping[str, Any], ours: Mapping[str, str],
                     how: Mapping[str, Any],
                     dims: Mapping[str, Any]) -> tuple[Mapping[str, Any], ...]:
    """Each choice that differs and each quirk that changes the count: item,
    kind ("choice" / "quirk"), ours, theirs (None for a quirk), delta FLOPs,
    its share of our count, meaning, source; in the order the switches were
    made."""
    row, rule, theirs = how["row"], how["rule"], how["choices"]
    base = raw["ours_model_flops"]
    out = []
    for item, delta in raw["delta"].items():
        if ours[item] == theirs[item] and delta == 0.0:
            continue
        meaning, source = ITEMS[item], row["source"]
        if item == "windows" and rule["windows"] == theirs["windows"]:
            meaning = f"{row['framework']}'s {rule['function']} {_WINDOWS[theirs['windows']]}"
            source = where(row, rule, rule["windows_line"])
        elif item == "windows":
            meaning = f"{row['framework']} {_WINDOWS[theirs['windows']]}"
        out.append(_item(item, "choice", ours[item], theirs[item], delta, base, meaning,
                         source))
    texts = _quirk_texts()
    for name, delta in raw["quirk_delta"].items():
        if delta == 0.0:  # the model has nothing the quirk changes
            continue
        out.append(_item(name, "quirk", None, None, delta, base,
                         _quirk_meaning(name, texts[name], row["framework"], how, dims),
                         where(row, rule, rule["quirk_lines"].get(name, 0))))
    return tuple(out)


def convention_text(conv: Mapping[str, Any]) -> str:
    """The convention's one-line description with the difference from ours."""
    info = conv["convention"]
    choices = " · ".join(f"{k} {v}" for k, v in info["choices"].items())
    ours = info["ours_model_flops"]
    total = (info["model_flops"] - ours) / ours if ours else 0.0
    items = ", ".join(f"{d['item']} {d['delta_share']:+.2%}" for d in info["difference"]
                      if d["delta_flops"])
    return (f"convention {info['name']} ({info['source']}, {info['function']}): {choices} · "
            f"vs ours {total:+.2%}" + (f" ({items})" if items else " (no difference)") +
            f" · sequences from {conv['sequences']}")
