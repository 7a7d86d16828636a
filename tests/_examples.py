"""Run an example script as a user would, in a subprocess -- with the measured
peak counting every timed matmul (peaks._measure.CPU_SHARE_MIN = 0), so a
busy test machine does not turn the examples' measured peak into a refusal
(no MFU). The refusal itself is tested in test_measured_peak.py."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

_RUN = ("import runpy, sys\n"
        "import mfu_tracker.peaks._measure as measure\n"
        "measure.CPU_SHARE_MIN = 0.0\n"
        "sys.argv = sys.argv[1:]\n"
        "sys.path.insert(0, sys.argv[0].rsplit('/', 1)[0])\n"
        "runpy.run_path(sys.argv[0], run_name='__main__')\n")


def run_example(script: str, *args: Any, **kwargs: Any) -> subprocess.CompletedProcess:
    """``python examples/<script> *args`` (``kwargs``: subprocess.run's), output as text."""
    kwargs.setdefault("capture_output", True)
    kwargs.setdefault("text", True)
    kwargs.setdefault("timeout", 300)
    return subprocess.run([sys.executable, "-c", _RUN, str(EXAMPLES / script), *map(str, args)],
                          **kwargs)
