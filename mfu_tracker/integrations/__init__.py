"""Integrations with training frameworks.

``from mfu_tracker.integrations import MFUCallback`` (or from
``mfu_tracker.integrations.hf_trainer``) imports transformers on first use only.
"""
from typing import Any

__all__ = ["MFUCallback"]


def __getattr__(name: str) -> Any:
    if name == "MFUCallback":
        from .hf_trainer import MFUCallback

        return MFUCallback
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
