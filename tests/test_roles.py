"""Post-training roles (mfu_tracker.Roles, timing/_roles.py): each role's
figures over its own seconds, the wait carved out of the waterfall's other,
the end-to-end MFU over the wall time; the disaggregated wait measured by two
real gloo processes, one rollout and one learner."""
from __future__ import annotations

import math
import os
import tempfile
import time
import warnings

import pytest

from mfu_tracker import Roles, Tracker, _C, user_gpu_spec
from mfu_tracker.timing._roles import ROLES

PEAK = 1e12                      # user_gpu_spec(1.0): 1 TFLOP/s
BANDWIDTH = 1e11                 # memory_bandwidth_tbs=0.1: 100 GB/s


def _tracker():
    return Tracker(spec=user_gpu_spec(1.0, memory_bandwidth_tbs=0.1), clock="cpu",
                   warmup=0, window=10)


def _rl_steps(roles, steps=3, reward=True):
    for _ in range(steps):
        with roles.role("rollout") as run:
            time.sleep(0.02)
            run.add(flops=2e9, bytes=3e9, tokens=64)
        if reward:
            time.sleep(0.01)                 # a rule scored on the host: no role
        with roles.role("learner") as run:
            time.sleep(0.02)
            run.add(flops=6e9, tokens=256)
        with roles.role("weight_sync") as run:
            run.add(bytes=1e8)
        roles.step()


def test_the_roles_are_the_record_table():
    assert ROLES == ("rollout", "reference", "reward", "learner", "weight_sync")
    names = {f.name for f in _C.STEP_FIELDS}
    for role in ROLES:
        assert {f"{role}_flops", f"{role}_bytes", f"{role}_tokens", f"{role}_s"} <= names
    assert "wait" in _C.LOSSES and "wait_s" in names
    assert {"wait_ratio", *(f"{r}_time_share" for r in ROLES)} <= {r.name for r in _C.RATIOS}


def test_colocated_roles_by_hand():
    t = _tracker()
    roles = Roles(t)
    roles.start()
    _rl_steps(roles)
    s = t.summary()
    records = t.window_steps()
    assert len(records) == 3 and s["steps"] == 3
    # each field is the sum of what each step recorded
    rollout_s = math.fsum(r["rollout_s"] for r in records)
    learner_s = math.fsum(r["learner_s"] for r in records)
    assert s["rollout_flops"] == 3 * 2e9 and s["learner_flops"] == 3 * 6e9
    assert s["reference_s"] == 0.0 and s["reward_flops"] == 0.0     # roles that never ran
    role = s["roles"]
    assert set(role) == {"rollout", "learner", "weight_sync"}
    # a role's ratios: its sums over its own seconds, against the peaks
    assert role["rollout"]["mfu"] == 6e9 / rollout_s / PEAK
    assert role["rollout"]["mbu"] == 9e9 / rollout_s / BANDWIDTH
    assert role["rollout"]["tokens_per_sec"] == 192 / rollout_s
    assert role["learner"]["mfu"] == 18e9 / learner_s / PEAK
    assert role["learner"]["mbu"] is None              # no bytes given: left out
    assert role["rollout"]["time_share"] == rollout_s / s["window_s"]
    # end to end: every role's FLOPs over the whole wall time; the model FLOPs are them
    assert s["model_flops"] == 24e9
    assert s["mfu_end_to_end"] == 24e9 / s["window_s"] / PEAK == s["mfu"]
    # the wait: each step's host seconds less its roles' (10 ms of host scoring)
    for r in records:
        roles_s = r["rollout_s"] + r["learner_s"] + r["weight_sync_s"]
        assert r["wait_s"] >= 0.01
        assert r["wait_s"] + roles_s == pytest.approx(r["period_s"], abs=5e-3)
    assert s["wait_ratio"] == s["wait_s"] / s["window_s"]
    # the waterfall: wait carved out of other, the shares adding up to exactly 1
    lost = s["mfu_lost"]
    assert list(lost) == ["wait", "other"] and lost["wait"] == s["wait_s_per_step"] / s["step_time_s"]
    assert math.fsum([s["mfu"], *lost.values()]) == 1.0


def test_the_keys():
    t = _tracker()
    roles = Roles(t)
    roles.start()
    _rl_steps(roles, steps=2)
    m = roles.metrics("rl")
    s = t.summary()
    assert m["rl/role/rollout/mfu"] == s["roles"]["rollout"]["mfu"]
    assert m["rl/role/rollout/mbu"] == s["roles"]["rollout"]["mbu"]
    assert m["rl/role/learner/time_share"] == s["learner_time_share"]
    assert m["rl/role/rollout/time_s"] == s["rollout_s"] / 2
    assert m["rl/wait_ratio"] == s["wait_ratio"] and m["rl/mfu_end_to_end"] == s["mfu_end_to_end"]
    assert "rl/mfu_lost/wait" in m and "rl/role/reference/mfu" not in m


def test_a_role_without_flops_leaves_the_end_to_end_out():
    t = _tracker()
    roles = Roles(t)
    roles.start()
    for _ in range(2):
        with roles.role("reward"):
            pass                                   # FLOPs unknown
        with roles.role("learner") as run:
            run.add(flops=1e9)
        roles.step()
    s = t.summary()
    assert "mfu" not in s["roles"]["reward"] or s["roles"]["reward"]["mfu"] is None
    assert s.get("mfu_end_to_end") is None and s.get("mfu") is None
    assert s["roles"]["learner"]["mfu"] is not None


def test_bad_input():
    roles = Roles(_tracker())
    with pytest.raises(ValueError, match="rollout"):
        with roles.role("generation"):
            pass
    with pytest.raises(ValueError, match="do not nest"):
        with roles.role("rollout"):
            with roles.role("learner"):
                pass
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = roles.run("learner").add(flops=-1.0)
    assert "learner flops" in str(caught[0].message) and math.isnan(run.flops)


# ---- disaggregated: two gloo processes ---------------------------------------

ROLLOUT_S, LEARN_S, STEPS = 0.20, 0.05, 4


def _pool(rank: int, init: str, out: str) -> None:
    import torch
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=2)
    t = Tracker(spec=user_gpu_spec(1.0), clock="cpu", warmup=1, window=10, distributed=False)
    roles = Roles(t)
    batch, weights = torch.zeros(16), torch.zeros(16)
    roles.start()
    for _ in range(STEPS + 1):
        if rank == 0:                               # the rollout pool
            with roles.role("rollout") as run:
                time.sleep(ROLLOUT_S)
                run.add(flops=1e9)
            dist.send(batch, 1)
            dist.recv(weights, 1)                   # waits for the learner
        else:                                       # the learner pool
            dist.recv(batch, 0)                     # waits for the rollout
            with roles.role("learner") as run:
                time.sleep(LEARN_S)
                run.add(flops=3e9)
            dist.send(weights, 0)
        roles.step()
    s = t.summary()
    with open(f"{out}.{rank}", "w") as f:
        f.write(repr({k: s[k] for k in ("wait_ratio", "wait_s", "window_s", "mfu_end_to_end",
                                         "rollout_s", "learner_s")}))
    dist.destroy_process_group()


def test_disaggregated_wait_ratio_two_gloo_processes(tmp_path):
    dist = pytest.importorskip("torch.distributed")
    if not dist.is_available() or not dist.is_gloo_available():
        pytest.skip("no gloo")
    import torch.multiprocessing as mp
    init = f"file://{tmp_path / 'store'}"
    out = str(tmp_path / "pool")
    mp.start_processes(_pool, args=(init, out), nprocs=2, start_method="spawn")
    rollout, learner = (eval(open(f"{out}.{r}").read()) for r in (0, 1))
    for pool in (rollout, learner):
        # the ratio is the formula's: the window's wait seconds over its wall time
        assert pool["wait_ratio"] == pool["wait_s"] / pool["window_s"]
    # each pool sits idle while the other works: the learner waits for the
    # rollout's 0.20 s of each 0.25 s step, the rollout for the learner's 0.05 s
    assert learner["wait_ratio"] == pytest.approx(ROLLOUT_S / (ROLLOUT_S + LEARN_S), abs=0.08)
    assert rollout["wait_ratio"] == pytest.approx(LEARN_S / (ROLLOUT_S + LEARN_S), abs=0.08)
    assert rollout["rollout_s"] + rollout["wait_s"] == pytest.approx(rollout["window_s"], abs=0.02)
    assert learner["learner_s"] + learner["wait_s"] == pytest.approx(learner["window_s"], abs=0.02)
    # each pool's end-to-end MFU: its own roles' FLOPs over its wall time
    assert learner["mfu_end_to_end"] == STEPS * 3e9 / learner["window_s"] / PEAK


def _grouped_pool(rank: int, init: str, out: str) -> None:
    """The same two pools, their trackers combining across the process group."""
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=2)
    t = Tracker(spec=user_gpu_spec(1.0), clock="cpu", warmup=1, window=10)
    roles = Roles(t)
    roles.start()
    for _ in range(STEPS + 1):
        with roles.role("rollout" if rank == 0 else "learner") as run:
            time.sleep(ROLLOUT_S if rank == 0 else LEARN_S)
            run.add(flops=1e9)
        dist.barrier()                              # the learner waits for the rollout
        roles.step()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        combined = roles.metrics("")
        again = roles.metrics("")
    local = t.summary()
    with open(f"{out}.{rank}", "w") as f:
        f.write(repr({"combined": combined, "again": again, "local": local["wait_ratio"],
                      "warnings": [str(w.message) for w in caught]}))
    dist.destroy_process_group()


def test_wait_ratio_across_ranks_is_the_mean_and_roles_are_left_out(tmp_path):
    dist = pytest.importorskip("torch.distributed")
    if not dist.is_available() or not dist.is_gloo_available():
        pytest.skip("no gloo")
    import torch.multiprocessing as mp
    out = str(tmp_path / "pool")
    mp.start_processes(_grouped_pool, args=(f"file://{tmp_path / 'store'}", out), nprocs=2,
                       start_method="spawn")
    rollout, learner = (eval(open(f"{out}.{r}").read()) for r in (0, 1))
    # the pools' own ratios: the rollout barely waits, the learner most of each step
    assert learner["local"] > 0.5 > rollout["local"]
    for pool in (rollout, learner):
        m = pool["combined"]
        # the job's wait ratio is the mean of the pools' (one device each), never their sum
        assert m["wait_ratio"] == pytest.approx((rollout["local"] + learner["local"]) / 2,
                                                rel=0.02)
        assert m["wait_ratio"] < 1.0
        # role figures would need each pool's own seconds and peak: left out, said once
        assert not any(k.startswith("role/") or k == "mfu_end_to_end" for k in m)
        assert len(pool["warnings"]) == 1 and "role figures" in pool["warnings"][0]
        assert "wait_ratio" in pool["again"]
