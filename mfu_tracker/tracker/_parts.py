"""The parts a :class:`~mfu_tracker.Tracker` is composed of, each built from
its checked configuration (:class:`._config.TrackerConfig`):

* the clock it times steps on (:func:`clock_of`: GPU events on the device's
  stream, else the CPU clock);
* the measured GEMM peak (:func:`measured_peak`, ``measure_peak=True``);
* what it reads from the device at each window edge (:func:`device_window`:
  NVML telemetry and GPM counters, the allocator's memory, the MFU
  self-check; :mod:`mfu_tracker.device._hardware`);
* its communication observer (:func:`communication`,
  :mod:`mfu_tracker.distributed._comm_observer`).

The step engine, the run book (:mod:`mfu_tracker.job._run`) and the
aggregator (:mod:`mfu_tracker.distributed._collective`) are built by the
tracker itself. Building a part never raises for a missing capability: one
warning, and the part is absent (its keys are left out).
"""
from __future__ import annotations

import warnings
from typing import Any, NamedTuple, Optional

from ..device._hardware import DeviceWindow
from ..distributed._collective import Aggregator, process_group_initialized
from ..peaks._measure import measured_gpu_spec
from ..peaks._resolve import Peak
from ..timing._clock import current_stream_getter, mark_timer, resolve_clock
from ._config import TrackerConfig

__all__ = ["Clock", "clock_of", "communication", "device_window", "measured_peak"]

class Clock(NamedTuple):
    """The clock a tracker times its steps on."""

    kind: str              # "cpu", "cuda" or "hip"
    index: Optional[int]   # the device's index (None: the CPU)
    torch: Any             # the torch module, or None
    stream: int            # the raw stream handle the boundaries go on


def clock_of(config: TrackerConfig) -> Clock:
    """The clock the steps are timed on: the configured one on the
    configured device, the CPU clock when the GPU clock does not work
    (warned by the shared timer)."""
    kind, index, torch = resolve_clock(config.clock, config.device)
    handle = config.stream
    if kind != "cpu":
        # The shared timer's creation makes the device's context current
        # and tells, once per process and device, whether the GPU clock works.
        if mark_timer(kind, index, torch, "Tracker") is None:
            kind = "cpu"  # warned already
        elif handle is None:
            getter = current_stream_getter(torch, index)
            handle = getter(index) if getter is not None else 0
    return Clock(kind, index, torch, handle or 0)


def measured_peak(peak: Peak, clock: Clock) -> Optional[float]:
    """The GEMM peak of the tracker's device for its dtype, measured now
    (:func:`measured_gpu_spec`), FLOP/s: the CUDA / ROCm device torch runs
    on, else the CPU; None when the machine was too busy to measure it (one
    warning said so). One warning when it exceeds the peak in use."""
    on_gpu = clock.kind != "cpu" and clock.torch is not None and clock.index is not None
    device = f"cuda:{clock.index}" if on_gpu else "cpu"
    spec = measured_gpu_spec(peak.dtype, device)
    if not spec.has_peak(peak.dtype):
        return None
    measured = spec.peak_flops_per_sec(peak.dtype)
    if peak.flops_per_sec is not None and measured > peak.flops_per_sec:
        warnings.warn(f"mfu_tracker: Tracker: the measured {peak.dtype} GEMM peak "
                      f"({measured * 1e-12:.4g} TFLOP/s) exceeds the {peak.source} peak "
                      f"({peak.flops_per_sec * 1e-12:.4g} TFLOP/s): boost clocks, or a "
                      f"wrong table row; mfu_vs_measured is reported beside mfu",
                      RuntimeWarning, stacklevel=3)
    return measured


def device_window(config: TrackerConfig, peak: Peak, clock: Clock) -> DeviceWindow:
    """What the tracker reads from its device at each window edge (the
    ``telemetry`` and ``memory`` arguments; :class:`DeviceWindow`)."""
    spec = peak.spec
    return DeviceWindow.open(
        telemetry=config.telemetry, memory=config.memory, kind=clock.kind, index=clock.index,
        torch=clock.torch,
        spec_name=spec.name if spec is not None and spec.source == "datasheet" else None,
        link_bandwidth_gbs=config.link_bandwidth_gbs)


def communication(tracker: Any, config: TrackerConfig, peak: Peak, clock: Clock,
                  agg: Optional[Aggregator]) -> Any:
    """The tracker's communication observation
    (:mod:`mfu_tracker.distributed._comm_observer`), or None: ``comm`` False,
    no process group, or (one warning) the C++ observer unavailable."""
    if config.comm is False or not process_group_initialized():
        return None
    from .._native._observer import observer_module, observer_problem
    from ..distributed._comm_observer import observe

    try:
        module = observer_module()
        if module is None:
            raise RuntimeError(f"the C++ observer mfu_tracker._torch is unavailable: "
                               f"{observer_problem()}")
        import torch.distributed as dist

        spec = peak.spec
        device_name = spec.name if spec is not None and spec.source == "datasheet" else None
        return observe(tracker, module, aggregator=agg, rank=dist.get_rank(),
                       device_name=device_name, on_gpu=clock.kind != "cpu",
                       link_bandwidth_gbs=config.link_bandwidth_gbs)
    except Exception as exc:  # noqa: BLE001 -- a fault here must not stop the run
        warnings.warn(f"mfu_tracker: Tracker: communication is not observed ({exc}); the "
                      f"comm_* keys are left out and exposed communication stays in the "
                      f"phases it interrupts", RuntimeWarning, stacklevel=3)
        return None
