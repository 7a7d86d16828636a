"""One torchrun worker for tests/distributed/test_prometheus_server.py:
``prom_worker.py OUTDIR PORT``.

Every rank runs a small loop on the gloo backend on the CPU (rank 1 takes
twice as long per step: a straggler), marks its phases, and calls
``metrics()`` every 5 steps; rank 0 logs them to ``OUTDIR/metrics.jsonl``
and serves every rank's gauges on PORT (job id ``prom-test``). After the
last ``metrics()`` each rank writes ``OUTDIR/done.rank<r>`` and waits for
``OUTDIR/stop`` (the test's Prometheus scrapes the last values meanwhile),
then closes.
"""
from __future__ import annotations

import os
import sys
import time

import torch.distributed as dist

from mfu_tracker import Tracker

STEPS, LOG_EVERY = 20, 5


def main() -> None:
    outdir, port = sys.argv[1], int(sys.argv[2])
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    tracker = Tracker(2e9, dtype="fp32", peak_tflops=1.0, clock="cpu", window=LOG_EVERY,
                      warmup=1, comm=False, metrics_port=port, job="prom-test",
                      log_path=os.path.join(outdir, "metrics.jsonl"))
    tracker.step()
    for step in range(STEPS):
        with tracker.phase("data"):
            time.sleep(0.002)
        with tracker.phase("forward"):
            time.sleep(0.004 * (1 + rank))
        with tracker.phase("optimizer"):
            time.sleep(0.001)
        tracker.step(num_tokens=256)
        if (step + 1) % LOG_EVERY == 0:
            tracker.metrics()
    with open(os.path.join(outdir, f"done.rank{rank}"), "w") as f:
        f.write("done\n")
    deadline = time.monotonic() + 300
    while not os.path.exists(os.path.join(outdir, "stop")) and time.monotonic() < deadline:
        time.sleep(0.1)
    tracker.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
