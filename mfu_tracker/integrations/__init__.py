"""Integrations with training frameworks.

``from mfu_tracker.integrations import MFUCallback`` (or from
``mfu_tracker.integrations.hf_trainer``) imports transformers on first use only.

``mfu_tracker.integrations.lightning.MFUCallback`` (``lightning.Trainer``,
the ``[lightning]`` extra) and ``mfu_tracker.integrations.fabric`` (Fabric
loops: ``fabric_tracker()``; Lightning precision -> dtype) are imported by
name only: importing this package imports neither transformers nor Lightning.
"""
from typing import Any

__all__ = ["MFUCallback"]


def __getattr__(name: str) -> Any:
    if name == "MFUCallback":
        from .hf_trainer import MFUCallback

        return MFUCallback
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
