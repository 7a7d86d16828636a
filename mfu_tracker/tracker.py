"""MFU for a block of work: ``track()``, and one-shot ``compute_mfu()`` / ``compute_mbu()``.

Units: FLOP counts are FLOPs, rates are FLOP/s (or TFLOP/s where the name
says so), times are seconds, bandwidths bytes/s (TB/s where the name says so).

``track()`` is implemented in C (``_C.track``: argument parsing, the timed
block, the arithmetic); this module resolves the peak the result is measured
against and the clock that times the block, which ``track()`` asks for only
when its arguments change, so a ``track()`` per step costs about as much as
``contextlib.nullcontext()`` (benchmarks/track_overhead.py).

Clocks: a block on a CUDA / ROCm device is timed with GPU events (driver API,
loaded at run time) recorded on the block's stream -- the time the GPU spent
between entering and leaving the block, with no synchronization. One
``_C.MarkTimer`` per (clock, device) serves every block. Elsewhere, or when
the GPU driver fails (one warning), the monotonic CPU clock.
"""
from __future__ import annotations

import math
import os
import sys
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Tuple

from . import _C
from ._dtypes import normalize_dtype
from .gpu import PEAK_ENV_VAR, GPUSpec, get_gpu_spec, user_gpu_spec

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
    if spec is not None and not isinstance(spec, GPUSpec):
        raise TypeError(f"spec must be a GPUSpec, not {type(spec).__name__}")
    if peak_tflops is not None:
        tflops = _check_peak_tflops(peak_tflops)
        if spec is not None:
            base = spec
        else:
            # The device is looked up only for its bandwidth (MBU); its "no
            # datasheet peak" warning does not apply when the user gave one.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                base = get_gpu_spec(device)
        bandwidth = base.memory_bandwidth_bytes_per_sec or None
        user = user_gpu_spec(tflops, name=base.name, memory_bandwidth_tbs=bandwidth * 1e-12 if bandwidth else None)
        return Peak(name, tflops * 1e12, bandwidth, user)
    if spec is None:
        spec = get_gpu_spec(device)
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
        key: _PeakKey = (dtype, device, peak_tflops, os.environ.get(PEAK_ENV_VAR))
        cached = _PEAK_CACHE.get(key)
    except TypeError:  # an unhashable device or dtype: resolve every time
        return _resolve_uncached(dtype, device, spec, peak_tflops)
    if cached is None:
        cached = _resolve_uncached(dtype, device, spec, peak_tflops)
        _PEAK_CACHE[key] = cached
    return cached


# ---- clocks ---------------------------------------------------------------------

#: Values of the ``clock`` argument of :func:`track` and :class:`~mfu_tracker.step.Tracker`.
_CLOCKS = ("auto", "cuda", "hip", "cpu")

_STREAM_LIMIT = 1 << 64


def _check_clock(clock: Any) -> str:
    """``clock`` validated: one of :data:`_CLOCKS`."""
    if not isinstance(clock, str):
        raise TypeError(f"clock must be a str ({', '.join(_CLOCKS)}), not {type(clock).__name__}")
    if clock not in _CLOCKS:
        raise ValueError(f"clock must be one of {', '.join(map(repr, _CLOCKS))}, got {clock!r}")
    return clock


def _stream_handle(stream: Any) -> int:
    """The raw stream handle of ``stream``: a torch stream (its ``cuda_stream``,
    also on ROCm) or an int handle. ``None`` is resolved by the caller."""
    if isinstance(stream, int) and not isinstance(stream, bool):
        handle = stream
    else:
        handle = getattr(stream, "cuda_stream", None)
        if not isinstance(handle, int) or isinstance(handle, bool):
            raise TypeError(
                "stream must be a torch.cuda.Stream, a raw stream handle (int) or None, "
                f"not {type(stream).__name__}"
            )
    if not 0 <= handle < _STREAM_LIMIT:
        raise ValueError(f"stream must be a handle in [0, 2**64), got {handle!r}")
    return handle


def _torch_with_gpu() -> Any:
    """torch if it is imported and has a CUDA/ROCm device, else None. Never
    imports torch: a run that has not imported it computes on no GPU."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        return torch if torch.cuda.is_available() else None
    except Exception:  # a broken CUDA install: the CPU clock
        return None


def _device_index(device: Any, torch: Any) -> Tuple[bool, Optional[int]]:
    """(is a CUDA/ROCm device, its index) for a ``device`` argument."""
    if device is None:
        return (True, torch.cuda.current_device()) if torch is not None else (False, None)
    if torch is None:
        if isinstance(device, str):
            return device.startswith("cuda"), None
        return isinstance(device, int) and not isinstance(device, bool), None
    dev = torch.device("cuda", device) if isinstance(device, int) else torch.device(device)
    if dev.type != "cuda":
        return False, None
    return True, dev.index if dev.index is not None else torch.cuda.current_device()


# (clock, device) -> (MarkTimer or None, torch device index or None, current-stream getter)
_ClockEntry = Tuple[Optional["_C.MarkTimer"], Optional[int], Optional[Callable[[int], int]]]
_BLOCK_CLOCKS: Dict[Tuple[str, Any], _ClockEntry] = {}
# (kind, device index) -> MarkTimer or None (unavailable: warned once)
_MARK_TIMERS: Dict[Tuple[str, Optional[int]], Optional["_C.MarkTimer"]] = {}


def _resolve_clock(clock: str, device: Any) -> Tuple[str, Optional[int], Any]:
    """(clock kind "cpu"/"cuda"/"hip", torch device index, torch) for a block
    or a tracker on ``device`` with ``clock`` (already checked).

    "auto" is the GPU clock when ``device`` (default: torch's current device)
    is a CUDA / ROCm device -- "hip" on a ROCm build of torch -- else "cpu".
    "cuda" / "hip" pin the GPU clock even where torch has no GPU (then the
    null stream is the default stream)."""
    torch = _torch_with_gpu()
    on_gpu, index = _device_index(device, torch)
    if clock == "cpu" or (clock == "auto" and not (on_gpu and torch is not None)):
        return "cpu", None, torch
    if clock == "auto":
        return ("hip" if getattr(torch.version, "hip", None) else "cuda"), index, torch
    return clock, (index if torch is not None else None), torch


def _ensure_context(torch: Any, index: Optional[int]) -> None:
    """Make the device's primary CUDA context current on this thread (the
    driver API needs one; torch creates it lazily)."""
    if torch is None or index is None:
        return
    try:
        with torch.cuda.device(index):
            torch.zeros(1, device=torch.device("cuda", index))
    except Exception:  # MarkTimer creation then says what is missing
        pass


def _mark_timer(kind: str, index: Optional[int], torch: Any, what: str) -> Optional["_C.MarkTimer"]:
    """The shared MarkTimer of (kind, device index), created on first use;
    None (after one warning naming the cause) when the GPU clock is unusable."""
    key = (kind, index)
    if key in _MARK_TIMERS:
        return _MARK_TIMERS[key]
    _ensure_context(torch, index)
    try:
        timer: Optional[_C.MarkTimer] = _C.MarkTimer(kind)
    except RuntimeError as error:
        warnings.warn(f"mfu_tracker: {what}: {error}; timing falls back to the CPU clock",
                      RuntimeWarning, stacklevel=3)
        timer = None
    _MARK_TIMERS[key] = timer
    return timer


def _current_stream_getter(torch: Any, index: Optional[int]) -> Optional[Callable[[int], int]]:
    """A function giving torch's current raw stream of a device index, or None
    when torch has no GPU (the null stream, 0, is then the default)."""
    if torch is None or index is None:
        return None
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw
    return lambda i: torch.cuda.current_stream(i).cuda_stream


def _block_clock(clock: Any, device: Any) -> _ClockEntry:
    _check_clock(clock)
    kind, index, torch = _resolve_clock(clock, device)
    if kind == "cpu":
        entry: _ClockEntry = (None, None, None)
    else:
        timer = _mark_timer(kind, index, torch, "track()")
        entry = (timer, index, _current_stream_getter(torch, index) if timer is not None else None)
    # Cache only what cannot change: before torch is imported, "auto" might
    # find a GPU later.
    if clock != "auto" or "torch" in sys.modules:
        try:
            _BLOCK_CLOCKS[(clock, device)] = entry
        except TypeError:  # an unhashable device: resolved every time
            pass
    return entry


def _reset_clocks() -> None:
    """Forget the cached clocks, shared timers and resolved peaks (tests, or
    after changing ``MFU_TRACKER_PEAK_TFLOPS`` mid-run)."""
    _BLOCK_CLOCKS.clear()
    _MARK_TIMERS.clear()
    _BLOCK_CACHE.clear()
    _PEAK_CACHE.clear()
    _C._set_track_resolver(_resolve_block)  # also empties track()'s own cache


# What track() needs besides its per-block arguments, resolved from
# (dtype, device, spec, peak_tflops, clock): (peak FLOP/s, peak bytes/s,
# dtype name, GPUSpec, MarkTimer or None, device index, current-stream getter).
_CacheKey = Tuple[Any, Any, Any, Any, Any, Optional[str]]
_Resolved = Tuple[Optional[float], Optional[float], str, Optional[GPUSpec],
                  Optional["_C.MarkTimer"], Optional[int], Optional[Callable[[int], int]]]
_BLOCK_CACHE: Dict[_CacheKey, _Resolved] = {}


def _resolve_block(dtype: Any, device: Any, spec: Any, peak_tflops: Any, clock: Any) -> _Resolved:
    """Resolve (dtype, device, spec, peak_tflops, clock) for track(): the
    peak (with ``MFU_TRACKER_PEAK_TFLOPS`` read now) and the clock. track()
    (in C) calls this only when its arguments are not the objects of its
    previous call; here results are cached per hashable key (a key holding a
    GPUSpec, which is unhashable, is resolved anew)."""
    key = (dtype, device, spec, peak_tflops, clock)
    cache_key = (*key, os.environ.get(PEAK_ENV_VAR))
    try:
        return _BLOCK_CACHE[cache_key]
    except (KeyError, TypeError):
        pass
    peak = resolve_peak(dtype, device=device, spec=spec, peak_tflops=peak_tflops)
    try:
        timer, index, current = _BLOCK_CLOCKS[(clock, device)]
    except (KeyError, TypeError):
        timer, index, current = _block_clock(clock, device)
    resolved: _Resolved = (peak.flops_per_sec, peak.bytes_per_sec, peak.dtype, peak.spec,
                           timer, index, current)
    # Cache only what cannot change: before torch is imported, "auto" might
    # find a GPU later.
    if clock != "auto" or "torch" in sys.modules:
        try:
            _BLOCK_CACHE[cache_key] = resolved
        except TypeError:
            pass
    return resolved


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
    elif not isinstance(spec, GPUSpec):
        raise TypeError(f"spec must be a GPUSpec, not {type(spec).__name__}")
    bandwidth = spec.memory_bandwidth_bytes_per_sec or None
    return _C.compute_metrics(
        0, elapsed_sec, param_bytes=param_bytes, peak_bytes_per_sec=bandwidth, num_gpus=num_gpus
    )["mbu"]


# track() is implemented in C (csrc/python/py_track.c): argument parsing, a
# one-entry cache of the resolution above, the block. See its docstring.
_C._set_track_resolver(_resolve_block)
track = _C.track
