"""What the run record says about the model: ``Tracker(model_info=...)``.

The figures of a log need nothing about the model; two readers do. The live
page (``mfu-tracker view``) shows, beside our MFU, the range other
frameworks' formulas would report for the same run (verl, Megatron-LM,
torchtitan, nanoGPT: :func:`mfu_tracker.transformer_flops` with
``convention=``), which needs the model's transformers config and the
sequence length; and both the page and the passport say how the model
FLOPs were obtained. ``model_info`` is a mapping with any of:

``config``
    the model's configuration: a ``transformers`` config object (its
    ``to_dict()`` is kept), the dict of a ``config.json``, or a preset name
    (``"llama-3.1-8b"``);
``seq_len``
    tokens per sequence of a step's batch (int >= 1);
``flops``
    how the model FLOPs per step were obtained: ``"counted"`` (the FLOP
    counter ran on the step), ``"declared"`` (a number given, e.g.
    ``flops_per_step=``), ``"analytic"`` (a formula from the config);
``convention``
    the counting convention of those FLOPs when it is another framework's
    (a :func:`mfu_tracker.transformer_flops` preset name); absent: ours.

The run record holds it as ``"model"``, JSON-safe (values JSON cannot hold
are written as their ``str()``). A tracker given ``flops_per_step=`` and no
``flops`` entry records ``"flops": "declared"``.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Dict, Optional

from .._validate import check_int

__all__ = ["FLOPS_SOURCES", "MODEL_INFO_FIELDS", "check_model_info"]

#: The keys of ``model_info``.
MODEL_INFO_FIELDS = ("config", "seq_len", "flops", "convention")
#: How model FLOPs per step can be obtained.
FLOPS_SOURCES = ("counted", "declared", "analytic")


def _json_safe(value: Any, depth: int = 0) -> Any:
    """``value`` with every leaf JSON can hold kept and any other as its ``str()``."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else str(value)
    if depth > 16:
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v, depth + 1) for v in value]
    return str(value)


def _config(config: Any) -> Any:
    """The config as the run record keeps it: a dict, or a preset name."""
    if isinstance(config, str):
        return config
    if isinstance(config, Mapping):
        return _json_safe(config)
    to_dict = getattr(config, "to_dict", None)
    if callable(to_dict):
        return _json_safe(to_dict())
    raise TypeError(f"model_info['config']: give a transformers config, a config.json dict "
                    f"or a preset name, not {type(config).__name__}")


def check_model_info(model_info: Any, declared: bool = False) -> Optional[Dict[str, Any]]:
    """``model_info`` checked and made JSON-safe (module docstring); None when
    there is nothing to record. ``declared``: the tracker was given
    ``flops_per_step=`` (the ``flops`` entry defaults to ``"declared"``)."""
    if model_info is None:
        return {"flops": "declared"} if declared else None
    if not isinstance(model_info, Mapping):
        raise TypeError(f"model_info must be a mapping with any of {', '.join(MODEL_INFO_FIELDS)}, "
                        f"not {type(model_info).__name__}")
    unknown = [str(k) for k in model_info if k not in MODEL_INFO_FIELDS]
    if unknown:
        raise ValueError(f"model_info: unknown key(s) {', '.join(map(repr, unknown))}; it takes "
                         f"{', '.join(MODEL_INFO_FIELDS)}")
    out: Dict[str, Any] = {}
    if model_info.get("config") is not None:
        out["config"] = _config(model_info["config"])
    if model_info.get("seq_len") is not None:
        out["seq_len"] = check_int(model_info["seq_len"], "model_info['seq_len']", 1)
    flops = model_info.get("flops", "declared" if declared else None)
    if flops is not None:
        if flops not in FLOPS_SOURCES:
            raise ValueError(f"model_info['flops'] must be one of {', '.join(FLOPS_SOURCES)}, "
                             f"got {flops!r}")
        out["flops"] = flops
    convention = model_info.get("convention")
    if convention is not None:
        if not isinstance(convention, str) or not convention:
            raise TypeError(f"model_info['convention'] must be a convention name (str), got "
                            f"{convention!r}")
        out["convention"] = convention
    return out or None
