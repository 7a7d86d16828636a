"""Integrations with training frameworks: the measurement where the loop already is.

Owns the one step-FLOPs policy (:mod:`._step_flops`: counted, scaled,
analytic, profiled; a step as an adapter saw it, :mod:`._step_record`; the
counter of a counted step, :mod:`._step_counter`), the automatic phase marks (:mod:`._auto_phases`), the
optimizer wrapper for bare loops (:mod:`.optim`), the callback core both
Trainer callbacks share (:mod:`._callback`), and the adapters:
:mod:`.hf_trainer`, :mod:`.lightning`, :mod:`.fabric`; for RL frameworks,
TRL's trainers by role (:mod:`.trl`, with :mod:`._role_stack`: nested calls
split into turns), verl's ``FlopsCounter`` (:mod:`.verl`, a drop-in: no verl
import) and the vLLM / SGLang counter reader (:mod:`.engines`).

Layer 9 (peaks -> flops -> timing -> device -> breakdown -> distributed -> job
-> tracker -> integrations -> agent -> cli). May import: every layer below it;
the frameworks themselves only in their own adapter module.

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
