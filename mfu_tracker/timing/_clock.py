"""Which clock times a block or a step, on which device and stream.

A block or tracker on a CUDA / ROCm device is timed with GPU events (driver
API, loaded at run time) recorded on its stream -- the time the GPU spent,
with no synchronization. One ``_C.MarkTimer`` per (clock, device) serves every
``track()`` block and tells, once per process and device, whether the GPU
clock works (a failure: one warning, then the CPU clock). Elsewhere the
monotonic CPU clock.

Also here: what ``track()`` (implemented in C, csrc/python/py_track.c) asks
for when its arguments change -- the peak and the clock of (dtype, device,
spec, peak_tflops, clock) -- with its cache, so a ``track()`` per step costs
about as much as ``contextlib.nullcontext()``.

torch is never imported here: a run that has not imported it computes on no GPU.
"""
from __future__ import annotations

import os
import sys
import warnings
from typing import Any, Callable, Dict, NamedTuple, Optional, Tuple

from .._native import _C
from .._validate import check_clock
from ..peaks._resolve import clear_cache as clear_peak_cache
from ..peaks._resolve import dtype_peaks, resolve_peak
from ..peaks._table import PEAK_ENV_VAR, GPUSpec


def torch_with_gpu() -> Any:
    """torch if it is imported and has a CUDA/ROCm device, else None."""
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


def resolve_clock(clock: str, device: Any) -> Tuple[str, Optional[int], Any]:
    """(clock kind "cpu"/"cuda"/"hip", torch device index, torch) for a block
    or a tracker on ``device`` with ``clock`` (already checked).

    "auto" is the GPU clock when ``device`` (default: torch's current device)
    is a CUDA / ROCm device -- "hip" on a ROCm build of torch -- else "cpu".
    "cuda" / "hip" pin the GPU clock even where torch has no GPU (then the
    null stream is the default stream)."""
    torch = torch_with_gpu()
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


#: (kind, device index) -> the shared MarkTimer, or None (unavailable: warned once).
MARK_TIMERS: Dict[Tuple[str, Optional[int]], Optional["_C.MarkTimer"]] = {}


def mark_timer(kind: str, index: Optional[int], torch: Any, what: str) -> Optional["_C.MarkTimer"]:
    """The shared MarkTimer of (kind, device index), created on first use;
    None (after one warning naming ``what`` and the cause) when the GPU clock
    is unusable."""
    key = (kind, index)
    if key in MARK_TIMERS:
        return MARK_TIMERS[key]
    _ensure_context(torch, index)
    try:
        timer: Optional[_C.MarkTimer] = _C.MarkTimer(kind)
    except RuntimeError as error:
        warnings.warn(f"mfu_tracker: {what}: {error}; timing falls back to the CPU clock",
                      RuntimeWarning, stacklevel=3)
        timer = None
    MARK_TIMERS[key] = timer
    return timer


def current_stream_getter(torch: Any, index: Optional[int]) -> Optional[Callable[[int], int]]:
    """A function giving torch's current raw stream of a device index, or None
    when torch has no GPU (the null stream, 0, is then the default)."""
    if torch is None or index is None:
        return None
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw
    return lambda i: torch.cuda.current_stream(i).cuda_stream


class BlockClock(NamedTuple):
    """The clock of a timed block on one device."""

    timer: Optional[_C.MarkTimer]                    # the shared GPU timer; None: the CPU clock
    index: Optional[int]                             # the torch device index (None: the CPU)
    current_stream: Optional[Callable[[int], int]]   # device index -> torch's current raw stream


_CPU_BLOCK_CLOCK = BlockClock(None, None, None)
_BLOCK_CLOCKS: Dict[Tuple[str, Any], BlockClock] = {}


def _settled(clock: str) -> bool:
    """Whether a resolution can be cached: before torch is imported, "auto"
    might find a GPU later."""
    return clock != "auto" or "torch" in sys.modules


def block_clock(clock: Any, device: Any, what: str = "track()") -> BlockClock:
    """The clock of a timed block (``track()``, ``track_step()``) on ``device``:
    the shared MarkTimer (None: the CPU clock), the device index and the
    current-stream getter. ``clock`` is checked here."""
    check_clock(clock)
    try:
        return _BLOCK_CLOCKS[(clock, device)]
    except (KeyError, TypeError):
        pass
    kind, index, torch = resolve_clock(clock, device)
    if kind == "cpu":
        entry = _CPU_BLOCK_CLOCK
    else:
        timer = mark_timer(kind, index, torch, what)
        entry = BlockClock(timer, index,
                           current_stream_getter(torch, index) if timer is not None else None)
    if _settled(clock):
        try:
            _BLOCK_CLOCKS[(clock, device)] = entry
        except TypeError:  # an unhashable device: resolved every time
            pass
    return entry


# (dtype, device, spec, peak_tflops, clock, MFU_TRACKER_PEAK_TFLOPS): the cache key.
_TrackKey = Tuple[Any, Any, Any, Any, Any, Optional[str]]


class TrackResolution(NamedTuple):
    """What ``track()`` needs besides its per-block arguments, resolved from
    (dtype, device, spec, peak_tflops, clock). The C side reads it by field
    position (``csrc/python/py_track.c``, ``RESOLVED_*``): keep the order."""

    peak_flops_per_sec: Optional[float]              # FLOP/s, per device
    peak_bytes_per_sec: Optional[float]              # bytes/s, per device
    dtype: str                                       # the peak's dtype name
    spec: Optional[GPUSpec]                          # the device's table row
    timer: Optional[_C.MarkTimer]                    # None: the CPU clock
    index: Optional[int]                             # the torch device index
    current_stream: Optional[Callable[[int], int]]   # device index -> current raw stream
    dtype_peaks: Tuple[Optional[float], ...]         # FLOP/s per dtype, for mfu_mixed


_TRACK_CACHE: Dict[_TrackKey, TrackResolution] = {}


def resolve_track(dtype: Any, device: Any, spec: Any, peak_tflops: Any, clock: Any) -> TrackResolution:
    """Resolve (dtype, device, spec, peak_tflops, clock) for ``track()``: the
    peak (with ``MFU_TRACKER_PEAK_TFLOPS`` read now) and the clock. ``track()``
    (in C) calls this only when its arguments are not the objects of its
    previous call; here results are cached per hashable key (a key holding a
    GPUSpec, which is unhashable, is resolved anew)."""
    cache_key = (dtype, device, spec, peak_tflops, clock, os.environ.get(PEAK_ENV_VAR))
    try:
        return _TRACK_CACHE[cache_key]
    except (KeyError, TypeError):
        pass
    peak = resolve_peak(dtype, device=device, spec=spec, peak_tflops=peak_tflops)
    block = block_clock(clock, device)
    resolved = TrackResolution(peak.flops_per_sec, peak.bytes_per_sec, peak.dtype, peak.spec,
                               block.timer, block.index, block.current_stream, dtype_peaks(peak))
    if _settled(clock):
        try:
            _TRACK_CACHE[cache_key] = resolved
        except TypeError:
            pass
    return resolved


def reset_caches() -> None:
    """Forget the cached clocks, shared timers, resolved peaks and ``track()``'s
    own one-entry cache (tests: every test starts from a fresh import's state)."""
    _BLOCK_CLOCKS.clear()
    MARK_TIMERS.clear()
    _TRACK_CACHE.clear()
    clear_peak_cache()
    _C.set_track_resolver(resolve_track)
