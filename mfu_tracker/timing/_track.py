"""MFU of a block of work: ``track()``, and one-shot ``compute_mfu()`` / ``compute_mbu()``.

Units: FLOP counts are FLOPs, rates are FLOP/s (or TFLOP/s where the name
says so), times are seconds, bandwidths bytes/s (TB/s where the name says so).

``track()`` is implemented in C (``_C.track``: argument parsing, the timed
block, the arithmetic); the peak the result is measured against
(:mod:`mfu_tracker.peaks._resolve`) and the clock that times the block
(:mod:`mfu_tracker.timing._clock`) are resolved in Python, only when its arguments
change, so a ``track()`` per step costs about as much as
``contextlib.nullcontext()`` (benchmarks/track_overhead.py).

Clocks: a block on a CUDA / ROCm device is timed with GPU events (driver API,
loaded at run time) recorded on the block's stream -- the time the GPU spent
between entering and leaving the block, with no synchronization. Elsewhere,
or when the GPU driver fails (one warning), the monotonic CPU clock.

:class:`UtilizationResult` is also what ``MFUOptimizerWrapper.track_step()``
yields: one result type for every timed block.
"""
from __future__ import annotations

from typing import Any, Optional

from .._native import _C
from ..peaks._resolve import resolve_peak
from ..peaks._table import GPUSpec, check_spec, get_gpu_spec
from ._clock import resolve_track

__all__ = ["track", "compute_mfu", "compute_mbu", "UtilizationResult"]

#: The result type of :func:`track` (implemented in C). Fields: ``mfu``,
#: ``mfu_mixed`` (``track(flops_by_dtype=)``: each dtype's FLOPs at its own
#: peak), ``hfu``, ``mbu``, ``elapsed_sec`` (s), ``achieved_tflops`` (TFLOP/s),
#: ``achieved_flops_per_sec`` (FLOP/s), ``achieved_tbs`` (TB/s),
#: ``tokens_per_sec``, ``peak_flops_per_sec`` (the MFU denominator, FLOP/s),
#: ``model_flops`` / ``executed_flops`` (FLOPs), ``num_tokens``,
#: ``num_gpus``, ``ready``, ``clock``, ``dtype``, ``gpu_spec``; and
#: ``set_work()`` for a block whose work is known only when it ends.
UtilizationResult = _C.UtilizationResult


def compute_mfu(
    flop_count: float,
    elapsed_sec: float,
    *,
    dtype: Any = None,
    num_gpus: int = 1,
    device: Any = None,
    spec: Optional[GPUSpec] = None,
    peak_tflops: Optional[float] = None,
) -> Optional[float]:
    """MFU of ``flop_count`` FLOPs done in ``elapsed_sec`` seconds on ``num_gpus``
    devices: ``flop_count / elapsed_sec / (peak FLOP/s x num_gpus)``.

    ``None`` when no peak is known for the device; never clamped to 1.
    ``dtype`` selects the peak (None: bf16, or fp16 on a device without
    bf16; docs/conventions.md, "The default dtype").
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
    if check_spec(spec) is None:
        spec = get_gpu_spec(device)
    bandwidth = spec.memory_bandwidth_bytes_per_sec or None
    return _C.compute_metrics(
        0, elapsed_sec, param_bytes=param_bytes, peak_bytes_per_sec=bandwidth, num_gpus=num_gpus
    )["mbu"]


# track() is implemented in C (csrc/python/py_track.c): argument parsing, a
# one-entry cache of the resolution, the block. See its docstring.
_C.set_track_resolver(resolve_track)
track = _C.track
