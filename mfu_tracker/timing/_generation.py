"""MFU and MBU of a generation, prefill apart from decode: :func:`generation_utilization`.

Decode is bound by memory: its first figure is MBU (the bytes it moved per
second over the device's memory bandwidth), then MFU. The prefill is bound by
compute, as training is: MFU first, then MBU. The ratios are the C core's
(``stats.c``, the arithmetic of every MFU and MBU here); the peak is the one
rule every caller uses (:func:`~mfu_tracker.peaks._resolve.resolve_peak`).
A ratio above 1 warns once and is reported unclamped; one whose peak (or
bytes) is unknown is None, never 0.

Units: FLOP/s and bytes/s per second of wall time, shares (0..1, unclamped),
tokens/s, seconds.
"""
from __future__ import annotations

import dataclasses
import threading
import warnings
from typing import Any, Optional

from .._native import _C
from .._validate import check_int
from ..peaks._resolve import resolve_peak
from ..peaks._table import GPUSpec

__all__ = ["GenerationUtilization", "generation_utilization"]

_warned_lock = threading.Lock()
_warned: set[str] = set()


@dataclasses.dataclass(frozen=True)
class GenerationUtilization:
    """A generation's figures against one device's peaks (x ``num_gpus``).

    Decode: ``decode_mbu`` (bytes/s over the memory bandwidth), then
    ``decode_mfu``; prefill: ``prefill_mfu``, then ``prefill_mbu``; ``mfu``
    and ``mbu`` over both. ``*_flops_per_sec`` / ``*_bytes_per_sec``: the
    achieved rates (all devices together); ``*_tokens_per_sec``: prompt
    tokens per prefill second, decode tokens per decode second. None where
    a time, a byte count or a peak is unknown.
    """

    decode_mbu: Optional[float]
    decode_mfu: Optional[float]
    decode_tokens_per_sec: Optional[float]
    decode_bytes_per_sec: Optional[float]
    decode_flops_per_sec: Optional[float]
    prefill_mfu: Optional[float]
    prefill_mbu: Optional[float]
    prefill_tokens_per_sec: Optional[float]
    prefill_flops_per_sec: Optional[float]
    mfu: Optional[float]
    mbu: Optional[float]
    prefill_s: Optional[float]
    decode_s: Optional[float]
    peak_flops_per_sec: Optional[float]
    peak_bytes_per_sec: Optional[float]
    num_gpus: int
    dtype: str

    def __str__(self) -> str:
        def share(x: Optional[float]) -> str:
            return "n/a" if x is None else f"{x:.3g}"

        def rate(x: Optional[float], unit: str) -> str:
            return "n/a" if x is None else f"{x:.4g} {unit}"
        return (f"decode: MBU {share(self.decode_mbu)} "
                f"({rate(self.decode_bytes_per_sec, 'B/s')} of "
                f"{rate(self.peak_bytes_per_sec, 'B/s')} x {self.num_gpus}), "
                f"MFU {share(self.decode_mfu)}, {rate(self.decode_tokens_per_sec, 'tokens/s')}"
                f" | prefill: MFU {share(self.prefill_mfu)} "
                f"({rate(self.prefill_flops_per_sec, 'FLOP/s')} of "
                f"{rate(self.peak_flops_per_sec, 'FLOP/s')} {self.dtype} x {self.num_gpus}), "
                f"MBU {share(self.prefill_mbu)}, "
                f"{rate(self.prefill_tokens_per_sec, 'tokens/s')}")


def _warn_above_one(name: str, value: Optional[float], what: str) -> None:
    """One warning per figure name and process for a share above 1."""
    if value is None or not value > 1.0:
        return
    with _warned_lock:
        if name in _warned:
            return
        _warned.add(name)
    warnings.warn(f"mfu_tracker: generation {name} {value:.3f} > 1: {what} exceeds the peak "
                  "(a wrong peak, a count too high, or a time too short); reported unclamped",
                  RuntimeWarning, stacklevel=3)


def _phase(flops: float, nbytes: Optional[float], tokens: float, seconds: Optional[float],
           peak_flops: Optional[float], peak_bytes: Optional[float],
           num_gpus: int) -> dict[str, Optional[float]]:
    if seconds is None or not seconds > 0.0:
        return {"mfu": None, "mbu": None, "achieved_flops_per_sec": None,
                "achieved_bytes_per_sec": None, "tokens_per_sec": None}
    return _C.compute_metrics(flops, seconds, param_bytes=nbytes, num_tokens=tokens,
                              peak_flops_per_sec=peak_flops, peak_bytes_per_sec=peak_bytes,
                              num_gpus=num_gpus)


def _seconds(value: Any, name: str) -> Optional[float]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0.0 \
            or value == float("inf"):
        raise ValueError(f"{name} must be a finite number of seconds >= 0, got {value!r}")
    return float(value)


#: What generation_utilization reads of its work.
_WORK_FIELDS = ("prefill_flops", "decode_flops", "prefill_bytes", "decode_bytes", "prefill_tokens",
                "decode_tokens")


def generation_utilization(
    work: Any,
    *,
    prefill_s: Optional[float] = None,
    decode_s: Optional[float] = None,
    dtype: Any = None,
    num_gpus: int = 1,
    device: Any = None,
    spec: Optional[GPUSpec] = None,
    peak_tflops: Optional[float] = None,
) -> GenerationUtilization:
    """MFU and MBU of a generation's prefill and decode.

    Args:
        work: a :class:`~mfu_tracker.GenerationFlops` (analytic: FLOPs and
            bytes) or a :class:`~mfu_tracker.GenerationCount` (the exact
            count: FLOPs and its own times; no bytes, so no MBU), or any
            object with ``prefill_flops``, ``decode_flops``,
            ``prefill_bytes``, ``decode_bytes`` (None: unknown),
            ``prefill_tokens`` and ``decode_tokens``.
        prefill_s, decode_s: seconds each phase took (default: ``work``'s
            own ``prefill_s`` / ``decode_s`` when it has them).
        dtype: the dtype whose peak FLOP/s is the MFU denominator (None: bf16, or fp16 on a device without bf16 (docs/conventions.md)).
        num_gpus: devices the generation ran on (peaks multiply).
        device, spec, peak_tflops: the peak, as :func:`~mfu_tracker.compute_mfu`
            takes it; MBU needs the spec's memory bandwidth (a CPU: pass
            ``spec=user_gpu_spec(..., memory_bandwidth_tbs=...)``).

    Returns:
        GenerationUtilization (warns once per figure above 1, unclamped).
    """
    missing = [a for a in _WORK_FIELDS if not hasattr(work, a)]
    if missing:
        raise TypeError(f"generation_utilization: work must be a GenerationFlops or a "
                        f"GenerationCount (an object with {', '.join(_WORK_FIELDS)}), not "
                        f"{type(work).__name__} (no {missing[0]})")
    gpus = check_int(num_gpus, "num_gpus", 1)
    prefill = _seconds(prefill_s if prefill_s is not None else getattr(work, "prefill_s", None),
                       "prefill_s")
    decode = _seconds(decode_s if decode_s is not None else getattr(work, "decode_s", None),
                      "decode_s")
    peak = resolve_peak(dtype, device=device, spec=spec, peak_tflops=peak_tflops)
    args = (peak.flops_per_sec, peak.bytes_per_sec, gpus)
    pre = _phase(work.prefill_flops, work.prefill_bytes, work.prefill_tokens, prefill, *args)
    dec = _phase(work.decode_flops, work.decode_bytes, work.decode_tokens, decode, *args)
    both = {"mfu": None, "mbu": None}
    if prefill is not None and decode is not None:
        nbytes = (None if work.prefill_bytes is None or work.decode_bytes is None
                  else work.prefill_bytes + work.decode_bytes)
        both = _phase(work.prefill_flops + work.decode_flops, nbytes, 0.0, prefill + decode,
                      *args)
    for name, value, what in (("decode MBU", dec["mbu"], "the decode's bytes/s"),
                              ("decode MFU", dec["mfu"], "the decode's FLOP/s"),
                              ("prefill MFU", pre["mfu"], "the prefill's FLOP/s"),
                              ("prefill MBU", pre["mbu"], "the prefill's bytes/s")):
        _warn_above_one(name, value, what)
    return GenerationUtilization(
        decode_mbu=dec["mbu"], decode_mfu=dec["mfu"], decode_tokens_per_sec=dec["tokens_per_sec"],
        decode_bytes_per_sec=dec["achieved_bytes_per_sec"],
        decode_flops_per_sec=dec["achieved_flops_per_sec"], prefill_mfu=pre["mfu"],
        prefill_mbu=pre["mbu"], prefill_tokens_per_sec=pre["tokens_per_sec"],
        prefill_flops_per_sec=pre["achieved_flops_per_sec"], mfu=both["mfu"], mbu=both["mbu"],
        prefill_s=prefill, decode_s=decode, peak_flops_per_sec=peak.flops_per_sec,
        peak_bytes_per_sec=peak.bytes_per_sec, num_gpus=gpus, dtype=peak.dtype)
