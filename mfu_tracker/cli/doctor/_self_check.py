"""The doctor's ``peak/mfu_self_check`` row: the self-check of MFU, on this machine.

A bf16 GEMM loop runs for at least :data:`WINDOW_S` seconds between two GPM
readings of the device (NVML, ``csrc/core/device/gpm.h``); its MFU (the loop's
FLOPs over its wall time -- the doctor may synchronize -- over the
datasheet peak) is read against the tensor pipes' busy share with the
tracker's own rule (:func:`mfu_tracker.device._consistency.verdict`). PASS
when consistent; WARN naming the cause when MFU is clearly above what the
pipes did (the count or the peak) or far below it; SKIP, saying why, where
the counters cannot be read (no NVIDIA device, before Hopper, no permission).
"""
from __future__ import annotations

import time
from typing import Any, Callable, Dict, Optional

from ..._native import _C
from ...device._consistency import high_limit, mfu_consistency, verdict

#: The loop's least duration: well over GPM's 0.1 s, so the counters' edge
#: term (2 x 0.1 s / window) stays small.
WINDOW_S = 1.0
QUICK_WINDOW_S = 0.3
DTYPE = "bf16"


def gemm_window(platform: Any, seconds: float, n: int = 8192) -> Dict[str, float]:
    """Run bf16 GEMMs of n x n on ``platform`` for at least ``seconds``:
    ``flops`` and the wall ``seconds`` they took (synchronized)."""
    platform.gemm(n, DTYPE, 1)
    platform.synchronize()
    flops, start = 0.0, time.perf_counter()
    while True:
        flops += platform.gemm(n, DTYPE, 10)
        platform.synchronize()
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return {"flops": flops, "seconds": elapsed}


def judge(mfu: float, counters: Dict[str, float], window_s: Optional[float]) -> tuple:
    """(status, figure, detail) of a loop's MFU against its counters."""
    active = counters.get("tensor_active")
    if active is None:
        return "WARN", f"MFU {mfu:.3f}, no tensor-active reading", "GPM gave no ANY_TENSOR_UTIL"
    figures = {"mfu": mfu, "hw_tensor_active": active, "hw_window_s": window_s, "dtype": DTYPE}
    ratio = mfu_consistency(mfu, active)
    figure = (f"bf16 GEMM loop: MFU {mfu:.3f}, tensor pipes busy {active:.3f}, "
              f"MFU / tensor-active {ratio if ratio is None else round(ratio, 3)}")
    found = verdict(figures)
    if found == "high":
        return "WARN", figure, (f"MFU above what the tensor pipes did (limit "
                                f"{high_limit(window_s):.2f}): the peak table's row or the "
                                f"GEMM's FLOP count is wrong for this device")
    if found == "low":
        return "WARN", figure, ("the tensor pipes were busy far beyond MFU: the GEMM ran below "
                                "peak per busy cycle (a clock held down, a shared device) or the "
                                "peak is above the device's dense figure")
    return "PASS", figure, ""


def self_check_row(add: Callable[..., None], platform: Any, spec: Any, device_id: Optional[str],
                   quick: bool) -> None:
    """Add the row (see the module doc)."""
    name = "mfu_self_check"
    if device_id is None:
        add("peak", name, "SKIP", "no NVML device", "the self-check reads NVML's GPM counters "
            "of an NVIDIA device torch can identify")
        return
    peak = spec.peak_flops_per_sec(DTYPE) if spec is not None and spec.has_peak(DTYPE) else None
    if peak is None:
        add("peak", name, "SKIP", "no bf16 peak", "no datasheet bf16 peak (see device/table_row)")
        return
    try:
        nvml = _C.Nvml(device_id)
    except Exception as exc:  # noqa: BLE001 -- NVML missing: said, never a crash
        add("peak", name, "SKIP", "NVML unavailable", f"{type(exc).__name__}: {exc}")
        return
    unavailable = nvml.gpm_open()
    if unavailable is not None:
        add("peak", name, "SKIP", "GPM unavailable", unavailable)
        return
    nvml.gpm_sample()
    loop = gemm_window(platform, QUICK_WINDOW_S if quick else WINDOW_S)
    counters, window_s, failure = nvml.gpm_sample()
    if failure is not None or not counters:
        add("peak", name, "WARN", "no counters", failure or "GPM gave no figures")
        return
    mfu = loop["flops"] / loop["seconds"] / peak
    status, figure, detail = judge(mfu, counters, window_s)
    add("peak", name, status, figure, detail, mfu=mfu, counters=counters, window_s=window_s,
        loop_seconds=loop["seconds"], loop_flops=loop["flops"], peak_flops_per_sec=peak)
