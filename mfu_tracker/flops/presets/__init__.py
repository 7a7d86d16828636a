"""Full-size model configurations, as HuggingFace ``config.json`` dicts.

Each preset is the architecture part of a public HuggingFace ``config.json``
(field names and values as the hub publishes them), so it can be fed to
:func:`mfu_tracker.flops.transformer_flops` or to a transformers config class
(``LlamaConfig(**load_preset("llama-3.1-8b"))``) alike.

========================  ==============================  =================
preset                    HuggingFace repository           parameters
========================  ==============================  =================
``gpt2``                  openai-community/gpt2            124,439,808
``llama-3.1-8b``          meta-llama/Llama-3.1-8B          8,030,261,248
``llama-3.1-70b``         meta-llama/Llama-3.1-70B         70,553,706,496
``llama-3.1-405b``        meta-llama/Llama-3.1-405B        405,853,388,800
``mistral-7b``            mistralai/Mistral-7B-v0.1        7,241,732,096
``mixtral-8x7b``          mistralai/Mixtral-8x7B-v0.1      46,702,792,704
``qwen2.5-7b``            Qwen/Qwen2.5-7B                  7,615,616,512
========================  ==============================  =================

``mistral-7b`` is **v0.1** (vocabulary 32,000, sliding window 4,096); v0.3
has a 32,768 vocabulary and no window. The parameter counts are those of the
transformers model built from the preset (tests check them on the ``meta``
device).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

__all__ = ["load_preset", "preset_names"]

_DIR = Path(__file__).resolve().parent


def preset_names() -> list[str]:
    """The names of the shipped presets, sorted."""
    return sorted(p.stem for p in _DIR.glob("*.json"))


def _normalize(name: str) -> str:
    key = name.strip().lower()
    if key.endswith(".json"):
        key = key[: -len(".json")]
    # "meta-llama/Llama-3.1-8B" -> "llama-3.1-8b"; "mistral_7b" -> "mistral-7b"
    key = key.rsplit("/", 1)[-1].replace("_", "-")
    for suffix in ("-v0.1",):
        if key.endswith(suffix):
            key = key[: -len(suffix)]
    return key


def load_preset(name: str) -> dict[str, Any]:
    """The preset ``name`` as a new dict (a HuggingFace ``config.json``).

    Names are matched case-insensitively; a HuggingFace repository id of a
    shipped preset (``"meta-llama/Llama-3.1-8B"``) also works.

    Raises:
        TypeError: ``name`` is not a str.
        KeyError: no such preset (the message lists the available ones).
    """
    if not isinstance(name, str):
        raise TypeError(f"preset name must be a str, not {type(name).__name__}")
    key = _normalize(name)
    path = _DIR / f"{key}.json"
    if not path.is_file():
        raise KeyError(
            f"unknown preset {name!r}; available: {', '.join(preset_names())}"
        )
    with path.open(encoding="utf-8") as f:
        return json.load(f)


def resolve_model_config(name_or_path: str | os.PathLike[str], argument: str = "model") -> dict[str, Any]:
    """A model configuration dict from a preset name or a ``config.json`` path.

    ``name_or_path`` is tried as a preset name first, then as a path to a
    ``config.json`` file (or to a directory holding one). Errors name
    ``argument`` (the caller's argument or flag).

    Raises:
        TypeError: not a str / path.
        ValueError: neither a preset nor a readable JSON object file; the
            message lists the presets.
    """
    if not isinstance(name_or_path, (str, os.PathLike)):
        raise TypeError(
            f"{argument} must be a preset name or a path to a config.json, not "
            f"{type(name_or_path).__name__}"
        )
    text = os.fspath(name_or_path)
    if isinstance(name_or_path, str):
        try:
            return load_preset(name_or_path)
        except KeyError:
            pass
    path = Path(text)
    if path.is_dir():
        path = path / "config.json"
    if not path.is_file():
        raise ValueError(
            f"{argument} {text!r} is neither a preset ({', '.join(preset_names())}) "
            "nor a path to a config.json"
        )
    try:
        with path.open(encoding="utf-8") as f:
            config = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{argument} {text!r}: cannot read a JSON config: {exc}") from exc
    if not isinstance(config, dict):
        raise ValueError(
            f"{argument} {text!r}: config.json must hold a JSON object, not "
            f"{type(config).__name__}"
        )
    return config
