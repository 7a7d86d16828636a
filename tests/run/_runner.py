"""``mfu-tracker run`` as a person runs it: a subprocess of the command line,
and the logs read back with ``json`` by hand (never through the package)."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = Path(__file__).resolve().parent / "scripts"
EXAMPLES = ROOT / "examples"
TIMEOUT_S = 600      # a hang, not a slow machine, gets near this


def env(**extra: str) -> Dict[str, str]:
    """The environment of a launched command: one torch thread (the machine
    is shared), this checkout importable."""
    out = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT), **extra}
    out.pop("MFU_TRACKER_RUN", None)
    return out


def _completed(argv: List[str], environ: Dict[str, str],
               cwd: Optional[Path]) -> subprocess.CompletedProcess:
    """``argv`` run to its end, output captured; on a hang, its whole session
    (torchrun's workers too) is killed before the timeout is raised."""
    proc = subprocess.Popen(argv, env=environ, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def mfu_run(*words: str, cwd: Optional[Path] = None, extra_env: Optional[Dict[str, str]] = None,
            ) -> subprocess.CompletedProcess:
    """``python -m mfu_tracker run WORDS...``, its output captured."""
    return _completed([sys.executable, "-m", "mfu_tracker", "run", *words],
                      env(**(extra_env or {})), cwd)


def python(script: Path, *args: str, cwd: Optional[Path] = None) -> subprocess.CompletedProcess:
    """``python SCRIPT ARGS...`` with no agent (the instrumented-by-hand twins)."""
    return _completed([sys.executable, str(script), *args], env(), cwd)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def lines(path: Path) -> List[dict]:
    """Every record of a log, read with ``json``."""
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def metrics(path: Path) -> List[dict]:
    """The metrics lines of a log (not the run records)."""
    return [line for line in lines(path) if "record" not in line]


def flops_per_step(path: Path) -> List[float]:
    """Each metrics line's interval: its model FLOPs over its steps."""
    return [m["ledger"]["model_flops"] / m["ledger"]["flops_steps"] for m in metrics(path)]


def tokens_per_step(path: Path) -> List[float]:
    """Each metrics line's tokens/s x step time: its window's tokens per step."""
    return [m["throughput/tokens_per_sec"] * m["throughput/step_time_s"] for m in metrics(path)]
