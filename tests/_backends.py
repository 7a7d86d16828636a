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
