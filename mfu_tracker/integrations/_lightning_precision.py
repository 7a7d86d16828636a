"""Lightning's precision -> the dtype whose peak the matmuls run at.

One table for both Lightning integrations: the ``lightning.pytorch.Trainer``
callback (:mod:`.lightning`) and Fabric loops (:mod:`.fabric`). Nothing here
imports Lightning: :func:`dtype_from_precision` reads plain attributes of the
precision plugin, or the precision string.
"""
from __future__ import annotations

from typing import Any, Dict, Optional

from .._dtypes import normalize_dtype

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
