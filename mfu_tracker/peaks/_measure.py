"""The measured peak: a square-GEMM micro-benchmark for devices no datasheet
covers (a CPU, an unknown GPU) and for checking one that does, which checks
itself against a busy machine (:func:`measure_peak_flops`)."""
from __future__ import annotations

import time
from typing import Any, List, Optional

from .._native import _C
from .._dtypes import normalize_dtype
from .._validate import check_at_most, check_choice, check_device, check_positive_number
from ._table import GPUSpec, _warn_once

__all__ = ["PEAK_DISAGREEMENT", "measure_peak_flops", "measured_gpu_spec", "peak_disagrees"]

_TORCH_DTYPES = {"fp64": "float64", "fp32": "float32", "tf32": "float32",
                 "fp16": "float16", "bf16": "bfloat16"}


def _square_gemm_sizes(device_type: str) -> list[int]:
    return [256, 512, 1024, 2048] if device_type == "cpu" else [1024, 2048, 4096, 8192]


#: Two measurements of one peak that differ by more than this factor mean the
#: machine was busy during one of them: a peak measured on a busy machine
#: reads low, and MFU against it high.
PEAK_DISAGREEMENT = 1.25
#: Rounds a measured peak may take beyond the first two while its rounds disagree.
REMEASURE_MAX = 3


def peak_disagrees(first: Optional[float], again: Optional[float]) -> bool:
    """Whether two measurements of one peak differ by more than
    :data:`PEAK_DISAGREEMENT` (a busy machine during one of them)."""
    if not first or not again or first <= 0 or again <= 0:
        return False
    return max(first, again) > PEAK_DISAGREEMENT * min(first, again)


def _gemm_rate(a: Any, b: Any, flops: float, duration: float, sync: Any) -> float:
    """The best single-matmul rate of ``a @ b`` (``flops`` each) over about
    ``duration`` seconds (at least 3 matmuls), FLOP/s."""
    import torch

    best = 0.0
    deadline = time.perf_counter() + duration
    iterations = 0
    while iterations < 3 or time.perf_counter() < deadline:
        start = time.perf_counter()
        torch.matmul(a, b)
        sync()
        elapsed = time.perf_counter() - start
        if elapsed > 0:
            best = max(best, flops / elapsed)
        iterations += 1
        if iterations >= 10000:
            break
    return best


def _unconfirmed(rates: List[float]) -> bool:
    """Whether the best round has no other round within PEAK_DISAGREEMENT of it."""
    best, second = sorted(rates)[-1], sorted(rates)[-2]
    return peak_disagrees(second, best)


def _checked_rate(measure: Any, what: str) -> float:
    """The best of rounds of ``measure()``: two, and up to :data:`REMEASURE_MAX`
    more until a second round confirms the best (within 25%: another job
    took the cores during the others); one warning when none does."""
    rates = [measure(), measure()]
    while _unconfirmed(rates) and len(rates) < 2 + REMEASURE_MAX:
        rates.append(measure())
    if _unconfirmed(rates):
        _warn_once(f"busy:{what}", f"mfu_tracker: the measured {what} GEMM peak varied from "
                   f"{min(rates) / 1e12:.4g} to {max(rates) / 1e12:.4g} TFLOP/s over "
                   f"{len(rates)} rounds (a busy machine); the best is used, and MFU against "
                   f"it may still read high", stacklevel=4)
    return max(rates)


def measure_peak_flops(dtype: Any = "fp32", device: Any = "cpu", *, duration_s: float = 0.3) -> float:
    """Measured dense matmul peak of ``device`` for ``dtype``, in FLOP/s.

    A square-GEMM micro-benchmark: grows n until one ``n x n @ n x n`` matmul
    (2 n^3 FLOPs) takes a few ms (or n reaches the largest size tried), warms
    up, then runs matmuls in rounds of about ``duration_s / 2`` seconds and
    reports the best single-matmul rate. A busy machine reads low, so the
    measurement checks itself: until a second round comes within 25% of the
    best, it measures again (up to :data:`REMEASURE_MAX` more rounds), and
    warns once when none does. Supports fp64, fp32, tf32
    (CUDA), fp16 and bf16.
    """
    import torch

    name = check_choice(normalize_dtype(dtype), "dtype", tuple(_TORCH_DTYPES),
                        supported_by="measure_peak_flops")
    duration = check_at_most(check_positive_number(duration_s, "duration_s"), "duration_s", 60,
                             "seconds")
    dev = check_device(device)
    if name == "tf32" and dev.type != "cuda":
        raise ValueError("dtype: tf32 is measured on CUDA devices only")
    torch_dtype = getattr(torch, _TORCH_DTYPES[name])
    is_cuda = dev.type == "cuda"

    def sync() -> None:
        if is_cuda:
            torch.cuda.synchronize(dev)

    old_tf32 = torch.backends.cuda.matmul.allow_tf32 if is_cuda else None
    if is_cuda:
        torch.backends.cuda.matmul.allow_tf32 = name == "tf32"
    try:
        with torch.no_grad():
            sizes = _square_gemm_sizes(dev.type)
            n = sizes[0]
            for n in sizes:  # smallest size whose matmul takes >= 5 ms
                a = torch.randn(n, n, device=dev).to(torch_dtype)
                b = torch.randn(n, n, device=dev).to(torch_dtype)
                torch.matmul(a, b)  # warm-up (kernel selection, allocation)
                sync()
                start = time.perf_counter()
                torch.matmul(a, b)
                sync()
                if time.perf_counter() - start >= 5e-3:
                    break
            flops = float(_C.mm_flop(n, n, n))  # the core's GEMM rule
            return _checked_rate(lambda: _gemm_rate(a, b, flops, duration / 2, sync),
                                 f"{name} {dev}")
    finally:
        if is_cuda:
            torch.backends.cuda.matmul.allow_tf32 = old_tf32


def measured_gpu_spec(dtype: Any = "fp32", device: Any = "cpu") -> GPUSpec:
    """A spec whose only peak is measured by :func:`measure_peak_flops`
    (``source == "measured"``, the name says it was measured)."""
    import torch

    name = normalize_dtype(dtype)
    dev = check_device(device)
    rate = measure_peak_flops(name, dev)
    if dev.type == "cuda":
        label = torch.cuda.get_device_name(dev)
    else:
        label = dev.type
    return GPUSpec(
        name=f"{label} (measured {name} GEMM peak)",
        peak_flops_by_dtype={name: rate},
        source="measured",
        citation=f"measured by mfu_tracker.measure_peak_flops({name!r}, {str(dev)!r}): "
                 "best square-GEMM rate",
    )
