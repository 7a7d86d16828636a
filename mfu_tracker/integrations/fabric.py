"""MFU in a Lightning Fabric loop, and Lightning's precision -> the peak's dtype.

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

Nothing here imports Lightning: :func:`dtype_from_precision` reads plain
attributes of the precision plugin (or the precision string), so it also
serves ``lightning.pytorch.Trainer`` (:mod:`.lightning`).
"""
from __future__ import annotations

from typing import Any, Dict, Optional

from .._dtypes import normalize_dtype

__all__ = ["fabric_tracker", "fabric_dtype", "dtype_from_precision"]

#: Lightning's precision strings (``Trainer(precision=...)`` / ``Fabric(...)``,
#: aliases included) -> the dtype whose peak the matmuls run at.
#: "transformer-engine[-float16]": TE layers run their GEMMs in fp8 (the
#: suffix is the weights' dtype). "-true" / "-mixed": the whole model, or its
#: autocast regions (every matmul), in that dtype.
PRECISION_DTYPES: Dict[str, str] = {
    "transformer-engine": "fp8",
    "transformer-engine-float16": "fp8",
    "64-true": "fp64", "64": "fp64",
    "32-true": "fp32", "32": "fp32",
    "16-true": "fp16", "16-mixed": "fp16", "16": "fp16",
    "bf16-true": "bf16", "bf16-mixed": "bf16", "bf16": "bf16",
}


def dtype_from_precision(precision: Any, *, device: Any = None) -> Optional[str]:
    """The peak's dtype for a Lightning precision: a precision plugin (its
    ``precision`` attribute; bitsandbytes: its compute ``dtype``) or a
    precision string / int (``"bf16-mixed"``, ``16``...). ``"32-true"`` on a
    CUDA ``device`` whose matmuls may use TF32 (``allow_tf32`` or
    ``torch.set_float32_matmul_precision`` below "highest") is ``"tf32"``.
    None for a precision this table does not know (the caller falls back)."""
    compute = getattr(precision, "dtype", None)
    if compute is not None and not isinstance(precision, (str, int)):
        # BitsandbytesPrecision: weights are (de)quantized to its compute
        # dtype, in which the matmuls run; its `precision` is the base default.
        try:
            return normalize_dtype(compute)
        except (TypeError, ValueError):
            pass
    text = precision if isinstance(precision, (str, int)) else getattr(precision, "precision", None)
    if isinstance(text, bool) or not isinstance(text, (str, int)):
        return None
    dtype = PRECISION_DTYPES.get(str(text).strip().lower())
    if dtype == "fp32" and _tf32_matmuls(device):
        return "tf32"
    return dtype


def _tf32_matmuls(device: Any) -> bool:
    """Whether fp32 matmuls on ``device`` may run as TF32 (CUDA only)."""
    if getattr(device, "type", device) != "cuda":
        return False
    import torch

    return bool(torch.backends.cuda.matmul.allow_tf32
                or torch.get_float32_matmul_precision() != "highest")


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
    from ..tracker._tracker import Tracker

    if kwargs.get("dtype") is None:
        kwargs["dtype"] = fabric_dtype(fabric) or "fp32"
    if kwargs.get("device") is None:
        kwargs["device"] = getattr(fabric, "device", None)
    return Tracker(flops_per_step, **kwargs)
