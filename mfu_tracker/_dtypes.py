"""Dtype names: one canonical spelling per peak-table column.

Canonical names (the C core's, see ``_C.dtype_names()``): ``fp64``, ``fp32``,
``tf32``, ``fp16``, ``bf16``, ``fp8``, ``int8``, ``int4``, ``fp4``.

:func:`normalize_dtype` also takes common aliases (``"bfloat16"``, ``"half"``,
``"float"``, ``"double"``, ``"float8_e4m3fn"``...) and torch dtypes
(``torch.bfloat16``, ``torch.float8_e5m2``, ``torch.int8``...). torch is never
imported here: a torch dtype is recognised by its type and spelled via
``str(dtype)`` ("torch.bfloat16").
"""
from __future__ import annotations

from typing import Any

from ._native import _C

#: Canonical dtype names, in the peak table's order.
DTYPE_NAMES: tuple[str, ...] = tuple(_C.dtype_names())

_ALIASES: dict[str, str] = {
    # fp64
    "float64": "fp64", "double": "fp64", "f64": "fp64",
    # fp32
    "float32": "fp32", "float": "fp32", "single": "fp32", "f32": "fp32",
    # tf32
    "tensorfloat32": "tf32", "tensor_float32": "tf32",
    # fp16
    "float16": "fp16", "half": "fp16", "f16": "fp16",
    # bf16
    "bfloat16": "bf16",
    # fp8 (every torch float8 flavour)
    "float8": "fp8", "float8_e4m3fn": "fp8", "float8_e5m2": "fp8",
    "float8_e4m3fnuz": "fp8", "float8_e5m2fnuz": "fp8", "float8_e8m0fnu": "fp8",
    "fp8_e4m3": "fp8", "fp8_e5m2": "fp8", "e4m3": "fp8", "e5m2": "fp8",
    # int8 / int4
    "qint8": "int8",
    # fp4
    "float4": "fp4", "float4_e2m1fn_x2": "fp4", "nvfp4": "fp4", "mxfp4": "fp4",
}


def _is_torch_dtype(obj: Any) -> bool:
    cls = type(obj)
    return cls.__name__ == "dtype" and cls.__module__ == "torch"


def normalize_dtype(dtype: Any, argument: str = "dtype") -> str:
    """Return the canonical name of ``dtype`` (a str alias or a torch dtype).

    Raises ``TypeError`` for anything that is neither a str nor a torch dtype,
    and ``ValueError`` naming ``argument`` and listing the valid names for an
    unknown one.
    """
    if _is_torch_dtype(dtype):
        text = str(dtype)
        if text.startswith("torch."):
            text = text[len("torch."):]
    elif isinstance(dtype, str):
        text = dtype
    else:
        raise TypeError(
            f"{argument} must be a str or a torch.dtype, not {type(dtype).__name__}"
        )
    key = text.strip().lower()
    if key in DTYPE_NAMES:
        return key
    if key in _ALIASES:
        return _ALIASES[key]
    raise ValueError(
        f"{argument}: unknown dtype {dtype!r}; valid names: {', '.join(DTYPE_NAMES)} "
        "(aliases such as 'bfloat16', 'float16', 'half', 'float32', 'float', "
        "'float64', 'double', 'float8_e4m3fn' and torch dtypes are accepted)"
    )
