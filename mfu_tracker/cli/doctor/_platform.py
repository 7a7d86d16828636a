"""What ``mfu-tracker doctor`` runs on: a torch CUDA / ROCm device, the test suite's fake driver, or the CPU.

A :class:`Platform` gives the checks one interface to the device: its
properties, a GEMM loop of known size, a reference timer independent of the
core's event timer, and one step of "real work" for the tracker checks.

- ``cuda`` / ``hip``: torch sees a GPU. Work is torch matmuls on the device;
  the reference timer is ``torch.cuda.Event``. CUDA properties come from the
  driver API (the library the core loads, through ctypes), ROCm's from torch.
- ``fake``: torch sees no GPU but the driver the core loads is the test
  suite's fake (``tests/c/fake_driver/fake_cuda.c``: it exports
  ``fake_enqueue_ns``), possibly behind the doctor's counting shim. Work is
  *programmed* GPU time -- a GEMM of F FLOPs takes F / (``FAKE_SPEED`` x the
  datasheet peak) on the fake's timeline -- and the reference timer is the sum
  of the programmed kernel times, known independently of any event. The
  fake's host clock is virtual: the platform moves it past the work it
  enqueued, as a host that keeps pace with its GPU.
- ``cpu``: no GPU; the GPU checks are skipped and say so.
"""
from __future__ import annotations

import ctypes
import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

from ..._native import _C
from ...peaks._table import GPUSpec, lookup_gpu_spec

#: The fake GPU's GEMM speed: this fraction of its datasheet row's peak.
FAKE_SPEED = 0.7
#: The fake's speed for a dtype its row lacks (or with no row), FLOP/s.
FAKE_FALLBACK_FLOPS = 100e12

# CUdevice_attribute values (cuda.h).
_ATTR_SMS, _ATTR_CC_MAJOR, _ATTR_CC_MINOR = 16, 75, 76


def driver_library_name(api: str) -> str:
    """The library the core opens for ``api`` ("cuda" / "hip"): the
    environment override when set, else the default name (the core's rule,
    csrc/core/device/gpu_driver.c)."""
    return _C.gpu_driver_library(api)


def loaded_from(name: str) -> Optional[str]:
    """Where the process has the library ``name`` mapped (from /proc/self/maps),
    or None when it is not loaded (or the maps cannot be read)."""
    want = os.path.realpath(name) if os.sep in name else None
    stem = os.path.basename(name).split(".so")[0] + ".so"
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                parts = line.split(None, 5)
                if len(parts) < 6 or not parts[5].startswith("/"):
                    continue
                path = parts[5].strip()
                if want is not None:
                    if os.path.realpath(path) == want:
                        return path
                elif os.path.basename(path).startswith(stem):
                    return path
    except OSError:
        return None
    return None


def _open_library(name: str) -> Optional[ctypes.CDLL]:
    try:
        return ctypes.CDLL(name)
    except OSError:
        return None


@dataclass
class DeviceProperties:
    """What the device says about itself."""

    name: str
    num_sms: int
    memory_bytes: int
    cc_major: int
    cc_minor: int
    source: str  # "driver API" or "torch"


class CudaDriverQueries:
    """Device queries through the CUDA driver API (ctypes), on the library the core loads."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self._lib = lib

    def _call(self, name: str, *args: Any) -> None:
        code = getattr(self._lib, name)(*args)
        if code != 0:
            raise RuntimeError(f"{name} failed with {code}")

    def version(self) -> str:
        value = ctypes.c_int()
        self._call("cuDriverGetVersion", ctypes.byref(value))
        return f"{value.value // 1000}.{value.value % 1000 // 10}"

    def properties(self, ordinal: int) -> DeviceProperties:
        self._call("cuInit", ctypes.c_uint(0))
        device = ctypes.c_int()
        self._call("cuDeviceGet", ctypes.byref(device), ctypes.c_int(ordinal))
        name = ctypes.create_string_buffer(256)
        self._call("cuDeviceGetName", name, ctypes.c_int(256), device)
        values = []
        for attribute in (_ATTR_SMS, _ATTR_CC_MAJOR, _ATTR_CC_MINOR):
            value = ctypes.c_int()
            self._call("cuDeviceGetAttribute", ctypes.byref(value), ctypes.c_int(attribute), device)
            values.append(value.value)
        memory = ctypes.c_size_t()
        self._call("cuDeviceTotalMem_v2", ctypes.byref(memory), device)
        return DeviceProperties(name.value.decode(errors="replace"), values[0], memory.value,
                                values[1], values[2], "driver API")


class ReferenceTimer:
    """A timer independent of the core's events: start(), then stop() -> seconds."""

    def __init__(self, start: Callable[[], None], stop: Callable[[], float]) -> None:
        self.start = start
        self.stop = stop


class ReferenceMarks:
    """Points on a clock independent of the core's events, marked where the
    tracker marks: :meth:`mark` now, :meth:`seconds` after the run (each
    mark's time from the first, seconds; may wait for the device once).
    The CPU's: ``time.perf_counter``."""

    def __init__(self, now: Callable[[], Any] = time.perf_counter,
                 seconds: Optional[Callable[[List[Any]], List[float]]] = None) -> None:
        self._now = now
        self._seconds = seconds or (lambda points: [p - points[0] for p in points])
        self._points: List[Any] = []

    def mark(self) -> None:
        self._points.append(self._now())

    def seconds(self) -> List[float]:
        return self._seconds(self._points) if self._points else []


@dataclass
class StepWork:
    """One training-like step of real work: ``run()`` enqueues it."""

    flops: float
    tokens: int
    dtype: str
    run: Callable[[], None]


class Platform:
    """The device the doctor checks (see the module doc)."""

    kind = "cpu"
    clock = "cpu"
    gpu = False

    def __init__(self, index: int) -> None:
        self.index = index
        self.device: Any = None  # the ``device`` argument for track() / Tracker
        self.torch_device = "cpu"
        self.library: Optional[str] = None
        self.driver: Optional[CudaDriverQueries] = None

    def spec(self) -> Optional[GPUSpec]:
        props = self.properties()
        if props is None:
            return None
        return lookup_gpu_spec(props.name, compute_capability=(props.cc_major, props.cc_minor),
                               num_sms=props.num_sms, total_memory_bytes=props.memory_bytes)

    def properties(self) -> Optional[DeviceProperties]:
        return None

    def stream(self) -> int:
        return 0

    def gemm(self, n: int, dtype: str, iters: int) -> float:
        """Enqueue ``iters`` n x n x n matmuls in ``dtype``; their FLOPs."""
        raise NotImplementedError

    def synchronize(self) -> None:
        pass

    def reference_timer(self) -> ReferenceTimer:
        raise NotImplementedError

    def step_work(self, quick: bool) -> StepWork:
        raise NotImplementedError

    def reference_marks(self) -> ReferenceMarks:
        """Marks on the platform's independent clock (host time on a CPU)."""
        return ReferenceMarks()

    @staticmethod
    def _discard(_: Any) -> None:
        pass


def _square_gemm_flops(n: int) -> float:
    """FLOPs of an n x n by n x n matmul: the core's GEMM rule (``mm``)."""
    return float(_C.mm_flop(n, n, n))


def _torch_dtype(torch: Any, dtype: str) -> Any:
    return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[dtype]


class TorchGpuPlatform(Platform):
    """torch sees a CUDA / ROCm device."""

    gpu = True

    def __init__(self, index: int, torch: Any) -> None:
        super().__init__(index)
        self._torch = torch
        self.kind = self.clock = "hip" if getattr(torch.version, "hip", None) else "cuda"
        self.device = index
        self.torch_device = f"cuda:{index}"
        torch.cuda.set_device(index)
        torch.zeros(1, device=self.torch_device)  # the primary context, current
        self.library = driver_library_name(self.kind)
        lib = _behind_shim(self.library) if self.kind == "cuda" else None
        self.driver = CudaDriverQueries(lib) if lib is not None else None
        self._operands: Dict[Any, Any] = {}

    def properties(self) -> Optional[DeviceProperties]:
        if self.driver is not None:
            try:
                return self.driver.properties(self._driver_ordinal())
            except (AttributeError, RuntimeError):  # a driver without the queries: torch's view
                pass
        p = self._torch.cuda.get_device_properties(self.index)
        return DeviceProperties(p.name, p.multi_processor_count, p.total_memory, p.major, p.minor,
                                "torch")

    def _driver_ordinal(self) -> int:
        # torch's index and the driver's ordinal both count the devices
        # CUDA_VISIBLE_DEVICES leaves, in the same order.
        return self.index

    def torch_name(self) -> str:
        return str(self._torch.cuda.get_device_name(self.index))

    def stream(self) -> int:
        return int(self._torch.cuda.current_stream(self.index).cuda_stream)

    def _pair(self, n: int, dtype: str) -> Any:
        key = (n, dtype)
        if key not in self._operands:
            torch = self._torch
            self._operands.clear()
            a = torch.randn(n, n, device=self.torch_device, dtype=_torch_dtype(torch, dtype))
            b = torch.randn(n, n, device=self.torch_device, dtype=_torch_dtype(torch, dtype))
            self._operands[key] = (a, b, torch.empty_like(a))
        return self._operands[key]

    def gemm(self, n: int, dtype: str, iters: int) -> float:
        a, b, out = self._pair(n, dtype)
        if dtype != "fp32":
            for _ in range(iters):
                self._torch.matmul(a, b, out=out)
            return _square_gemm_flops(n) * iters
        matmul = self._torch.backends.cuda.matmul
        old = matmul.allow_tf32
        matmul.allow_tf32 = False  # fp32 means fp32, not TF32
        try:
            for _ in range(iters):
                self._torch.matmul(a, b, out=out)
        finally:
            matmul.allow_tf32 = old
        return _square_gemm_flops(n) * iters

    def synchronize(self) -> None:
        self._torch.cuda.synchronize(self.index)

    def reference_timer(self) -> ReferenceTimer:
        torch = self._torch
        begin = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)

        def stop() -> float:
            end.record()
            end.synchronize()
            return float(begin.elapsed_time(end)) / 1e3

        return ReferenceTimer(begin.record, stop)

    def reference_marks(self) -> ReferenceMarks:
        """torch.cuda.Event records on the current stream: the GPU timeline,
        read once after the run."""
        torch = self._torch

        def now() -> Any:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            return event

        def seconds(events: List[Any]) -> List[float]:
            events[-1].synchronize()
            return [float(events[0].elapsed_time(e)) / 1e3 for e in events]

        return ReferenceMarks(now, seconds)

    def step_work(self, quick: bool) -> StepWork:
        n = 2048 if quick else 4096
        self._pair(n, "bf16")
        return StepWork(_square_gemm_flops(n) * 4, n, "bf16", lambda: self._discard(self.gemm(n, "bf16", 4)))


class FakeGpuPlatform(Platform):
    """The test suite's fake driver (see the module doc)."""

    kind = "fake"
    clock = "cuda"
    gpu = True

    def __init__(self, index: int, library: str, fake: ctypes.CDLL) -> None:
        super().__init__(index)
        self.library = library
        self.driver = CudaDriverQueries(fake)
        fake.fake_enqueue_ns.argtypes = [ctypes.c_size_t, ctypes.c_uint64]
        fake.fake_advance.argtypes = [ctypes.c_uint64]
        self._fake = fake
        self._programmed_ns = 0
        self._spec: Optional[GPUSpec] = None

    def properties(self) -> Optional[DeviceProperties]:
        assert self.driver is not None
        return self.driver.properties(self.index)

    def spec(self) -> Optional[GPUSpec]:
        if self._spec is None:
            self._spec = super().spec()
        return self._spec

    def speed(self, dtype: str) -> float:
        """The fake GPU's GEMM rate for ``dtype``, FLOP/s."""
        spec = self.spec()
        if spec is not None and spec.has_peak(dtype):
            return FAKE_SPEED * spec.peak_flops_per_sec(dtype)
        return FAKE_FALLBACK_FLOPS

    def enqueue(self, flops: float, dtype: str) -> int:
        """Program ``flops`` of ``dtype`` work on the null stream, move the host
        clock past it; the programmed nanoseconds."""
        ns = max(1, int(round(flops / self.speed(dtype) * 1e9)))
        self._fake.fake_enqueue_ns(0, ns)
        self._fake.fake_advance(ns)
        self._programmed_ns += ns
        return ns

    def gemm(self, n: int, dtype: str, iters: int) -> float:
        flops = _square_gemm_flops(n)
        for _ in range(iters):
            self.enqueue(flops, dtype)
        return flops * iters

    def driver_sync_calls(self) -> int:
        """Synchronizing calls the fake itself counted (fake_sync_calls)."""
        self._fake.fake_sync_calls.restype = ctypes.c_long
        return int(self._fake.fake_sync_calls())

    def reference_timer(self) -> ReferenceTimer:
        begin = [0]

        def start() -> None:
            begin[0] = self._programmed_ns

        def stop() -> float:
            return (self._programmed_ns - begin[0]) / 1e9

        return ReferenceTimer(start, stop)

    def reference_marks(self) -> ReferenceMarks:
        """The programmed kernel time: where the fake's GPU timeline is."""
        return ReferenceMarks(lambda: self._programmed_ns / 1e9)

    def step_work(self, quick: bool) -> StepWork:
        flops = _square_gemm_flops(4096) * 4
        return StepWork(flops, 4096, "bf16", lambda: self._discard(self.enqueue(flops, "bf16")))


def _behind_shim(library: str) -> Optional[ctypes.CDLL]:
    """The driver ``library`` names -- or, when it is the doctor's counting
    shim, the driver the shim forwards to; None when it cannot be opened."""
    lib = _open_library(library)
    if lib is not None and hasattr(lib, "mfu_shim_target"):
        lib.mfu_shim_target.restype = ctypes.c_char_p
        lib = _open_library(lib.mfu_shim_target().decode(errors="replace"))
    return lib


def _fake_driver(library: str) -> Optional[ctypes.CDLL]:
    """The fake driver behind ``library``, or None when it is not the fake."""
    lib = _behind_shim(library)
    return lib if lib is not None and hasattr(lib, "fake_enqueue_ns") else None


def open_platform(index: int = 0) -> Platform:
    """The platform of device ``index``: torch's GPU, else the fake driver the
    core would load, else the CPU."""
    import torch

    try:
        gpu = bool(torch.cuda.is_available())
    except Exception:  # a broken CUDA install: no GPU
        gpu = False
    if gpu:
        if index >= torch.cuda.device_count():
            raise ValueError(f"--device {index}: torch sees {torch.cuda.device_count()} device(s)")
        return TorchGpuPlatform(index, torch)
    library = driver_library_name("cuda")
    fake = _fake_driver(library) if os.environ.get(_C.CUDA_LIBRARY_ENV) else None
    if fake is not None:
        if index != 0:
            raise ValueError(f"--device {index}: the fake driver has one device (0)")
        return FakeGpuPlatform(index, library, fake)
    return Platform(index)


def cpu_seconds() -> float:
    """This thread's CPU time, seconds (the cost measurements)."""
    return time.thread_time()


__all__ = ["Platform", "open_platform", "loaded_from", "driver_library_name", "cpu_seconds",
           "DeviceProperties", "StepWork", "ReferenceTimer", "ReferenceMarks", "FAKE_SPEED"]
