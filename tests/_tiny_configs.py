"""Every causal-LM model type transformers lists, as a small config: the
class's defaults with the decoder cut to a few layers (per-layer lists and
tables cut with it, keeping one layer of each kind), for counts on the meta
device, where widths cost nothing and the layer count sets the time.

:func:`tiny_config` returns the config, or transformers' own error for a
type it fails to build at that size (recorded by the caller with the type).
"""
from __future__ import annotations

from typing import Any

LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers", "decoder_layers",
              "num_blocks")
# Config fields that are per-layer tables although their length is not the
# layer count's name.
_KEEP = ("architectures", "transformers_version", "_name_or_path", "model_type")


def _layer_count(d: dict) -> tuple[str, int] | None:
    for key in LAYER_KEYS:
        value = d.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return key, value
    return None


def _kinds_cover(d: dict, layers: int) -> int:
    """Layers needed so that every per-layer list keeps one layer of each kind."""
    need = 2
    for value in d.values():
        if isinstance(value, list) and len(value) == layers and value and \
                all(isinstance(v, (str, int, bool)) for v in value):
            first: dict = {}
            for i, kind in enumerate(value):
                first.setdefault(kind, i)
            need = max(need, max(first.values()) + 1)
    return need


def shrink(d: dict, min_layers: int = 2) -> dict:
    """``d`` (a config dict) with its decoder cut to the fewest layers that
    keep one of each layer kind (at least ``min_layers``)."""
    d = dict(d)
    if isinstance(d.get("text_config"), dict):
        d["text_config"] = shrink(d["text_config"], min_layers)
    found = _layer_count(d)
    if found is None:
        return d
    key, layers = found
    n = min(layers, max(min_layers, _kinds_cover(d, layers)))
    for name in LAYER_KEYS:  # every name of the layer count (xLSTM has two)
        if d.get(name) == layers:
            d[name] = n
    for name, value in list(d.items()):
        if isinstance(value, list) and len(value) == layers:
            d[name] = value[:n]
        elif isinstance(value, dict) and value and all(
                isinstance(k, (int, str)) and str(k).isdigit() for k in value):
            d[name] = {k: v for k, v in value.items() if int(k) < n}
    return d


def tiny_config(transformers: Any, model_type: str, min_layers: int = 2, **over: Any) -> Any:
    """The type's default config cut to a few layers (at least
    ``min_layers``; ``over`` on top), or the exception transformers raised
    building it at that size."""
    try:
        default = transformers.AutoConfig.for_model(model_type).to_dict()
    except Exception as exc:  # noqa: BLE001 -- transformers' own refusal, recorded
        return exc
    fields = {k: v for k, v in shrink(default, min_layers).items() if k not in _KEEP}
    fields.update(over)
    try:
        return transformers.AutoConfig.for_model(model_type, **fields)
    except Exception:  # noqa: BLE001 -- the cut broke a rule of the type: its default size
        try:
            return transformers.AutoConfig.for_model(model_type, **over)
        except Exception as exc:  # noqa: BLE001
            return exc
