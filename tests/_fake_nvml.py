"""The fake NVML for the Python tests (tests/c/fake_nvml/fake_nvml.c): built
once into build/pytest/ like the fake driver (conftest.py), compiled against
the real nvml.h (tests/c/fake_nvml/nvml_include.py), and its knobs through
ctypes -- the same library instance the core loads when
MFU_TRACKER_NVML_LIBRARY names it."""
from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "tests" / "c" / "fake_nvml" / "fake_nvml.c"
LIBRARY = ROOT / "build" / "pytest" / "libfake_nvml.so"
UUID = "GPU-00000000-fa4e-0000-0000-000000000001"

# nvmlGpmMetricId_t values (nvml.h) and nvmlReturn_t codes the tests script
GPM_GRAPHICS_UTIL, GPM_SM_UTIL, GPM_SM_OCCUPANCY, GPM_ANY_TENSOR_UTIL, GPM_DRAM_BW_UTIL = 1, 2, 3, 5, 10
GPM_NVLINK_RX, GPM_NVLINK_TX = 60, 61
NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_NO_PERMISSION, NVML_ERROR_UNKNOWN = 3, 4, 999


def _include_dir() -> str:
    sys.path.insert(0, str(ROOT / "tests" / "c" / "fake_nvml"))
    try:
        from nvml_include import DISTRIBUTION, include_dir
    finally:
        sys.path.pop(0)
    found = include_dir()
    if found is None:
        raise RuntimeError(f"the fake NVML is compiled against the real nvml.h of the "
                           f"{DISTRIBUTION} package (a test extra): pip install {DISTRIBUTION}")
    return str(found)


def build() -> str:
    """The fake's path, (re)built when its source is newer."""
    if not (LIBRARY.exists() and LIBRARY.stat().st_mtime >= SOURCE.stat().st_mtime):
        LIBRARY.parent.mkdir(parents=True, exist_ok=True)
        partial = LIBRARY.with_suffix(f".so.{os.getpid()}")
        cc = os.environ.get("CC") or shutil.which("cc") or "gcc"
        subprocess.run([cc, "-std=c11", "-O1", "-fPIC", "-shared", "-I", _include_dir(),
                        "-o", str(partial), str(SOURCE)], check=True)
        partial.replace(LIBRARY)  # atomic: parallel sessions never see half a file
    return str(LIBRARY)


class FakeNvml:
    def __init__(self, path: str) -> None:
        lib = ctypes.CDLL(path)
        lib.fake_nvml_set.argtypes = [ctypes.c_char_p, ctypes.c_ulonglong]
        lib.fake_nvml_call_count.argtypes = [ctypes.c_char_p]
        lib.fake_nvml_call_count.restype = ctypes.c_long
        lib.fake_nvml_fail_next.argtypes = [ctypes.c_char_p, ctypes.c_int]
        lib.fake_nvml_set_gpm.argtypes = [ctypes.c_uint, ctypes.c_double, ctypes.c_int]
        lib.fake_nvml_live_samples.restype = ctypes.c_long
        lib.fake_nvml_virtual_clock.argtypes = [ctypes.c_int]
        lib.fake_nvml_advance_ns.argtypes = [ctypes.c_uint64]
        self.lib = lib
        self.path = path

    @contextlib.contextmanager
    def virtual_clock(self) -> Iterator["FakeNvml"]:
        """The fake's virtual clock as the core's clock source (timing.h
        ``mfu_clock_set_source``, reached through ctypes on the loaded ``_C``):
        inside the block the core and the fake read one time that only
        :meth:`advance` moves, so a window is exactly the time advanced
        whatever the machine's load; CLOCK_MONOTONIC again after it."""
        from mfu_tracker import _C

        core = ctypes.CDLL(_C.__file__)     # the loaded library: the same clock source
        core.mfu_clock_set_source.argtypes = [ctypes.c_void_p]
        self.lib.fake_nvml_virtual_clock(1)
        core.mfu_clock_set_source(ctypes.cast(self.lib.fake_nvml_clock_ns, ctypes.c_void_p))
        try:
            yield self
        finally:
            core.mfu_clock_set_source(None)
            self.lib.fake_nvml_virtual_clock(0)

    def advance(self, seconds: float) -> None:
        """Time passes on the virtual clock (:meth:`virtual_clock`)."""
        self.lib.fake_nvml_advance_ns(round(seconds * 1e9))

    def set(self, knob: str, value: int) -> None:
        assert self.lib.fake_nvml_set(knob.encode(), value) == 0, knob

    def set_gpm(self, metric_id: int, value: float, code: int = 0) -> None:
        """Script a GPM metric: nvmlGpmMetricsGet gives ``value`` (NVML's unit:
        percent, MiB/s) with return code ``code``."""
        assert self.lib.fake_nvml_set_gpm(metric_id, value, code) == 0, metric_id

    def script_gpm(self, tensor_pct: float, dram_pct: float, sm_pct: float = 90.0,
                   occupancy_pct: float = 40.0, rx_mib_s: float = 0.0, tx_mib_s: float = 0.0,
                   gpu_pct: float = 97.0) -> None:
        """Script every metric the core reads, as NVML reports them."""
        for metric, value in ((GPM_ANY_TENSOR_UTIL, tensor_pct), (GPM_DRAM_BW_UTIL, dram_pct),
                              (GPM_SM_UTIL, sm_pct), (GPM_SM_OCCUPANCY, occupancy_pct),
                              (GPM_NVLINK_RX, rx_mib_s), (GPM_NVLINK_TX, tx_mib_s),
                              (GPM_GRAPHICS_UTIL, gpu_pct)):
            self.set_gpm(metric, value)

    def live_samples(self) -> int:
        return self.lib.fake_nvml_live_samples()

    def calls(self, name: str) -> int:
        return self.lib.fake_nvml_call_count(name.encode())

    def fail_next(self, name: str, code: int) -> None:
        assert self.lib.fake_nvml_fail_next(name.encode(), code) == 0, name

    def initialized(self) -> int:
        return self.lib.fake_nvml_initialized()


def fake_nvml(monkeypatch) -> FakeNvml:
    """The fake built, named in MFU_TRACKER_NVML_LIBRARY (``monkeypatch``
    restores it) and reset: the body of the tests' ``nvml`` fixtures.

    Collects garbage first: a framework's trainer (HF, Lightning) sits in a
    reference cycle with its callback and so with the callback's tracker, which
    keeps NVML initialised until the cycle is collected; a test counting
    ``initialized()`` starts from trackers that are really gone."""
    gc.collect()
    path = build()
    monkeypatch.setenv("MFU_TRACKER_NVML_LIBRARY", path)
    fake = FakeNvml(path)
    fake.lib.fake_nvml_reset()
    return fake
