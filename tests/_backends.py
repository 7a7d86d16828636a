"""Run a counting script on either counter backend: the C++ observer, or the
TorchDispatchMode fallback (``MFU_TRACKER_DISABLE_TORCH_EXT=1``), in a fresh
process (the backend is chosen once per process)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any


def run_script(code: str, disable_ext: bool) -> Any:
    """The JSON the script prints on its last line (RuntimeWarnings off)."""
    env = dict(os.environ)
    env.pop("MFU_TRACKER_DISABLE_TORCH_EXT", None)
    if disable_ext:
        env["MFU_TRACKER_DISABLE_TORCH_EXT"] = "1"
    proc = subprocess.run([sys.executable, "-W", "ignore::RuntimeWarning", "-c", code],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def active_counter_slots() -> int:
    """How many FlopCounters are active in this process now, from the
    backend's own slots (each active counter holds one of at most
    ``LIMIT_COUNTERS_MAX``): the C++ observer's ``read(slot)`` refuses a slot
    no counter holds; the fallback keeps one session per active counter.
    A counter left active by a failed path shows here even when no Python
    object refers to it any more."""
    from mfu_tracker._native import _C
    from mfu_tracker.flops.counter._backend import current_backend

    backend = current_backend()
    if backend is None:
        return 0
    module = getattr(backend, "module", None)
    if module is None:
        return len(backend._sessions)
    held = 0
    for slot in range(_C.LIMIT_COUNTERS_MAX):
        try:
            module.read(slot)
        except (RuntimeError, ValueError):
            continue
        held += 1
    return held
