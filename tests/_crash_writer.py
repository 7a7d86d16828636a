"""Writers killed with SIGKILL at random moments (tests/test_crash_logs.py).

    python tests/_crash_writer.py DIR LOGS RUNS SEED

One process imports the package once, then for each of LOGS logs forks RUNS
writers in turn, each a run of one job (``job=``) resuming where the log's
last metrics line left off (``start_step``), and kills each with SIGKILL
after a random delay (uniform 0..0.15 s, seeded): before its run record,
between records or inside a write. Each writer steps as fast as it can, logs
``metrics()`` at every step (lines of ~800 bytes) and marks a ``checkpoint``
phase every 25 steps. Prints one JSON line: the runs forked per log.
"""
from __future__ import annotations

import json
import os
import random
import signal
import sys
import time

import torch  # noqa: F401 -- imported before fork, never used by the writers

from mfu_tracker import Tracker


def last_step(path: str) -> int:
    """The step of the log's last readable metrics line (0: none)."""
    step = 0
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if isinstance(record, dict) and "record" not in record:
                    step = int(record.get("step", step))
    except FileNotFoundError:
        pass
    return step


def writer(path: str, job: str, start: int) -> None:
    t = Tracker(1e6, dtype="fp32", peak_tflops=1.0, clock="cpu", window=4, warmup=0,
                log_path=path, start_step=start, job=job)
    t.step()
    step = start
    while True:
        with t.phase("data"):
            pass
        sum(range(2000))                     # the step's work
        t.step(num_tokens=8)
        step += 1
        t.metrics()
        if step % 25 == 0:
            with t.phase("checkpoint"):
                sum(range(20000))


def main() -> None:
    directory, logs, runs, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    rng = random.Random(seed)
    forked = {}
    for i in range(logs):
        path = os.path.join(directory, f"log{i}.jsonl")
        for _ in range(runs):
            start = last_step(path)
            pid = os.fork()
            if pid == 0:
                try:
                    writer(path, f"job{i}", start)
                finally:
                    os._exit(1)
            time.sleep(rng.uniform(0.0, 0.15))
            os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, status
        forked[path] = runs
    print(json.dumps(forked))


if __name__ == "__main__":
    main()
