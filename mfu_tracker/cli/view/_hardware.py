"""What the hardware did, beside the arithmetic: the utilization ladder (GPU
busy -> SM active -> tensor active -> MFU), OFU beside MFU, the MFU
self-check, and the memory headroom. Every value is a logged key
(docs/hardware-counters.md: NVML GPM and the caching allocator, read at the
tracker's window edges); the verdict of the self-check is
:func:`mfu_tracker.device._consistency.verdict`'s."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ...device._consistency import LOW_RATIO, high_limit, verdict
from ..report.panels.hardware import MISSING as NO_COUNTERS
from ._figure import DERIVED, MEASURED, Figure, Newest

__all__ = ["ladder", "memory"]

#: The ladder's rungs, top down: (key name, label, what it measures).
RUNGS = (
    ("hw/gpu_busy", "GPU busy", "share of the window any kernel ran (GPM GRAPHICS_UTIL)"),
    ("hw/sm_active", "SM active", "share of the window the SMs were busy (GPM SM_UTIL)"),
    ("hw/tensor_active", "tensor active", "share of the window the tensor pipes were busy "
     "(GPM ANY_TENSOR_UTIL)"),
)


def _self_check(newest: Newest, run_dtype: Any) -> Figure:
    check = newest.figure(
        "hw/mfu_consistency", "MFU self-check", DERIVED,
        formula="mfu / hw/tensor_active: near 1 a GEMM at full speed; a healthy run reads "
                "about 0.55-0.9; clearly above 1 the FLOP count or the peak is wrong; below "
                f"{LOW_RATIO} the pipes did work MFU does not book",
        inputs=[newest.input("mfu", "hw/mfu_consistency", "MFU", DERIVED),
                newest.input("hw/tensor_active", "hw/mfu_consistency", "tensor active",
                             MEASURED)],
        absent="needs MFU and the tensor pipes' activity (GPM), with a tensor-core dtype "
               "(tf32, bf16, fp16, fp8, int8, fp4)")
    mfu, active = (i.value for i in check.inputs)
    if check.value is not None and mfu is not None and active:
        check.check = mfu / active
    return check


def _verdict(newest: Newest, dtype: Any, interval: Optional[Tuple[int, float]]) -> Optional[str]:
    """The self-check's reading of the newest line with both figures;
    ``interval``: the newest metrics line and the wall seconds since the
    previous one (the counters' window, when that line is the one read)."""
    mfu = newest.same_line("hw/tensor_active", "mfu")
    active = newest.value("hw/tensor_active")
    record = newest.line("hw/tensor_active")
    window_s = interval[1] if interval and record and record["_line"] == interval[0] else None
    found = verdict({"mfu": mfu, "hw_tensor_active": active, "dtype": dtype,
                     "hw_window_s": window_s})
    if found == "high":
        return (f"MFU is clearly above what the tensor pipes did (above "
                f"{high_limit(window_s):.2f} x tensor active): the FLOP count is too high or "
                f"the peak too low")
    if found == "low":
        return (f"the tensor pipes were busy far beyond MFU (MFU < {LOW_RATIO} x tensor "
                f"active): recompute, kernels below peak, or a sparse peak")
    if mfu is not None and active is not None:
        return "MFU is within what the tensor pipes did"
    return None


def ladder(newest: Newest, dtype: Any,
           interval: Optional[Tuple[int, float]] = None) -> Dict[str, Any]:
    """The ladder (JSON): each rung a figure, MFU last, OFU beside MFU, the
    self-check (``interval``: :func:`_verdict`'s); ``absent`` when the log
    has no hardware counters."""
    rungs: List[Figure] = [
        newest.figure(name, label, MEASURED, formula=meaning,
                      absent=f"no {newest.key(name)} in the log"
                      + (" (GPM GRAPHICS_UTIL: a tracker of this version logs it)"
                         if name == "hw/gpu_busy" else ""))
        for name, label, meaning in RUNGS]
    rungs.append(newest.figure("mfu", "MFU", DERIVED, formula="model FLOPs / time / peak"))
    ofu = newest.figure(
        "hw/tensor_active", "OFU", MEASURED,
        formula="the tensor pipes' own activity over the window (NVML GPM ANY_TENSOR_UTIL / "
                "100); MFU <= tensor active x SM clock / boost clock <= tensor active",
        absent=NO_COUNTERS)
    ofu.id = "ofu"
    clock = newest.same_line("hw/tensor_active", "clock_ratio")
    out: Dict[str, Any] = {"rungs": [r.to_json() for r in rungs], "ofu": ofu.to_json()}
    if ofu.value is not None and clock is not None:
        bound = Figure("ofu_clock", "OFU x clock ratio", ofu.value * clock, "ratio", DERIVED,
                       formula="hw/tensor_active x clock_ratio: the most MFU the busy "
                               "pipes allow at the clock they ran",
                       inputs=[ofu, newest.input("clock_ratio", "hw/tensor_active",
                                                 "SM clock / max", MEASURED)])
        out["ofu_clock"] = bound.to_json()
    out["self_check"] = _self_check(newest, dtype).to_json()
    out["verdict"] = _verdict(newest, dtype, interval)
    if all(r.value is None for r in rungs[:-1]):
        out["absent"] = NO_COUNTERS
    return out


MEMORY = (
    ("memory/peak_allocated_gib", "peak allocated", "the most memory tensors held"),
    ("memory/peak_reserved_gib", "peak reserved", "the most memory the caching allocator held"),
    ("memory/peak_allocated_frac", "allocated / device memory", ""),
    ("memory/peak_reserved_frac", "reserved / device memory", ""),
    ("memory/alloc_retries", "allocation retries", "allocations retried after freeing the "
     "cache, in the window: memory pressure"),
    ("memory/ooms", "out-of-memory errors", "in the window"),
)


def memory(newest: Newest) -> Dict[str, Any]:
    """Memory headroom (JSON): the allocator's figures and the headroom
    1 - peak reserved / device memory; ``absent`` without them."""
    figures = [newest.figure(name, label, MEASURED, formula=meaning or "")
               for name, label, meaning in MEMORY]
    reserved = newest.figure("memory/peak_reserved_frac", "", MEASURED)
    headroom = Figure("memory_headroom", "headroom", None, "ratio", DERIVED,
                      formula="1 - memory/peak_reserved_frac (the device memory the "
                              "allocator never reserved)", inputs=[reserved],
                      absent="needs the caching allocator's statistics (a CUDA or ROCm "
                             "device; Tracker(memory=...))")
    if reserved.value is not None:
        headroom.value, headroom.source, headroom.absent = 1.0 - reserved.value, \
            reserved.source, None
    out: Dict[str, Any] = {"figures": [headroom.to_json(), *(f.to_json() for f in figures)]}
    if all(f.value is None for f in figures):
        out["absent"] = ("no memory/* keys in the log: the caching allocator's statistics "
                         "come from a CUDA or ROCm device (Tracker(memory=...))")
    return out
