"""MFU in a Lightning Fabric loop.

Fabric has no callbacks around the user's loop, so the measurement is the
step tracker (:class:`~mfu_tracker.Tracker`) and its figures go out through
``fabric.log_dict`` (every logger given to ``Fabric(loggers=...)``)::

    from mfu_tracker.integrations.fabric import fabric_tracker

    fabric = Fabric(precision="bf16-mixed", loggers=CSVLogger("logs"))
    fabric.launch()
    model, optimizer = fabric.setup(model, optimizer)
    tracker = fabric_tracker(fabric, flops_per_step, param_bytes=param_bytes(model))
    tracker.step()                                           # starts the clock
    for step, batch in enumerate(loader, 1):
        loss = model(batch).loss
        fabric.backward(loss)
        optimizer.step(); optimizer.zero_grad()
        tracker.step(num_tokens=batch["input_ids"].numel())
        if step % 10 == 0:
            fabric.log_dict(tracker.metrics(), step=step)   # every rank: a collective
    tracker.close()

``flops_per_step``: the model FLOPs of one optimizer step on this rank (all
its micro-batches), e.g. ``profile_flops(model, sample_batch).flops`` x the
micro-batches, or :func:`~mfu_tracker.transformer_flops`; ``None`` to give
them per step (``tracker.step(model_flops=...)``). Under a multi-process
strategy the tracker aggregates across ranks (the process group exists once
``fabric.launch()`` ran): call ``tracker.metrics()`` on every rank at the
same steps; every rank gets the global figures, and Fabric's loggers write on
rank 0 only.

Nothing here imports Lightning. Lightning's precision -> dtype table, which
this module and the ``lightning.pytorch.Trainer`` callback (:mod:`.lightning`)
share, is :mod:`._lightning_precision`'s (``dtype_from_precision`` is
re-exported here).
"""
from __future__ import annotations

import inspect
from typing import Any, Optional

from ..tracker._tracker import Tracker
from ._lightning_precision import dtype_from_precision

__all__ = ["fabric_tracker", "fabric_dtype", "dtype_from_precision"]

def fabric_dtype(fabric: Any) -> Optional[str]:
    """The peak's dtype of a ``lightning.fabric.Fabric`` (its strategy's
    precision plugin on its device); None when unknown."""
    strategy = getattr(fabric, "strategy", None)
    plugin = getattr(strategy, "precision", None)
    return dtype_from_precision(plugin, device=getattr(fabric, "device", None))


def fabric_tracker(fabric: Any, flops_per_step: Optional[float] = None, **kwargs: Any) -> Any:
    """A :class:`~mfu_tracker.Tracker` for a Fabric loop: ``dtype`` from the
    precision plugin (:func:`fabric_dtype`; fp32 when unknown) and ``device``
    from ``fabric.device``, unless given in ``kwargs`` (any other
    ``Tracker`` argument: ``param_bytes``, ``window``, ``peak_tflops``...).
    Create it on every rank, after ``fabric.launch()``."""
    if kwargs.get("dtype") is None:
        kwargs["dtype"] = fabric_dtype(fabric) or "fp32"
    if kwargs.get("device") is None:
        kwargs["device"] = getattr(fabric, "device", None)
    return Tracker(flops_per_step, **kwargs)


def _signature() -> inspect.Signature:
    """``fabric_tracker``'s real signature, for ``inspect.signature`` and
    ``help()``: ``fabric``, then ``Tracker``'s own parameters, ``dtype`` and
    ``device`` defaulting to None (read from the Fabric)."""
    tracker = list(inspect.signature(Tracker.__init__).parameters.values())[1:]
    fabric = inspect.Parameter("fabric", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation="Any")
    return inspect.Signature(
        [fabric, *(p.replace(default=None) if p.name in ("dtype", "device") else p for p in tracker)],
        return_annotation="Tracker")


fabric_tracker.__signature__ = _signature()  # type: ignore[attr-defined]
