"""Distributed aggregation with real processes: ``torchrun --nproc_per_node=2``, gloo, CPU.

Each test launches scripts/worker.py for one case; every rank writes what
its aggregations returned and its local summary read right after each one
(the same window: the CPU clock resolves a step at its step() call). The
global figures are recomputed here by hand from those per-rank summaries.

Only bounds that a hang would violate are timed (the subprocess timeout).
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
WORKER = Path(__file__).resolve().parent / "scripts" / "worker.py"
TORCHRUN = Path(sys.executable).with_name("torchrun")
LAUNCH_TIMEOUT_S = 240  # a run takes ~7 s; only a hang gets near this

GLOBAL_KEYS = {"mfu", "tokens_per_sec", "achieved_tflops", "step_time_s", "step_time_min_s",
               "step_time_max_s", "peak_tflops", "tokens_per_sec_per_device", "mfu_rank_min",
               "mfu_rank_mean", "mfu_rank_max", "step_time_rank_max", "step_time_rank_min",
               "slowest_rank"}
LOCAL_KEYS = {"mfu", "tokens_per_sec", "achieved_tflops", "step_time_s", "step_time_min_s",
              "step_time_max_s", "peak_tflops"}
# What the communication observer adds wherever collectives run
# (docs/communication.md): exposed seconds are a phase, so the waterfall, the
# straggler and the rank where each loss is concentrated come with them.
# A marked phase also gives the seconds between phases (idle_s, docs/waterfall.md).
COMM_KEYS = {"comm_s_max", "phase_s/communication", "mfu_lost/communication",
             "mfu_lost/other", "straggler_rank", "straggler_lost",
             "mfu_lost_rank/communication", "mfu_lost_rank/other",
             "idle_s", "mfu_lost/idle", "mfu_lost_rank/idle"}


def comm_keys(*kinds: str) -> set:
    """The observer's keys for collectives of these kinds."""
    return COMM_KEYS | {f"{family}/{kind}" for kind in kinds
                        for family in ("comm_bytes", "comm_s", "comm_busbw_gbs")}

pytestmark = pytest.mark.skipif(not TORCHRUN.exists(), reason="torchrun not installed")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(case: str | None, tmp_path: Path, nproc: int = 2, env: dict | None = None,
           worker: Path = WORKER) -> list[dict]:
    """Run `case` of `worker` (no case: the worker's only one) on `nproc`
    ranks; return each rank's JSON, rank order."""
    full_env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT), **(env or {}))
    cmd = [str(TORCHRUN), f"--nproc_per_node={nproc}", f"--master_port={_free_port()}",
           str(worker), *([case] if case is not None else []), str(tmp_path)]
    proc = subprocess.run(cmd, env=full_env, capture_output=True, text=True,
                          timeout=LAUNCH_TIMEOUT_S)
    assert proc.returncode == 0, f"torchrun failed ({proc.returncode}):\n{proc.stderr[-4000:]}"
    return [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(nproc)]


def keys(metrics: dict) -> set[str]:
    return {k.split("/", 1)[1] for k in metrics}


def hand(summaries: list[dict], mp: int = 1, bandwidth: float | None = None) -> dict:
    """Global figures from per-rank local summaries, by the documented formula:
    MFU = sum_r achieved_r / sum_r peak_r (rank shares: divided by the degree mp)."""
    achieved = [s["achieved_flops_per_sec"] / mp for s in summaries]
    peaks = [s["peak_flops_per_sec"] / mp for s in summaries]
    out = {
        "mfu": sum(achieved) / sum(peaks),
        "achieved_tflops": sum(achieved) * 1e-12,
        "peak_tflops": sum(peaks) * 1e-12,
        "tokens_per_sec": sum(s["tokens_per_sec"] / mp for s in summaries),
        "mfu_rank_min": min(s["mfu"] for s in summaries),
        "mfu_rank_max": max(s["mfu"] for s in summaries),
        "mfu_rank_mean": sum(s["mfu"] for s in summaries) / len(summaries),
        "step_time_s": max(s["step_time_s"] for s in summaries),
        "step_time_min_s": min(s["step_time_min_s"] for s in summaries),
        "step_time_max_s": max(s["step_time_max_s"] for s in summaries),
    }
    out["tokens_per_sec_per_device"] = out["tokens_per_sec"] / len(summaries)
    if summaries[0].get("hfu") is not None:
        out["hfu"] = sum(s["hfu"] * s["peak_flops_per_sec"] for s in summaries) / sum(
            s["peak_flops_per_sec"] for s in summaries)
    if bandwidth is not None:  # equal bandwidth per rank: sum(mbu_r * bw) / (n * bw)
        out["mbu"] = sum(s["mbu"] * bandwidth for s in summaries) / (len(summaries) * bandwidth)
    return out


def check_against_hand(records: list[list[dict]], mp: int = 1, bandwidth: float | None = None) -> None:
    """records[rank][i]: the i-th aggregation on each rank."""
    for per_rank in zip(*records):
        m0 = per_rank[0]["metrics"]
        for rec in per_rank[1:]:  # the same global figures on every rank
            assert rec["metrics"] == m0
        expected = hand([rec["summary"] for rec in per_rank], mp, bandwidth)
        for name, value in expected.items():
            assert m0[f"throughput/{name}"] == pytest.approx(value, rel=1e-12), name
        assert m0["throughput/mfu_rank_min"] <= m0["throughput/mfu"] <= m0["throughput/mfu_rank_max"]


def test_bare_loop(tmp_path):
    ranks = launch("bare", tmp_path)
    for out in ranks:
        assert out["distributed"] == {"plain": True, "tp2": True, "local": False}
        assert out["warnings"] == []
        # 2 aggregating trackers x 3 logging steps; the opted-out one never communicates
        assert out["gathers"] == 6
        assert [len(out[name]) for name in ("plain", "tp2", "local")] == [3, 3, 3]
        for rec in out["plain"]:
            assert keys(rec["metrics"]) == GLOBAL_KEYS | {"hfu", "mbu"}
            assert rec["counters"]["world_size"] == 2
        assert keys(out["local"][-1]["metrics"]) == LOCAL_KEYS
        assert out["local"][-1]["counters"]["collectives"] == 0
        assert [rec["counters"]["collectives"] for rec in out["plain"]] == [1, 2, 3]
    check_against_hand([out["plain"] for out in ranks], bandwidth=0.01e12)
    check_against_hand([out["tp2"] for out in ranks], mp=2)
    # tensor_parallel=2: both ranks gave the same replica figures, counted once:
    # global tokens/s = sum_r (tokens / 2) / T_r, about one rank's, not two ranks' worth.
    for plain, tp2 in zip(ranks[0]["plain"], ranks[0]["tp2"]):
        s = tp2["summary"]
        assert tp2["metrics"]["throughput/peak_tflops"] == pytest.approx(2 * 0.05)  # 2 GPUs
        assert s["peak_tflops"] == pytest.approx(2 * 0.05)  # local denominator: 2 ranks' GPUs
        # per-GPU MFU: the replica's FLOP/s over the two GPUs' peak
        assert s["mfu"] == pytest.approx(s["achieved_flops_per_sec"] / (2 * 0.05e12), rel=1e-12)


def test_uneven_work_names_the_slow_rank(tmp_path):
    ranks = launch("uneven", tmp_path)
    records = [out["tracker"] for out in ranks]
    assert [len(r) for r in records] == [3, 3]
    check_against_hand(records)
    assert [len(out["rows"]) for out in ranks] == [3, 3]
    for per_rank, rows in zip(zip(*records), zip(ranks[0]["rows"], ranks[1]["rows"])):
        m = per_rank[0]["metrics"]
        # the slowest rank: the most host seconds per step since the last aggregation,
        # as each rank measured them (rank 1, 4x tokens + 20 ms sleep per step, unless
        # the machine held rank 0 up for longer)
        interval = [row["interval_s"] / row["interval_steps"] for row in rows]
        assert m["throughput/slowest_rank"] == (1.0 if interval[1] > interval[0] else 0.0)
        assert m["throughput/step_time_rank_max"] == max(interval)
        assert m["throughput/step_time_rank_min"] == min(interval)
        # 5 steps x 20 ms of sleep alone: rank 1's interval step time is at least that
        assert interval[1] >= 0.02
    for out in ranks:
        assert out["warnings"] == [] and out["gathers"] == 3


def test_ddp(tmp_path):
    ranks = launch("ddp", tmp_path)
    for out in ranks:
        assert out["counted_flops"] == out["hand_flops"]  # 40 * T * H^2, T = 64 or 256
        assert out["warnings"] == [] and out["gathers"] == 3
    assert ranks[0]["hand_flops"] * 4 == ranks[1]["hand_flops"]
    assert ranks[0]["param_checksum"] == ranks[1]["param_checksum"]  # DDP still in sync
    records = [out["tracker"] for out in ranks]
    check_against_hand(records)
    for rec0, rec1 in zip(*records):
        m = rec0["metrics"]
        # no attach_ddp: DDP's all-reduce (and its one-time bucket rebuild's
        # broadcast, in the first windows) observed all the same
        rebuild = {f"{family}/broadcast" for family in ("comm_bytes", "comm_s", "comm_busbw_gbs")}
        assert keys(m) - rebuild == GLOBAL_KEYS | comm_keys("all_reduce")
        # DDP syncs every step, so both ranks' periods are the slowest's: rank 1's
        # 4x work shows in its MFU, the top of the per-rank spread.
        assert rec1["summary"]["mfu"] == m["throughput/mfu_rank_max"]
        assert rec0["summary"]["mfu"] == m["throughput/mfu_rank_min"]


def test_fsdp2_counts_full_weights(tmp_path):
    ranks = launch("fsdp2", tmp_path)
    for out in ranks:
        assert out["param_types"] == ["DTensor"]
        # the sharded model's parameters report their full (logical) size ...
        assert out["param_bytes"] == out["full_param_bytes"] == 2 * 32 * 128 * 4
        # ... while each rank holds half: a local-shard count would be off by 2x
        assert out["local_shard_bytes"] * 2 == out["full_param_bytes"]
        # FLOPs of a step on the sharded model: the all-gathered full weights
        assert out["counted_flops"] == out["reference_flops"] == out["hand_flops"] == 40 * 64 * 32 * 32
        assert out["warnings"] == [] and out["gathers"] == 2
    records = [out["tracker"] for out in ranks]
    check_against_hand(records, bandwidth=0.01e12)
    for rec in records[0]:
        assert keys(rec["metrics"]) == GLOBAL_KEYS | {"mbu"} | comm_keys("all_gather",
                                                                          "reduce_scatter")


def test_mismatched_intervals_bounded_wait_one_warning(tmp_path):
    ranks = launch("mismatch", tmp_path, env={"MFU_TEST_TIMEOUT": "3"})
    r0, r1 = ranks
    # rank 0 logs at 2, 4, ..., 12; rank 1 at 3, 6, 9, 12. Gathers pair by order:
    # (2, 3), (4, 6), (6, 9), (8, 12), then rank 0's call at step 10 has no partner.
    assert [rec["step"] for rec in r0["tracker"]] == [2, 4, 6, 8, 10, 12]
    assert [rec["step"] for rec in r1["tracker"]] == [3, 6, 9, 12]
    for rec in r0["tracker"][:4] + r1["tracker"]:
        assert "throughput/slowest_rank" in rec["metrics"]
    for rec in r0["tracker"][4:]:  # local figures after the failed wait
        assert keys(rec["metrics"]) == LOCAL_KEYS
    assert r0["tracker"][4]["counters"] == {"aggregations": 5, "collectives": 5, "failures": 1,
                                            "world_size": 2, "active": 0}
    assert r0["tracker"][5]["counters"]["collectives"] == 5  # no second wait
    assert r0["gathers"] == 5 and r1["gathers"] == 4
    assert r0["distributed_after"] is False and r1["distributed_after"] is True
    mismatch = [w for w in r0["warnings"] if "different step counts" in w]
    failure = [w for w in r0["warnings"] if "aggregation failed" in w]
    assert len(mismatch) == 1 and len(failure) == 1 and len(r0["warnings"]) == 2
    assert "rank 0: 2" in mismatch[0] and "rank 1: 3" in mismatch[0]
    assert "3 s" in failure[0] and "local figures" in failure[0]
    assert len(r1["warnings"]) == 1 and "different step counts" in r1["warnings"][0]
    # the wait is bounded: it ran the 3 s timeout and returned (a hang is caught by the
    # launch timeout)
    assert r0["tracker"][4]["metrics_wall_s"] >= 3.0


def test_world_size_one_same_keys_no_collective(tmp_path):
    (out,) = launch("single", tmp_path, nproc=1)
    assert out["world_size"] == 1 and out["distributed"] is True
    assert out["gathers"] == 0 and out["warnings"] == []
    for rec in out["tracker"]:
        assert keys(rec["metrics"]) == GLOBAL_KEYS
        assert rec["counters"]["collectives"] == 0
        m, s = rec["metrics"], rec["summary"]
        assert m["throughput/slowest_rank"] == 0.0
        assert m["throughput/step_time_rank_max"] == m["throughput/step_time_rank_min"]
        assert m["throughput/mfu"] == m["throughput/mfu_rank_mean"] == s["mfu"]
    check_against_hand([out["tracker"]])


def test_mixed_precision_and_telemetry_are_global(tmp_path):
    sys.path.insert(0, str(ROOT / "tests"))
    from _fake_nvml import UUID, build

    r0, r1 = launch("mixed", tmp_path, env={"MFU_TRACKER_NVML_LIBRARY": build(),
                                            "FAKE_NVML_UUID": UUID})
    assert r0["warnings"] == [] and r1["warnings"] == []
    assert len(r0["tracker"]) == 3
    for a, b in zip(r0["tracker"], r1["tracker"]):
        m, s0, s1 = a["metrics"], a["summary"], b["summary"]
        assert b["metrics"] == m                              # the same figures on both ranks
        # each rank's own mfu_mixed: (sum_d F_d / peak_d) x steps / window (H100 SXM row)
        for s, ideal in ((s0, 4e6 / 1978.9e12 + 1e6 / 989.4e12), (s1, 2e6 / 989.4e12)):
            assert s["mfu_mixed"] == pytest.approx(ideal * s["steps"] / s["window_s"], rel=1e-12)
        # one device each: the global value is their mean
        assert m["throughput/mfu_mixed"] == pytest.approx((s0["mfu_mixed"] + s1["mfu_mixed"]) / 2,
                                                          rel=1e-12)
        # power adds up (200 + 400 W from the fakes' energy counters, each rank's on its
        # virtual clock: 3 steps of 2 ms between readings), to the counters' whole mJ:
        # 1 mJ / 6 ms on each rank
        assert m["throughput/power_w"] == pytest.approx(600.0, abs=2 * 1e-3 / 6e-3)
        assert m["throughput/energy_j_per_token"] == pytest.approx(
            m["throughput/power_w"] / m["throughput/tokens_per_sec"], rel=1e-12)
        assert m["throughput/tflops_per_watt"] == pytest.approx(
            m["throughput/achieved_tflops"] / m["throughput/power_w"], rel=1e-12)
        assert m["throughput/sm_clock_mhz"] == 1600.0         # mean of 1800 and 1400
        assert m["throughput/clock_ratio"] == pytest.approx(1400 / 1980)  # the lowest
        assert m["throughput/throttled"] == 1.0               # rank 1 is power-capped


@pytest.fixture(scope="module")
def trainer_run(tmp_path_factory):
    pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    return launch("trainer", tmp_path_factory.mktemp("trainer"))


def test_trainer_callback_under_ddp(trainer_run):
    for out in trainer_run:
        assert out["wrapped"] == "DistributedDataParallel"  # Trainer set DDP up from torchrun
        logged = [entry for entry in out["logs"] if "throughput/mfu" in entry]
        assert [entry["step"] for entry in logged] == [2, 4, 6]
        for entry in logged:
            # the global denominator: the sum of both ranks' peaks, 2 x 0.05 TFLOP/s
            assert entry["throughput/peak_tflops"] == pytest.approx(0.1)
            assert 0 < entry["throughput/mfu"] < 1
            # the counter's FLOPs by dtype reach the aggregation; with one user peak for
            # every dtype each rank's mfu_mixed is its mfu, and so is the global one
            assert entry["throughput/mfu_mixed"] == pytest.approx(entry["throughput/mfu"], rel=1e-9)
            # the Trainer's DDP, which a callback never gets to attach to: observed all
            # the same (no hook needed). One bucket per step with the 29,568 parameters
            # (wte, wpe 64 x 32 each; 2 blocks of 2 LayerNorms 2 x 32, c_attn 32 x 96
            # + 96, attn c_proj 32 x 32 + 32, c_fc 32 x 128 + 128, mlp c_proj
            # 128 x 32 + 32; ln_f 2 x 32), fp32, and the used-parameter map DDP
            # all-reduces with find_unused_parameters: 28 tensors x 4 B (int32)
            params = 2 * 64 * 32 + 2 * (4 * 32 + 32 * 96 + 96 + 32 * 32 + 32 + 32 * 128 + 128
                                        + 128 * 32 + 32) + 2 * 32
            assert params == 29_568
            assert entry["throughput/comm_bytes/all_reduce"] == params * 4 + 28 * 4
            assert entry["throughput/mfu_lost/communication"] > 0
            assert math.fsum([entry["throughput/mfu"], *(v for k, v in entry.items()
                                                        if "/mfu_lost/" in k)]) == 1.0
        # one all-gather per logging call (steps 2, 4, 6 and the final summary log), on
        # every rank alike; never one per step
        assert 3 <= out["gathers"] <= 4
    assert trainer_run[0]["gathers"] == trainer_run[1]["gathers"]


def test_trainer_callback_logs_global_figures(trainer_run):
    for out in trainer_run:
        logged = [entry for entry in out["logs"] if "throughput/mfu" in entry]
        assert logged and all("throughput/mfu_rank_min" in entry for entry in logged)
    # global figures: every rank logs the same throughput values
    ours = [[{k: v for k, v in e.items() if k.startswith("throughput/")} for e in out["logs"]]
            for out in trainer_run]
    assert ours[0] == ours[1] and any(ours[0])
