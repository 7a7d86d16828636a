"""The waterfall under real ranks: ``torchrun --nproc_per_node=2``, gloo, CPU.

Injected delays give lower bounds. Which rank or loss the job's figures name
is checked against the rows the ranks contributed (each rank records its own:
what combine() received), never against how the machine scheduled the ranks:
a loaded machine may make the rank without the injected delay the slower
one, and the figures must then say so."""
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
WORKER = Path(__file__).resolve().parent / "scripts" / "waterfall_worker.py"
TORCHRUN = Path(sys.executable).with_name("torchrun")
LAUNCH_TIMEOUT_S = 240
DELAY_S = 0.03      # waterfall_worker.DELAY_S
STRAGGLE_S = 0.03   # waterfall_worker.STRAGGLE_S

pytestmark = pytest.mark.skipif(not TORCHRUN.exists(), reason="torchrun not installed")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(case: str, tmp_path: Path) -> list[dict]:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    cmd = [str(TORCHRUN), "--nproc_per_node=2", f"--master_port={_free_port()}", str(WORKER),
           case, str(tmp_path)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=LAUNCH_TIMEOUT_S)
    assert proc.returncode == 0, f"torchrun failed ({proc.returncode}):\n{proc.stderr[-4000:]}"
    return [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]


def _lost(m: dict) -> dict:
    return {k.rsplit("/", 1)[1]: v for k, v in m.items() if "/mfu_lost/" in k}


def test_injected_communication_delay_is_exposed_communication(tmp_path):
    ranks = launch("comm_delay", tmp_path)
    for out in ranks:
        assert out["warnings"] == []
        for rec in out["records"]:
            m = rec["metrics"]
            # every rank waits DELAY_S after the last bucket, every step: the
            # delay starts once the all-reduce completes, which on the rank that
            # hands over last can precede the hook's mark by the hook's return
            # (microseconds; a preempted thread: more) -- hence 0.9 x
            bound = 0.9 * DELAY_S
            assert rec["phase_s"]["communication"] >= bound
            assert m["throughput/phase_s/communication"] >= bound
            lost = _lost(m)
            assert lost["communication"] >= bound / m["throughput/step_time_s"]
            assert math.fsum([m["throughput/mfu"], *lost.values()]) == 1.0
    assert ranks[0]["records"][-1]["metrics"] == ranks[1]["records"][-1]["metrics"]


def _busy(row: dict) -> float:
    """A row's busy seconds per step: its period less its exposed communication."""
    return row["step_time_s"] - (row["phase_communication_s"] or 0.0) \
        - (row["phase_pipeline_bubble_s"] or 0.0)


def _aggregations(ranks: list) -> list:
    """Per aggregation: (the logged metrics, the two ranks' rows)."""
    assert len(ranks[0]["rows"]) == len(ranks[1]["rows"]) == len(ranks[0]["records"])
    return [(rec["metrics"], (r0, r1)) for rec, r0, r1 in
            zip(ranks[0]["records"], ranks[0]["rows"], ranks[1]["rows"])]


def test_compute_straggler_is_named_though_periods_are_equal(tmp_path):
    ranks = launch("straggler", tmp_path)
    for out in ranks:
        assert out["warnings"] == []
    for m, rows in _aggregations(ranks):
        assert [row["rank"] for row in rows] == [0, 1]
        busy = [_busy(row) for row in rows]
        # the straggler: the rank with the most busy seconds per step, as the ranks
        # measured them (rank 1, which sleeps STRAGGLE_S in every forward, unless the
        # machine held rank 0 up for longer); straggler_lost: the other's wait for
        # it over the job's step time (the slower mean period)
        straggler = 1 if busy[1] > busy[0] else 0
        assert m["throughput/straggler_rank"] == straggler
        job_step = max(row["step_time_s"] for row in rows)
        assert m["throughput/straggler_lost"] == pytest.approx(
            (busy[straggler] - busy[1 - straggler]) / job_step, rel=1e-9, abs=1e-15)
        # where a loss is concentrated (the diagnosis): the rank with the larger share
        # of its own step, the lower rank on a tie
        comm = [row["phase_communication_s"] / row["step_time_s"] for row in rows]
        assert m["throughput/mfu_lost_rank/communication"] == (1 if comm[1] > comm[0] else 0)
    r0, r1 = (out["records"][-1] for out in ranks)
    assert r1["phase_s"]["forward"] >= STRAGGLE_S       # the sleep is in rank 1's forward


def test_metrics_wait_leaves_the_step_and_the_spread_is_the_ranks(tmp_path):
    ranks = launch("spread", tmp_path)
    for out in ranks:
        assert out["warnings"] == []
    # each rank's aggregation time (its wait for the other included) leaves its steps
    assert all(out["records"][-1]["excluded_s"] > 0 for out in ranks)
    for m, rows in _aggregations(ranks)[1:]:
        # the spread and the slowest rank are the rows': each rank's own MFU, and the
        # rank with the most host seconds per step since the last aggregation
        mfu = [row["sums"]["model_flops"] / row["peak_flops_per_sec"] for row in rows]
        assert m["throughput/mfu_rank_max"] / m["throughput/mfu_rank_min"] == \
            pytest.approx(max(mfu) / min(mfu), rel=1e-12)
        interval = [row["interval_s"] / row["interval_steps"] for row in rows]
        assert m["throughput/slowest_rank"] == (1 if interval[1] > interval[0] else 0)
        # each step lasts at least its sleep: 1 ms on rank 0, 4 ms on rank 1
        for row, sleep_s in zip(rows, (0.001, 0.004)):
            assert row["step_time_min_s"] >= sleep_s
