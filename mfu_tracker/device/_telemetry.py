"""Device telemetry beside the utilization figures: energy, power, clocks.

NVML (``libnvidia-ml.so.1``, or the library ``MFU_TRACKER_NVML_LIBRARY``
names) is loaded by the C core with ``dlopen`` (``csrc/core/device/nvml.h``) --
no link-time dependency, no polling thread. A :class:`Telemetry` reads the
device once when it is created and once per :meth:`Telemetry.figures` call,
i.e. at the window edges (logging time), never per step. The figures over
the interval between two readings:

========================  ==========================================================
figure                    meaning
========================  ==========================================================
``power_w``               mean board power, W: energy counter delta / seconds between
                          the readings (NVML's instantaneous power where the device
                          has no energy counter)
``energy_j_per_token``    ``power_w`` / tokens per second of the window: joules per
                          token at the measured power
``tflops_per_watt``       model TFLOP/s of the window / ``power_w``
``sm_clock_mhz``          SM clock at the reading, MHz
``clock_ratio``           SM clock / maximum SM clock (below 1: the clock is held down)
``throttled``             1 when NVML reports a power or thermal clock-event reason
========================  ==========================================================

On Hopper and later the same handle reads NVML's GPM counters at the same
edges (``csrc/core/device/gpm.h``): what the hardware did over the interval, each a
share of it -- ``hw_tensor_active`` (tensor pipes busy), ``hw_dram_bw_util``
(DRAM bandwidth against its peak: the measured MBU), ``hw_sm_active``,
``hw_sm_occupancy``, ``hw_gpu_busy`` (any kernel running) -- and ``hw_nvlink_gbs`` (NVLink received + sent, GB/s),
with ``hw_window_s``, the interval they cover. An interval under
``_C.GPM_MIN_INTERVAL_S`` (0.1 s) gives none of them (NVML's counters refresh
that often: a shorter one reads noise). Where GPM is not supported (before
Hopper, a MIG instance or vGPU without it, no permission, a driver without
the calls) they are left out, with one warning saying why; never 0.

The device is found by its UUID or PCI bus id (what the CUDA driver reports,
so a reordered ``CUDA_VISIBLE_DEVICES`` maps right). A missing or failing
NVML leaves the figures out, with one warning; nothing here raises into a
training loop.

AMD GPUs: not read (amdsmi is not loaded); the keys are left out, with one
warning (mfu_tracker.device._hardware).
"""
from __future__ import annotations

import warnings
from typing import Any, Dict, Optional

from .._native import _C


def device_id_of(torch: Any, index: Optional[int]) -> Optional[str]:
    """The NVML id of torch's CUDA device ``index``: "GPU-<uuid>" when torch
    reports a UUID, else its PCI bus id "dddddddd:bb:dd.0"; None when torch has
    neither (or no CUDA device, or a ROCm build)."""
    if torch is None or index is None or getattr(torch.version, "hip", None):
        return None
    try:
        props = torch.cuda.get_device_properties(index)
    except Exception:
        return None
    uuid = getattr(props, "uuid", None)
    if uuid is not None and str(uuid):
        text = str(uuid)
        return text if text.startswith(("GPU-", "MIG-")) else f"GPU-{text}"
    bus = getattr(props, "pci_bus_id", None)
    if bus is None:
        return None
    domain = getattr(props, "pci_domain_id", 0) or 0
    dev = getattr(props, "pci_device_id", 0) or 0
    return f"{domain:08x}:{bus:02x}:{dev:02x}.0"


def power_figures(power_w: Optional[float], achieved_flops_per_sec: Optional[float],
                  tokens_per_sec: Optional[float]) -> Dict[str, float]:
    """The figures of work per energy, the one place they are formed (a
    rank's own, and the job's in :func:`mfu_tracker.distributed.combine`):
    ``energy_j_per_token`` = power / tokens per second (J), and
    ``tflops_per_watt`` = model TFLOP/s / power. Missing where unknown."""
    out: Dict[str, float] = {}
    if power_w is None or not power_w >= 0:
        return out
    if power_w > 0 and achieved_flops_per_sec is not None:
        out["tflops_per_watt"] = achieved_flops_per_sec * 1e-12 / power_w
    if tokens_per_sec is not None and tokens_per_sec > 0:
        out["energy_j_per_token"] = power_w / tokens_per_sec
    return out


def _warn(what: str, cause: str) -> None:
    warnings.warn(f"mfu_tracker: {what}: device telemetry is unavailable ({cause}); the "
                  f"power, energy and clock keys are left out", RuntimeWarning, stacklevel=4)


def _warn_gpm(what: str, cause: str) -> None:
    warnings.warn(f"mfu_tracker: {what}: hardware counters: {cause}; the hw/* keys are "
                  f"left out", RuntimeWarning, stacklevel=5)


class _Gpm:
    """NVML's GPM counters on a telemetry handle, read at its edges (module doc)."""

    __slots__ = ("_nvml", "_what", "_warned")

    def __init__(self, nvml: "_C.Nvml", what: str) -> None:
        self._nvml = nvml
        self._what = what
        self._warned: set = set()
        self.sample()  # the first edge: no window yet

    def _once(self, key: str, cause: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            _warn_gpm(self._what, cause)

    def sample(self) -> Dict[str, float]:
        """A window edge: ``hw_*`` figures over the interval since the
        previous one, and ``hw_window_s``; {} when it is under the minimum."""
        figures, seconds, failure = self._nvml.gpm_sample()
        if failure is not None:
            self._once(f"failure:{failure}", f"NVML: {failure}")  # each cause once
        if seconds is not None and seconds < _C.GPM_MIN_INTERVAL_S:
            self._once("short", f"a window of {seconds * 1e3:.0f} ms between two readings is "
                                f"under the {_C.GPM_MIN_INTERVAL_S * 1e3:.0f} ms GPM needs (log "
                                f"less often to get them)")
        out = {f"hw_{name}": value for name, value in figures.items()}
        if out:
            out["hw_window_s"] = seconds
        return out


class Telemetry:
    """NVML readings of one device at window edges (see the module doc).

    Create it with :meth:`open`, which never raises: None (after one warning)
    when NVML or the device cannot be had.
    """

    __slots__ = ("_nvml", "_what", "_last", "_warned", "_ratio", "_reads", "_gpm")

    def __init__(self, nvml: "_C.Nvml", what: str, counters: bool = True) -> None:
        self._nvml = nvml
        self._what = what
        self._warned = False
        self._reads = 0
        self._last = self._read()
        self._gpm: Optional[_Gpm] = None
        if counters:
            unavailable = nvml.gpm_open()
            if unavailable is None:
                self._gpm = _Gpm(nvml, what)
            else:
                _warn_gpm(what, f"GPM is unavailable ({unavailable})")

    @classmethod
    def open(cls, device_id: str, what: str, library: Optional[str] = None,
             counters: bool = True) -> Optional["Telemetry"]:
        """Telemetry of the NVML device ``device_id`` (a UUID or PCI bus id),
        with its GPM counters when ``counters``; None, after one warning naming
        ``what`` and the cause, when NVML or the device is unavailable."""
        try:
            nvml = _C.Nvml(device_id, library)
        except (RuntimeError, ValueError, TypeError) as exc:
            _warn(what, str(exc))
            return None
        return cls(nvml, what, counters)

    @property
    def counters(self) -> bool:
        """Whether the GPM counters are read (supported and started)."""
        return self._gpm is not None

    @property
    def reads(self) -> int:
        """Readings taken so far (one at creation, one per :meth:`figures`)."""
        return self._reads

    def _read(self) -> Dict[str, Any]:
        sample, failure = self._nvml.read()
        self._reads += 1
        if failure is not None and not self._warned:
            self._warned = True
            _warn(self._what, f"NVML: {failure}")
        return sample

    def figures(self, achieved_flops_per_sec: Optional[float],
                tokens_per_sec: Optional[float]) -> Dict[str, float]:
        """Read the device and give the figures over the interval since the
        previous reading (missing where unknown): :meth:`reading`'s, and
        :func:`power_figures`' ``energy_j_per_token`` and ``tflops_per_watt``
        for the window's ``achieved_flops_per_sec`` (FLOP/s) and
        ``tokens_per_sec``."""
        out = self.reading()
        out.update(power_figures(out.get("power_w"), achieved_flops_per_sec, tokens_per_sec))
        return out

    def reading(self, counters: bool = True) -> Dict[str, float]:
        """Read the device: ``power_w`` (mean over the interval since the
        previous reading, from the energy counter, else the instant power),
        ``sm_clock_mhz``, ``clock_ratio``, ``throttled``, and, with
        ``counters``, the GPM counters' ``hw_*`` over the interval since their
        previous sample (module doc); missing where unknown."""
        now = self._read()
        last, self._last = self._last, now
        out: Dict[str, float] = {}
        power = None
        seconds = now["time_s"] - last["time_s"]
        if now["energy_j"] is not None and last["energy_j"] is not None and seconds > 0:
            power = (now["energy_j"] - last["energy_j"]) / seconds
        elif now["power_w"] is not None:
            power = now["power_w"]
        if power is not None and power >= 0:
            out["power_w"] = power
        clock, clock_max = now["sm_clock_mhz"], now["sm_clock_max_mhz"]
        if clock is not None:
            out["sm_clock_mhz"] = clock
            if clock_max:
                out["clock_ratio"] = clock / clock_max
        if now["throttled"] is not None:
            out["throttled"] = float(now["throttled"])
        if counters and self._gpm is not None:
            out.update(self._gpm.sample())
        return out
