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
``qwen2.5-vl-7b``         Qwen/Qwen2.5-VL-7B-Instruct      8,292,166,656
========================  ==============================  =================

``mistral-7b`` is **v0.1** (vocabulary 32,000, sliding window 4,096); v0.3
has a 32,768 vocabulary and no window. The parameter counts are those of the
transformers model built from the preset (tests check them on the ``meta``
device). ``qwen2.5-vl-7b`` is the hub's transformers 4 layout (the language
fields at the top, ``vision_config`` beside them); transformers 5 saves the
same model with a ``text_config``, and both read the same.

A name that is neither a preset nor a file is looked up as ``org/name`` in
the local HuggingFace cache (:func:`hf_cache_config`; nothing is
downloaded).
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


def _decode_floats(obj: dict[str, Any]) -> Any:
    """transformers 5 writes inf / NaN as {"__float__": "Infinity"}."""
    if set(obj) == {"__float__"} and obj["__float__"] in _SPECIAL_FLOATS:
        return _SPECIAL_FLOATS[obj["__float__"]]
    return obj


_SPECIAL_FLOATS = {"Infinity": float("inf"), "-Infinity": float("-inf"), "NaN": float("nan")}


def decode_special_floats(config: dict[str, Any]) -> dict[str, Any]:
    """A config dict loaded without the decoding (``json.loads`` as is), its
    ``{"__float__": "Infinity"}`` values (at any depth) as floats; a dict
    that is not JSON (objects in it) as given."""
    try:
        return json.loads(json.dumps(config), object_hook=_decode_floats)
    except (TypeError, ValueError):
        return config


def hf_cache_root() -> Path:
    """The HuggingFace hub cache as huggingface_hub finds it: HF_HUB_CACHE,
    else HF_HOME/hub, else $XDG_CACHE_HOME (~/.cache)/huggingface/hub."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]) / "hub"
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "huggingface" / "hub"


def hf_cache_config(repo_id: str) -> Path | None:
    """The ``config.json`` of ``org/name`` in the local HF cache (the
    snapshot ``refs/main`` names, else the newest one holding a config), or
    None. Nothing is downloaded."""
    if repo_id.count("/") != 1 or any(not part for part in repo_id.split("/")):
        return None
    repo = hf_cache_root() / ("models--" + repo_id.replace("/", "--"))
    ref = repo / "refs" / "main"
    if ref.is_file():
        path = repo / "snapshots" / ref.read_text(encoding="utf-8").strip() / "config.json"
        if path.is_file():
            return path
    found = sorted(repo.glob("snapshots/*/config.json"), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


def _config_path(text: str) -> Path | None:
    path = Path(text)
    if path.is_dir():
        path = path / "config.json"
    if path.is_file():
        return path
    return hf_cache_config(text)


def resolve_model_config(name_or_path: str | os.PathLike[str], argument: str = "model") -> dict[str, Any]:
    """A model configuration dict from a preset name, a ``config.json`` path
    (or a directory holding one) or a HuggingFace repository id
    (``org/name``) already in the local HF cache, tried in that order.
    Errors name ``argument`` (the caller's argument or flag).

    Raises:
        TypeError: not a str / path.
        ValueError: none of those, or not a readable JSON object file; the
            message lists the presets.
    """
    if not isinstance(name_or_path, (str, os.PathLike)):
        raise TypeError(
            f"{argument} must be a preset name, a path to a config.json or an org/name in "
            f"the HF cache, not {type(name_or_path).__name__}"
        )
    text = os.fspath(name_or_path)
    if isinstance(name_or_path, str):
        try:
            return load_preset(name_or_path)
        except KeyError:
            pass
    path = _config_path(text)
    if path is None:
        raise ValueError(
            f"{argument} {text!r} is neither a preset ({', '.join(preset_names())}), a path to "
            f"a config.json, nor an org/name in the local HF cache ({hf_cache_root()})"
        )
    try:
        with path.open(encoding="utf-8") as f:
            config = json.load(f, object_hook=_decode_floats)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{argument} {text!r}: cannot read a JSON config: {exc}") from exc
    if not isinstance(config, dict):
        raise ValueError(
            f"{argument} {text!r}: config.json must hold a JSON object, not "
            f"{type(config).__name__}"
        )
    return config
