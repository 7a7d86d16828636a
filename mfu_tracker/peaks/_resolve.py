"""The peak a run is measured against: :class:`Peak` and :func:`resolve_peak`.

One rule for every caller (``track()``, ``Tracker``, the integrations,
``compute_mfu``): precedence ``peak_tflops`` (the user's figure, TFLOP/s) >
``spec`` > the datasheet table entry for the device, with
``MFU_TRACKER_PEAK_TFLOPS`` applied by the lookup. A known device that lacks
the dtype is a configuration error; a device with no peak at all (a CPU, an
unknown GPU) gives a :class:`Peak` whose ``flops_per_sec`` is None (the
lookup warned once): MFU is then unavailable, never guessed.

The default dtype, for every caller that takes one (``dtype=None``): the
device's 16-bit tensor peak, bf16, or fp16 on a device without a bf16 peak
(V100, T4, P100) -- :func:`default_dtype`; docs/conventions.md, "The default
dtype". On every device that has both, the two peaks are equal.

Units: ``flops_per_sec`` FLOP/s and ``bytes_per_sec`` bytes/s, per device.
"""
from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

from .._dtypes import DTYPE_NAMES, normalize_dtype
from .._validate import check_peak_tflops
from ._table import PEAK_ENV_VAR, GPUSpec, check_spec, get_gpu_spec, user_gpu_spec


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
_CACHE: Dict[_PeakKey, Peak] = {}


def default_dtype(spec: Optional[GPUSpec]) -> str:
    """The dtype ``dtype=None`` stands for on ``spec``'s device: bf16, or
    fp16 where the device has an fp16 peak and no bf16 one."""
    if spec is not None and not spec.has_peak("bf16") and spec.has_peak("fp16"):
        return "fp16"
    return "bf16"


def _resolve_uncached(dtype: Any, device: Any, spec: Optional[GPUSpec], peak_tflops: Any) -> Peak:
    name = None if dtype is None else normalize_dtype(dtype)
    check_spec(spec)
    if peak_tflops is not None:
        tflops = check_peak_tflops(peak_tflops)
        if spec is not None:
            base = spec
        else:
            # The device is looked up only for its bandwidth (MBU); its "no
            # datasheet peak" warning does not apply when the user gave one.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                base = get_gpu_spec(device)
        bandwidth = base.memory_bandwidth_bytes_per_sec or None
        name = name or default_dtype(base)   # the user's figure: the dtype is a label
        user = user_gpu_spec(tflops, name=base.name, memory_bandwidth_tbs=bandwidth * 1e-12 if bandwidth else None)
        return Peak(name, tflops * 1e12, bandwidth, user)
    if spec is None:
        spec = get_gpu_spec(device)
    name = name or default_dtype(spec)
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
    dtype: Any = None,
    *,
    device: Any = None,
    spec: Optional[GPUSpec] = None,
    peak_tflops: Optional[float] = None,
) -> Peak:
    """Resolve the per-device peak for ``dtype`` (None: :func:`default_dtype`).

    Precedence: ``peak_tflops`` (TFLOP/s, the user's figure) > ``spec`` >
    the table entry for ``device`` (with ``MFU_TRACKER_PEAK_TFLOPS`` applied).
    Results without an explicit ``spec`` are cached per (dtype, device,
    peak_tflops, environment override).
    """
    if spec is not None:
        return _resolve_uncached(dtype, device, spec, peak_tflops)
    try:
        key: _PeakKey = (dtype, device, peak_tflops, os.environ.get(PEAK_ENV_VAR))
        cached = _CACHE.get(key)
    except TypeError:  # an unhashable device or dtype: resolve every time
        return _resolve_uncached(dtype, device, spec, peak_tflops)
    if cached is None:
        cached = _resolve_uncached(dtype, device, spec, peak_tflops)
        _CACHE[key] = cached
    return cached


def clear_cache() -> None:
    """Forget every resolved peak (tests)."""
    _CACHE.clear()


def dtype_peaks(peak: Peak) -> Tuple[Optional[float], ...]:
    """Per-device peak FLOP/s of every dtype, in ``DTYPE_NAMES`` order (the
    C core's), None where the device has none: the spec's row, with the peak
    in use for ``peak.dtype``. The denominators of ``mfu_mixed``."""
    table = peak.spec.peak_flops_by_dtype if peak.spec is not None else {}
    return tuple(peak.flops_per_sec if name == peak.dtype else table.get(name)
                 for name in DTYPE_NAMES)
