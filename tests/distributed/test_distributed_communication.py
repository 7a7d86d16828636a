"""Communication on the parallel stack, with no attach call (docs/communication.md):
``torchrun --nproc_per_node=2`` on gloo, CPU, one launch for every case
(scripts/comm_worker.py: FSDP2, FSDP1, a bare DDP loop over 20 windows, DTensor
tensor parallelism, a Ulysses all-to-all, a 2-stage GPipe schedule).

References: bytes by hand from the parameter and activation shapes written
beside each number; injected delays (lower bounds); the rank the job's figures
name, against each rank's own window (its busy seconds: what the aggregation
received), never against how the machine scheduled the ranks; the GPipe
bubble bounded by the stages' own fixed sleeps. No duration has an upper
bound the scheduler could break.
"""
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
WORKER = Path(__file__).resolve().parent / "scripts" / "comm_worker.py"
TORCHRUN = Path(sys.executable).with_name("torchrun")
LAUNCH_TIMEOUT_S = 300
CASES = ("fsdp2", "fsdp1", "ddp", "tp", "a2a", "gpipe")
# comm_worker's constants
SLOW_S, DELAY_S, WINDOWS, LINK_GBS = 0.03, 0.02, 20, 10.0
M, P, STAGE_S = 4, 2, 0.03  # micro-batches, pipeline stages, a stage's sleep each way

pytestmark = pytest.mark.skipif(not TORCHRUN.exists(), reason="torchrun not installed")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ranks(tmp_path_factory) -> list:
    out = tmp_path_factory.mktemp("comm")
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    cmd = [str(TORCHRUN), "--nproc_per_node=2", f"--master_port={_free_port()}", str(WORKER),
           str(out), *CASES]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=LAUNCH_TIMEOUT_S)
    assert proc.returncode == 0, f"torchrun failed ({proc.returncode}):\n{proc.stderr[-4000:]}"
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(2)]


def _family(m: dict, family: str) -> dict:
    base = f"throughput/{family}/"
    return {k[len(base):]: v for k, v in m.items() if k.startswith(base)}


def _adds_up(m: dict) -> None:
    """mfu + every mfu_lost share is exactly 1; phase_s/communication is the
    sum of the kinds' exposed seconds (each a mean over ranks)."""
    assert math.fsum([m["throughput/mfu"], *_family(m, "mfu_lost").values()]) == 1.0
    comm_s = _family(m, "comm_s")
    if comm_s:
        assert m["throughput/phase_s/communication"] == pytest.approx(
            math.fsum(comm_s.values()), rel=1e-12)
        assert m["throughput/comm_s_max"] >= max(comm_s.values())


def _local_comm_s(record: dict) -> float:
    return math.fsum(record["local"]["comm_s"].values())


def _straggler(records: list) -> float:
    """The rank with the most busy seconds per step (its window's period less
    its exposed communication), as each rank measured it; the lower on a tie."""
    busy = [r["local"]["step_time_s"] - r["local"]["phase_s"].get("communication", 0.0)
            - r["local"]["phase_s"].get("pipeline_bubble", 0.0) for r in records]
    return 1.0 if busy[1] > busy[0] else 0.0


def test_no_warnings_and_every_key_adds_up(ranks):
    for out in ranks:
        for case in CASES:
            assert out[case]["warnings"] == [], case
        for case in ("fsdp2", "fsdp1", "tp", "a2a", "gpipe"):
            _adds_up(out[case]["metrics"])
            local = out[case]["local"]
            # locally phase_s/communication is the fsum of comm_s, exactly
            # (a GPipe stage's every wait is p2p inside its schedule: the bubble)
            assert bool(local["comm_s"]) == (case != "gpipe"), case
            if case == "gpipe":
                assert "communication" not in local["phase_s"]
            else:
                assert local["phase_s"]["communication"] == math.fsum(local["comm_s"].values())
        for window in out["ddp"]["windows"]:
            _adds_up(window["metrics"])


def test_fsdp2_bytes_per_kind_by_hand(ranks):
    # 4 x Linear(256, 256), fp32: (256 * 256 + 256) * 4 B = 263,168 B each,
    # P = 4 * 263,168 = 1,052,672 B. All-gather (output): forward and again
    # in backward (resharded after forward) = 2 P; reduce-scatter (input) = P.
    params = 4 * (256 * 256 + 256) * 4
    assert params == 1_052_672
    for out in ranks:
        m, local = out["fsdp2"]["metrics"], out["fsdp2"]["local"]
        assert local["comm_bytes"] == {"all_gather": 2 * params, "reduce_scatter": params}
        assert _family(m, "comm_bytes") == {"all_gather": 2 * params, "reduce_scatter": params}
        assert set(_family(m, "comm_s")) == {"all_gather", "reduce_scatter"}
        # gloo's reduce-scatter Work has no future: timed launch to its wait's return
        busbw = _family(m, "comm_busbw_gbs")
        assert set(busbw) == {"all_gather", "reduce_scatter"} and min(busbw.values()) > 0.0
        assert "throughput/comm_overlap" not in m  # GPU only
        assert "throughput/net_utilization" not in m  # a CPU has no link in the table


def test_fsdp2_straggler_is_the_rank_with_the_most_busy_time(ranks):
    fast, slow = ranks[0]["fsdp2"], ranks[1]["fsdp2"]
    # rank 1 sleeps 30 ms in every forward (rank 0 then waits for it in a collective,
    # unless the machine held rank 0 up for longer): the straggler is the rank
    # the windows show busiest
    assert slow["local"]["phase_s"]["forward"] >= SLOW_S
    assert fast["metrics"]["throughput/straggler_rank"] == _straggler([fast, slow])
    assert fast["metrics"]["throughput/mfu_lost/communication"] > 0.0


def test_fsdp1_bytes_by_hand_and_the_slow_rank(ranks):
    # one flat parameter P = 1,052,672 B (even: no padding for 2 ranks); the
    # root unit keeps it gathered from forward to backward: one all-gather
    # (output) P, one reduce-scatter (input) P per step
    params = 4 * (256 * 256 + 256) * 4
    for out in ranks:
        m = out["fsdp1"]["metrics"]
        assert out["fsdp1"]["local"]["comm_bytes"] == {"all_gather": params, "reduce_scatter": params}
        assert _family(m, "comm_bytes") == {"all_gather": params, "reduce_scatter": params}
        assert m["throughput/straggler_rank"] == _straggler([r["fsdp1"] for r in ranks])
    assert ranks[1]["fsdp1"]["local"]["phase_s"]["forward"] >= SLOW_S


def test_bare_ddp_loop_names_the_straggler_in_20_of_20_windows(ranks):
    # rank (w % 2) sleeps DELAY_S in every forward of window w; every window names
    # the rank its own figures show busiest (the sleeper, unless the machine held
    # the other up for longer)
    for w in range(WINDOWS):
        records = [out["ddp"]["windows"][w] for out in ranks]
        assert records[w % 2]["local"]["phase_s"]["forward"] >= DELAY_S
        for record in records:
            assert record["metrics"]["throughput/straggler_rank"] == _straggler(records), w
    for out in ranks:
        assert len(out["ddp"]["windows"]) == WINDOWS
    for i, w in enumerate(ranks[0]["ddp"]["windows"]):
        m, local = w["metrics"], w["local"]
        # one DDP bucket: (32 * 128 + 128 + 128 * 32 + 32) * 4 B = 33,408 B per step
        bytes_ = _family(m, "comm_bytes")
        assert bytes_.pop("all_reduce") == (32 * 128 + 128 + 128 * 32 + 32) * 4
        # DDP's one-time bucket rebuild (its second step) broadcasts bucket indices
        assert bytes_ == ({} if i > 0 else {"broadcast": bytes_.get("broadcast")})
        # link_bandwidth_gbs=10 for every group: utilization = busbw / 10 GB/s
        # (one kind in the window: the rebuild's broadcast is in the first)
        if set(local["comm_busbw_gbs"]) == {"all_reduce"}:
            assert local["net_utilization"] == pytest.approx(
                local["comm_busbw_gbs"]["all_reduce"] / LINK_GBS, rel=1e-9)
        assert "throughput/net_utilization" in m


def test_dtensor_tensor_parallel_bytes_by_hand(ranks):
    # Colwise Linear(64, 128) needs nothing; Rowwise Linear(128, 64) leaves a
    # partial (8, 64) output that one all-reduce makes whole: 8 * 64 * 4 B.
    # The input needs no gradient: nothing crosses in backward.
    for out in ranks:
        m, local = out["tp"]["metrics"], out["tp"]["local"]
        assert local["comm_bytes"] == {"all_reduce": 8 * 64 * 4}
        assert set(local["comm_s"]) == {"all_reduce"}  # the wait_tensor of the result
        assert _family(m, "comm_bytes") == {"all_reduce": 2048.0}


def test_ulysses_all_to_all_is_measured(ranks):
    # (4, 8, 4, 16) fp32 = 8,192 B per exchange; two in forward (before and
    # after the projection) and two in backward: 4 * 8,192 = 32,768 B per step
    for out in ranks:
        m, local = out["a2a"]["metrics"], out["a2a"]["local"]
        assert local["comm_bytes"] == {"all_to_all": 4 * (4 * 8 * 4 * 16 * 4)}
        assert local["comm_s"]["all_to_all"] > 0.0
        assert _family(m, "comm_busbw_gbs")["all_to_all"] > 0.0
        assert m["throughput/phase_s/communication"] > 0.0


def test_gpipe_bubble_by_hand(ranks):
    # Equal stages (a fixed sleep STAGE_S each way per micro-batch): on a quiet
    # machine each stage waits (p - 1) of the (m + p - 1) slots of a step, 1 / 5.
    # What holds however the ranks are scheduled: the bubble is time spent waiting,
    # never the stage's own 2 x m sleeps, so at most the step period T less them --
    # 1 - 2 m STAGE_S / T, which is 1 / 5 at the quiet machine's T = 10 STAGE_S
    # (1 - 8 / 10) -- and more than nothing
    sleeps_s = 2 * M * STAGE_S
    quiet_step_s = (M + P - 1) * 2 * STAGE_S
    assert 1.0 - sleeps_s / quiet_step_s == pytest.approx((P - 1) / (M + P - 1), rel=1e-12)
    bounds = [1.0 - sleeps_s / out["gpipe"]["local"]["step_time_s"] for out in ranks]
    for out, bound in zip(ranks, bounds):
        m, local = out["gpipe"]["metrics"], out["gpipe"]["local"]
        assert 0.0 < local["mfu_lost"]["pipeline_bubble"] <= bound
        # the job's: the ranks' shares weighted by their (equal) peaks
        assert 0.0 < m["throughput/mfu_lost/pipeline_bubble"] <= max(bounds)
        # the waits inside the schedule are the bubble, not also communication
        assert local["phase_s"]["pipeline_bubble"] > 10 * local["phase_s"].get("communication", 0.0)
        assert _family(m, "comm_bytes")["p2p"] > 0.0
