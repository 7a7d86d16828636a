"""What a tracker reads from the device at its window edges, in one component.

:class:`DeviceWindow` is the one thing the :class:`~mfu_tracker.Tracker`
calls at a window edge (``metrics()``): NVML telemetry with the GPM counters
(:mod:`._telemetry`), the caching allocator's memory headroom
(:mod:`._memory`) and the self-check of MFU against the tensor pipes
(:mod:`._consistency`), plus ``comm_link_measured_util``: ``hw_nvlink_gbs``
over what the device's NVLink carries in both directions (the link table's
row for the device, or the user's ``link_bandwidth_gbs``), a share of the
counters' interval -- measured, beside the communication observer's
computed ``net_utilization``.

All of it happens at logging time: no thread, nothing per step, no
synchronizing call. The keys and their meaning: docs/hardware-counters.md.
"""
from __future__ import annotations

import sys
import warnings
from typing import Any, Dict, Mapping, Optional

from .._native import _C
from ._consistency import SelfCheck
from ._memory import AllocatorMemory
from ._telemetry import Telemetry, device_id_of


def check_memory(memory: Any) -> None:
    """The ``memory`` argument: None, a bool or "window"; errors name it."""
    if memory is None or isinstance(memory, bool) or memory == "window":
        return
    if isinstance(memory, str):
        raise ValueError(f"memory must be None, True, False or 'window' (per-window peaks), "
                         f"got {memory!r}")
    raise TypeError(f"memory must be None, a bool or 'window', got {type(memory).__name__}")


def _telemetry(telemetry: Any, kind: str, index: Optional[int], torch: Any,
               what: str) -> Optional[Telemetry]:
    """NVML telemetry of the tracker's device, or None (the ``telemetry``
    argument: False off; a str an NVML device id; None / True the clock's
    CUDA device, True warning when it cannot be identified)."""
    if telemetry is False:
        return None
    if isinstance(telemetry, str):
        return Telemetry.open(telemetry, what)
    if kind == "hip":
        warnings.warn(f"mfu_tracker: {what}: AMD GPUs: device telemetry and the hardware "
                      f"counters are not read (amdsmi is not loaded); the power, clock and "
                      f"hw/* keys are left out", RuntimeWarning, stacklevel=4)
        return None
    device_id = device_id_of(torch, index) if kind == "cuda" else None
    if device_id is None:
        if telemetry is True:
            warnings.warn(f"mfu_tracker: {what}: telemetry=True but the tracker's device has "
                          "no NVML id (not a CUDA device, or torch reports no UUID or PCI bus "
                          "id); the power, energy, clock and hw/* keys are left out",
                          RuntimeWarning, stacklevel=4)
        return None
    return Telemetry.open(device_id, what)


def _memory(memory: Any, kind: str, index: Optional[int], torch: Any,
            what: str) -> Optional[AllocatorMemory]:
    """The allocator's statistics of the tracker's device, or None (the
    ``memory`` argument: False off; None the clock's device when torch has
    it; True / "window" asked for, warning when there is no GPU clock)."""
    if memory is False or (memory is None and torch is None):
        return None
    if kind == "cpu":
        if memory is not None:
            warnings.warn(f"mfu_tracker: {what}: memory={memory!r} but the tracker runs on "
                          f"the CPU clock: the memory/* keys are left out", RuntimeWarning,
                          stacklevel=4)
        return None
    torch = torch if torch is not None else sys.modules.get("torch")
    if torch is None:
        return None
    return AllocatorMemory(torch, index if index is not None else 0, per_window=memory == "window")


def _nvlink_bytes_per_sec(spec_name: Optional[str], link_bandwidth_gbs: Optional[float]
                          ) -> Optional[float]:
    """The device's NVLink peak per direction, bytes/s: the user's link
    bandwidth, else the link table's NVLink row of the device; None."""
    if link_bandwidth_gbs is not None:
        return link_bandwidth_gbs * 1e9
    row = _C.link_intra(spec_name) if spec_name else None
    return row["bytes_per_sec"] if row and row.get("kind") == "nvlink" else None


class DeviceWindow:
    """The device's figures over a tracker's window (module doc). Create it
    with :meth:`open`, which warns (once per cause) and never raises after
    the arguments are checked."""

    __slots__ = ("telemetry", "memory", "_check", "_nvlink_bytes_per_sec")

    def __init__(self, telemetry: Optional[Telemetry], memory: Optional[AllocatorMemory],
                 what: str, nvlink_bytes_per_sec: Optional[float] = None) -> None:
        self.telemetry = telemetry
        self.memory = memory
        self._check = SelfCheck(what)
        self._nvlink_bytes_per_sec = nvlink_bytes_per_sec

    @classmethod
    def open(cls, *, telemetry: Any, memory: Any, kind: str, index: Optional[int], torch: Any,
             spec_name: Optional[str] = None, link_bandwidth_gbs: Optional[float] = None,
             what: str = "Tracker") -> "DeviceWindow":
        """The component of a tracker on clock ``kind`` (device ``index``,
        ``torch`` when it has the device) for its ``telemetry`` and ``memory``
        arguments (checked already)."""
        return cls(_telemetry(telemetry, kind, index, torch, what),
                   _memory(memory, kind, index, torch, what), what,
                   _nvlink_bytes_per_sec(spec_name, link_bandwidth_gbs))

    def figures(self, window: Mapping[str, Any]) -> Dict[str, Any]:
        """Read the device now: the figures over the interval since the
        previous edge, for a window's figures ``window`` (``mfu``, ``hfu``,
        ``achieved_flops_per_sec``, ``tokens_per_sec``, ``dtype``, ...):
        telemetry, ``hw_*``, ``memory_*``, the self-check's
        ``hw_mfu_consistency`` and ``comm_link_measured_util``."""
        out: Dict[str, Any] = {}
        if self.telemetry is not None:
            out.update(self.telemetry.figures(window.get("achieved_flops_per_sec"),
                                              window.get("tokens_per_sec")))
        if self.memory is not None:
            out.update(self.memory.figures())
        nvlink = out.get("hw_nvlink_gbs")
        if nvlink is not None and self._nvlink_bytes_per_sec:
            out["comm_link_measured_util"] = nvlink * 1e9 / (2.0 * self._nvlink_bytes_per_sec)
        if "hw_tensor_active" in out:
            out.update(self._check.figures({**window, **out}))
        return out

    def reading(self) -> Dict[str, Any]:
        """The telemetry's reading now ({} without it): a distributed row's.
        The GPM counters are not sampled: the aggregated figures leave the
        device-local hw/* and memory/* keys out, so nothing is read for them."""
        return self.telemetry.reading(counters=False) if self.telemetry is not None else {}
