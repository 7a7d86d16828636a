"""Expert parallelism under real ranks: ``torchrun --nproc_per_node=2``, gloo,
CPU (tests/distributed/scripts/moe_worker.py). Rank 0 holds the expert that
3/4 of the tokens go to; its experts sleep per row, so rank 1 waits for it in
the all-to-all that returns the outputs.

The rank named and the token counts are exact; the wait is checked against
the seconds the ranks exchanged (what each one measured), and the injected
sleep gives a lower bound on the busiest rank's seconds."""
from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).resolve().parent / "scripts" / "moe_worker.py"
TORCHRUN = Path(sys.executable).with_name("torchrun")
ROW_SLEEP_S = 0.0005    # moe_worker.ROW_SLEEP_S

pytestmark = pytest.mark.skipif(not TORCHRUN.exists(), reason="torchrun not installed")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    out = tmp_path_factory.mktemp("moe_ep")
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    cmd = [str(TORCHRUN), "--nproc_per_node=2", f"--master_port={_free_port()}", str(WORKER),
           str(out)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, f"torchrun failed ({proc.returncode}):\n{proc.stderr[-4000:]}"
    return [json.loads((out / f"rank{r}.json").read_text())["records"] for r in range(2)]


def test_the_straggler_experts_rank_is_named(ranks):
    # per rank 16 tokens: 12 to expert 0, 2 to expert 1, 1 each to 2 and 3
    for r0, r1 in zip(*ranks):
        assert r0["routed"] == [12 + 12, 2 + 2] and r1["routed"] == [1 + 1, 1 + 1]
        for rec in (r0, r1):
            assert rec["straggler_rank"] == 0
            assert rec["metrics"]["throughput/moe/straggler_rank"] == 0


def test_the_wait_is_the_slowest_ranks_seconds_less_ones_own(ranks):
    for r0, r1 in zip(*ranks):
        layer_s = r0["layer_s"]
        assert r1["layer_s"] == layer_s                  # one exchange, seen alike
        assert layer_s[0][0] >= (24 + 4) * ROW_SLEEP_S   # rank 0's experts sleep per row
        slowest = max(layer_s[0][0], layer_s[1][0])
        assert r0["wait_s"] == slowest - layer_s[0][0]
        assert r1["wait_s"] == slowest - layer_s[1][0]


def test_the_wait_is_a_waterfall_cause_carved_out_of_communication(ranks):
    first, second = ranks[0][0]["metrics"], ranks[0][1]["metrics"]
    # steps 1-3: no sampled step read yet, no wait known, no cause
    assert "throughput/mfu_lost/moe_imbalance" not in first
    assert "throughput/moe_wait_s" not in first
    # steps 4-6 carry the wait read on step 3; across ranks its mean
    waits = [ranks[r][0]["wait_s"] for r in range(2)]
    assert second["throughput/moe_wait_s"] == pytest.approx(sum(waits) / 2)
    lost = {k.rsplit("/", 1)[1]: v for k, v in second.items() if "/mfu_lost/" in k}
    assert lost["moe_imbalance"] > 0 and lost["communication"] >= 0
    assert math.fsum([second["throughput/mfu"], *lost.values()]) == 1.0
    # the job's figures agree; the moe/* keys are each rank's own layers
    job = [{k: v for k, v in ranks[r][1]["metrics"].items() if "/moe/" not in k} for r in range(2)]
    assert job[0] == job[1]
