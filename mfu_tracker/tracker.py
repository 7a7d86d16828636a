"""MFU for a block of work: ``track()``, and one-shot ``compute_mfu()`` / ``compute_mbu()``.

Units: FLOP counts are FLOPs, rates are FLOP/s (or TFLOP/s where the name
says so), times are seconds, bandwidths bytes/s (TB/s where the name says so).

The timed block and the arithmetic live in the C core (``_C.new_track``,
``_C.compute_metrics``); this module only resolves the peak the result is
measured against and caches that resolution, so a ``track()`` per step costs
well under a microsecond on the CPU.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

from . import _C
from ._dtypes import normalize_dtype
from .gpu import GPUSpec, get_gpu_spec, user_gpu_spec

__all__ = ["track", "compute_mfu", "compute_mbu", "UtilizationResult", "resolve_peak", "Peak"]

#: The result type of :func:`track` (implemented in C). Fields: ``mfu``,
#: ``hfu``, ``mbu``, ``elapsed_sec`` (s), ``achieved_tflops`` (TFLOP/s),
#: ``achieved_tbs`` (TB/s), ``tokens_per_sec``, ``peak_flops_per_sec``
#: (the MFU denominator, FLOP/s), ``ready``, ``dtype``, ``gpu_spec``.
UtilizationResult = _C.UtilizationResult


@dataclass(frozen=True)
class Peak:
    """The ceiling a run is measured against, for one device and dtype.

    ``flops_per_sec`` (FLOP/s) and ``bytes_per_sec`` (bytes/s) are per device
    and ``None`` when unknown (then MFU / MBU are unavailable, never guessed).
    """

    dtype: str
    flops_per_sec: Optional[float]
    bytes_per_sec: Optional[float]
    spec: Optional[GPUSpec]

    @property
    def source(self) -> str:
        """Where the peak came from: "datasheet", "measured", "user" or "unknown"."""
        if self.spec is None or self.flops_per_sec is None:
            return "unknown"
        return self.spec.source


_PeakKey = Tuple[Any, Any, Any, Optional[str]]
_PEAK_CACHE: Dict[_PeakKey, Peak] = {}


def _check_peak_tflops(peak_tflops: Any) -> float:
    if isinstance(peak_tflops, bool) or not isinstance(peak_tflops, (int, float)):
        raise TypeError(f"peak_tflops must be a number, not {type(peak_tflops).__name__}")
    if not (math.isfinite(peak_tflops) and peak_tflops > 0):
        raise ValueError(f"peak_tflops must be a finite number > 0 (TFLOP/s), got {peak_tflops!r}")
    return float(peak_tflops)


def _resolve_uncached(dtype: Any, device: Any, spec: Optional[GPUSpec], peak_tflops: Any) -> Peak:
    name = normalize_dtype(dtype)
    if peak_tflops is not None:
        tflops = _check_peak_tflops(peak_tflops)
        base = spec if spec is not None else get_gpu_spec(device)
        bandwidth = base.memory_bandwidth_bytes_per_sec or None
        user = user_gpu_spec(tflops, name=base.name, memory_bandwidth_tbs=bandwidth * 1e-12 if bandwidth else None)
        return Peak(name, tflops * 1e12, bandwidth, user)
    if spec is None:
        spec = get_gpu_spec(device)
    if not isinstance(spec, GPUSpec):
        raise TypeError(f"spec must be a GPUSpec, not {type(spec).__name__}")
    bandwidth = spec.memory_bandwidth_bytes_per_sec or None
    if spec.has_peak(name):
        return Peak(name, spec.peak_flops_per_sec(name), bandwidth, spec)
    if spec.peak_flops_by_dtype:
        # A known device that lacks this dtype: a configuration error (fp8 on
        # an A100), raised with the dtypes it has.
        spec.peak_tflops(name)
    # No peak at all (CPU, unknown GPU): get_gpu_spec() warned once already.
    return Peak(name, None, bandwidth, spec)


def resolve_peak(
    dtype: Any = "fp16",
    *,
    device: Any = None,
    spec: Optional[GPUSpec] = None,
    peak_tflops: Optional[float] = None,
) -> Peak:
    """Resolve the per-device peak for ``dtype``.

    Precedence: ``peak_tflops`` (TFLOP/s, the user's figure) > ``spec`` >
    the table entry for ``device`` (with ``MFU_TRACKER_PEAK_TFLOPS`` applied).
    Results without an explicit ``spec`` are cached per (dtype, device,
    peak_tflops, environment override).
    """
    if spec is not None:
        return _resolve_uncached(dtype, device, spec, peak_tflops)
    try:
        key: _PeakKey = (dtype, device, peak_tflops, os.environ.get("MFU_TRACKER_PEAK_TFLOPS"))
        cached = _PEAK_CACHE.get(key)
    except TypeError:  # an unhashable device or dtype: resolve every time
        return _resolve_uncached(dtype, device, spec, peak_tflops)
    if cached is None:
        cached = _resolve_uncached(dtype, device, spec, peak_tflops)
        _PEAK_CACHE[key] = cached
    return cached


def track(
    flop_count: float,
    param_bytes: Optional[float] = None,
    *,
    hfu_flop_count: Optional[float] = None,
    num_tokens: Optional[float] = None,
    dtype: Any = "fp16",
    num_gpus: int = 1,
    device: Any = None,
    spec: Optional[GPUSpec] = None,
    peak_tflops: Optional[float] = None,
) -> UtilizationResult:
    """Time a block of work and report its utilization::

        with track(flops, param_bytes(model), dtype="bf16", num_tokens=b * s) as r:
            loss = model(**batch).loss
            loss.backward()
        print(r.mfu, r.elapsed_sec, r.achieved_tflops)

    Args:
        flop_count: model FLOPs of the block (the MFU numerator, FLOPs).
        param_bytes: bytes of weights read once per block (the MBU numerator).
        hfu_flop_count: executed FLOPs (recompute included) for HFU, or None.
        num_tokens: tokens processed in the block, for ``tokens_per_sec``.
        dtype: compute dtype selecting the peak ("bf16", torch.bfloat16, ...).
        num_gpus: devices the FLOPs ran on; the peak is multiplied by it. Keep
            1 for a per-device FLOP count.
        device: device whose peak to use (default: current CUDA device, else CPU).
        spec: a :class:`GPUSpec` to use instead of looking the device up.
        peak_tflops: per-device peak in TFLOP/s, overriding the table.

    The figures are ``None`` until the block exits, and ``mfu`` stays ``None``
    when no peak is known for the device (CPU without ``peak_tflops``). An
    exception raised in the block propagates unchanged. Timing uses the
    monotonic CPU clock.
    """
    peak = resolve_peak(dtype, device=device, spec=spec, peak_tflops=peak_tflops)
    return _C.new_track(
        flop_count,
        param_bytes,
        hfu_flop_count,
        num_tokens,
        peak.flops_per_sec,
        peak.bytes_per_sec,
        num_gpus,
        peak.dtype,
        peak.spec,
    )


def compute_mfu(
    flop_count: float,
    elapsed_sec: float,
    *,
    dtype: Any = "fp16",
    num_gpus: int = 1,
    device: Any = None,
    spec: Optional[GPUSpec] = None,
    peak_tflops: Optional[float] = None,
) -> Optional[float]:
    """MFU of ``flop_count`` FLOPs done in ``elapsed_sec`` seconds on ``num_gpus``
    devices: ``flop_count / elapsed_sec / (peak FLOP/s x num_gpus)``.

    ``None`` when no peak is known for the device; never clamped to 1.
    """
    peak = resolve_peak(dtype, device=device, spec=spec, peak_tflops=peak_tflops)
    return _C.compute_metrics(
        flop_count, elapsed_sec, peak_flops_per_sec=peak.flops_per_sec, num_gpus=num_gpus
    )["mfu"]


def compute_mbu(
    param_bytes: float,
    elapsed_sec: float,
    *,
    num_gpus: int = 1,
    device: Any = None,
    spec: Optional[GPUSpec] = None,
) -> Optional[float]:
    """MBU proxy: ``param_bytes / elapsed_sec / (peak bytes/s x num_gpus)``.

    ``None`` when the device's memory bandwidth is unknown.
    """
    if spec is None:
        spec = get_gpu_spec(device)
    bandwidth = spec.memory_bandwidth_bytes_per_sec or None
    return _C.compute_metrics(
        0, elapsed_sec, param_bytes=param_bytes, peak_bytes_per_sec=bandwidth, num_gpus=num_gpus
    )["mbu"]
