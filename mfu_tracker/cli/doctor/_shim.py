"""The zero-synchronization check of ``mfu-tracker doctor``: a counting driver shim.

``mfu_tracker/cli/doctor/cuda_sync_counter.c`` (shipped as package data) is a
pass-through CUDA driver: it counts every call the core makes and forwards it
to the real driver. :func:`build_shim` compiles it with the system C compiler
at first use into a per-user cache (``$XDG_CACHE_HOME/mfu_tracker`` or
``~/.cache/mfu_tracker``; a file name keyed by the source's hash, replaced
atomically). :func:`run_sync_check` runs :mod:`._sync_child` in a child
process whose core loads the shim through ``MFU_TRACKER_CUDA_LIBRARY`` (the
core loads its driver once per process, so the check cannot run in the
doctor's own process); the child takes ``steps`` :class:`~mfu_tracker.Tracker`
steps of real work, reading ``metrics()`` every step, and reports the shim's
counts as one JSON line before it closes the tracker (``close()`` waits, by
design).
"""
from __future__ import annotations

import ctypes
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, Optional

from ..._native import _C

SHIM_SOURCE = Path(__file__).resolve().parent / "cuda_sync_counter.c"
#: The environment variable naming the library the shim forwards to.
SHIM_TARGET_ENV = "MFU_TRACKER_SHIM_TARGET"
#: The core's driver override (csrc/core/device/gpu_driver.h, MFU_CUDA_LIBRARY_ENV).
CUDA_LIBRARY_ENV = _C.CUDA_LIBRARY_ENV
#: Synchronizing calls the shim counts (see its header).
SYNC_CALLS = ("cuEventSynchronize", "cuStreamSynchronize", "cuCtxSynchronize")
#: Calls reported beside them.
OTHER_CALLS = ("cuEventRecord", "cuEventQuery", "cuEventElapsedTime", "cuEventElapsedTime_v2",
               "cuEventCreate", "cuEventDestroy", "cuEventDestroy_v2")


def cache_dir() -> Path:
    """The per-user cache the shim is built into."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mfu_tracker"


def build_shim(timeout_s: float = 120.0) -> Path:
    """The built shim library, compiled now unless the cache has this source's build.

    Raises RuntimeError (with the compiler's message) when it cannot be built.
    """
    source = SHIM_SOURCE.read_bytes()
    digest = hashlib.sha256(source).hexdigest()[:16]
    target = cache_dir() / f"cuda_sync_counter-{digest}.so"
    if target.exists():
        return target
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        raise RuntimeError("no C compiler (cc, gcc, clang or $CC) to build the sync-counting shim")
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, partial = tempfile.mkstemp(prefix=target.name, suffix=".part", dir=target.parent)
    os.close(fd)
    try:
        done = subprocess.run([cc, "-std=c11", "-O2", "-fPIC", "-shared", "-o", partial,
                               str(SHIM_SOURCE), "-ldl", "-lpthread"],
                              capture_output=True, text=True, timeout=timeout_s)
        if done.returncode != 0:
            raise RuntimeError(f"{cc} could not build {SHIM_SOURCE.name}: "
                               f"{done.stderr.strip()[-400:]}")
        os.replace(partial, target)  # atomic: a concurrent build never sees half a file
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
    return target


def run_sync_check(steps: int, device: int, env: Optional[Dict[str, str]] = None,
                   timeout_s: float = 240.0) -> Dict[str, Any]:
    """Run the child (:func:`main`) through the shim; its JSON report.

    The shim forwards to what the core would have loaded: the
    ``MFU_TRACKER_CUDA_LIBRARY`` override when set, else its default.
    Raises RuntimeError when the shim cannot be built or the child fails.
    """
    shim = build_shim()
    child_env = dict(os.environ if env is None else env)
    target = child_env.get(CUDA_LIBRARY_ENV)
    if target:
        child_env[SHIM_TARGET_ENV] = target
    else:
        child_env.pop(SHIM_TARGET_ENV, None)  # the shim's default: libcuda.so.1
    child_env[CUDA_LIBRARY_ENV] = str(shim)
    package_root = str(Path(__file__).resolve().parents[3])  # holds mfu_tracker/cli/doctor/_shim.py
    child_env["PYTHONPATH"] = os.pathsep.join(
        [package_root] + [p for p in child_env.get("PYTHONPATH", "").split(os.pathsep) if p])
    done = subprocess.run([sys.executable, "-m", "mfu_tracker.cli.doctor._sync_child", "--steps", str(steps),
                           "--device", str(device)],
                          capture_output=True, text=True, timeout=timeout_s, env=child_env)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"the sync-check child exited {done.returncode}: "
                           f"{(done.stderr or done.stdout).strip()[-600:]}")
    report: Dict[str, Any] = json.loads(lines[-1])
    report["shim"] = str(shim)
    return report


def shim_counts(library: str) -> Dict[str, Any]:
    """The shim's counters, read through ctypes (the same handle the core has)."""
    lib = ctypes.CDLL(library)
    if not hasattr(lib, "mfu_shim_sync_calls"):
        raise RuntimeError(f"{CUDA_LIBRARY_ENV}={library} is not the counting shim")
    lib.mfu_shim_calls.argtypes = [ctypes.c_char_p]
    lib.mfu_shim_calls.restype = ctypes.c_long
    lib.mfu_shim_sync_calls.restype = ctypes.c_long
    lib.mfu_shim_target.restype = ctypes.c_char_p
    lib.mfu_shim_error.restype = ctypes.c_char_p
    calls = {name: int(lib.mfu_shim_calls(name.encode())) for name in SYNC_CALLS + OTHER_CALLS}
    return {"sync_calls": int(lib.mfu_shim_sync_calls()), "calls": calls,
            "target": lib.mfu_shim_target().decode(errors="replace"),
            "target_error": lib.mfu_shim_error().decode(errors="replace")}
