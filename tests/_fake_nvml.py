"""The fake NVML for the Python tests (tests/c/fake_nvml/fake_nvml.c): built
once into build/pytest/ like the fake driver (conftest.py), and its knobs
through ctypes -- the same library instance the core loads when
MFU_TRACKER_NVML_LIBRARY names it."""
from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "tests" / "c" / "fake_nvml" / "fake_nvml.c"
LIBRARY = ROOT / "build" / "pytest" / "libfake_nvml.so"
UUID = "GPU-00000000-fa4e-0000-0000-000000000001"


def build() -> str:
    """The fake's path, (re)built when its source is newer."""
    if not (LIBRARY.exists() and LIBRARY.stat().st_mtime >= SOURCE.stat().st_mtime):
        LIBRARY.parent.mkdir(parents=True, exist_ok=True)
        partial = LIBRARY.with_suffix(f".so.{os.getpid()}")
        cc = os.environ.get("CC") or shutil.which("cc") or "gcc"
        subprocess.run([cc, "-std=c11", "-O1", "-fPIC", "-shared", "-o", str(partial), str(SOURCE)],
                       check=True)
        partial.replace(LIBRARY)  # atomic: parallel sessions never see half a file
    return str(LIBRARY)


class FakeNvml:
    def __init__(self, path: str) -> None:
        lib = ctypes.CDLL(path)
        lib.fake_nvml_set.argtypes = [ctypes.c_char_p, ctypes.c_ulonglong]
        lib.fake_nvml_call_count.argtypes = [ctypes.c_char_p]
        lib.fake_nvml_call_count.restype = ctypes.c_long
        lib.fake_nvml_fail_next.argtypes = [ctypes.c_char_p, ctypes.c_int]
        self.lib = lib
        self.path = path

    def set(self, knob: str, value: int) -> None:
        assert self.lib.fake_nvml_set(knob.encode(), value) == 0, knob

    def calls(self, name: str) -> int:
        return self.lib.fake_nvml_call_count(name.encode())

    def fail_next(self, name: str, code: int) -> None:
        assert self.lib.fake_nvml_fail_next(name.encode(), code) == 0, name

    def initialized(self) -> int:
        return self.lib.fake_nvml_initialized()
