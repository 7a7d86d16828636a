"""Phases, the MFU waterfall and the tracker's own time (docs/waterfall.md).

GPU-clock tests run on the fake driver (tests/conftest.py): the fake's host
clock stands still until ``fake.advance``; each record completes at
max(previous record + work_ns, now + lag_ns), so every phase second is known
exactly and written beside the check. CPU-clock tests inject sleeps and check
lower bounds (a sleep lasts at least its time) plus the exact sum.
"""
from __future__ import annotations

import dataclasses
import math
import time
import warnings

import pytest

from mfu_tracker import _C, user_gpu_spec
from mfu_tracker.distributed import RankFigures, combine
from mfu_tracker.timing._totals import StepSums
from mfu_tracker.step import Tracker
from mfu_tracker.timing._waterfall import LOSSES, PHASES, waterfall

from _bracket import Bracket

MS = 1_000_000  # ns
SPEC = user_gpu_spec(1000.0, name="fake GPU", memory_bandwidth_tbs=2.0)  # 1e15 FLOP/s


def _lost(metrics: dict, prefix: str = "throughput") -> dict:
    base = f"{prefix}/mfu_lost/"
    return {k[len(base):]: v for k, v in metrics.items() if k.startswith(base)}


def _sums_to_one(metrics: dict) -> bool:
    return math.fsum([metrics["throughput/mfu"], *_lost(metrics).values()]) == 1.0


# ---- the arithmetic ---------------------------------------------------------------


def test_waterfall_by_hand():
    # T = 10 s: data 1, forward 2, backward 3, optimizer 0.5, communication 1.5;
    # mfu 0.25 (ideal 2.5 s), hfu 0.3
    w = waterfall(0.25, 0.30, 10.0, {"data": 1.0, "forward": 2.0, "backward": 3.0,
                                     "optimizer": 0.5, "communication": 1.5})
    # not marked: the bubble; not given: the step record's per-step losses (idle)
    assert list(w) == [name for name in LOSSES
                       if name not in ("pipeline_bubble", "idle", "moe_imbalance", "wait")]
    assert w["data"] == pytest.approx(0.1)
    assert w["communication"] == pytest.approx(0.15)
    assert w["optimizer"] == pytest.approx(0.05)
    assert w["recompute"] == pytest.approx(0.05)                  # 0.30 - 0.25
    assert w["compute"] == pytest.approx(0.5 - 0.25 - 0.05)       # (2 + 3) / 10 - mfu - recompute
    assert w["other"] == pytest.approx(1 - 0.25 - 0.1 - 0.15 - 0.05 - 0.05 - 0.2)  # 0.2
    assert math.fsum([0.25, *w.values()]) == 1.0


def test_unmarked_phases_fold_into_other_never_guessed():
    w = waterfall(0.4, None, 2.0, {"data": 0.2})
    assert set(w) == {"data", "other"}               # no forward/backward: no compute share
    assert w["data"] == pytest.approx(0.1) and w["other"] == pytest.approx(0.5)
    w = waterfall(0.4, None, 2.0, {"forward": 0.5, "backward": 1.0})
    assert set(w) == {"compute", "other"}            # no hfu: no recompute, it stays in compute
    assert w["compute"] == pytest.approx(0.75 - 0.4)
    assert waterfall(None, None, 2.0, {"data": 1.0}) is None       # no MFU: no waterfall
    assert waterfall(0.4, None, 2.0, {}) is None                   # nothing marked
    assert waterfall(0.4, None, 0.0, {"data": 1.0}) is None


def test_sum_is_exactly_one_over_many_cases():
    import random

    rng = random.Random(11)
    for _ in range(20000):
        t = rng.uniform(1e-4, 5.0)
        names = rng.sample(PHASES, rng.randint(1, len(PHASES)))
        phases = {n: t * rng.random() / len(names) for n in names}
        mfu = rng.random() * 0.6
        hfu = mfu + rng.random() * 0.1 if rng.random() < 0.5 else None
        w = waterfall(mfu, hfu, t, phases)
        assert math.fsum([mfu, *w.values()]) == 1.0


# ---- bad input ------------------------------------------------------------------------


def test_unknown_phase_name_raises_naming_it():
    t = Tracker(1e9, peak_tflops=1.0, clock="cpu")
    for call in (t.phase, t.begin_phase, t.switch_phase):
        with pytest.raises(ValueError, match="'dataloading'"):
            call("dataloading")
        with pytest.raises(TypeError, match="phase"):
            call(3)


def test_phase_open_at_step_is_closed_with_one_warning():
    t = Tracker(1e9, peak_tflops=1.0, clock="cpu", warmup=0)
    t.step()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            t.begin_phase("data")
            assert t.phase_depth() == 1
            t.step()
            assert t.phase_depth() == 0
    assert [str(w.message).count("closed a phase left open") for w in caught] == [1]


def test_end_without_phase_and_too_deep_warn_once_and_change_nothing():
    t = Tracker(1e9, peak_tflops=1.0, clock="cpu", warmup=0)
    t.step()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t.end_phase()
        t.end_phase()
        for _ in range(_C.LIMIT_PHASE_DEPTH_MAX + 2):
            t.begin_phase("data")
    assert t.phase_depth() == _C.LIMIT_PHASE_DEPTH_MAX
    assert len(caught) == 1 and "no phase is open" in str(caught[0].message)


def test_exception_in_a_phase_propagates_and_the_phase_ends():
    t = Tracker(1e9, peak_tflops=1.0, clock="cpu", warmup=0)
    t.step()
    with pytest.raises(KeyError):
        with t.phase("forward"):
            raise KeyError("boom")
    assert t.phase_depth() == 0


def test_no_phases_no_new_keys():
    t = Tracker(1e3, peak_tflops=1.0, clock="cpu", warmup=0)
    for _ in range(3):
        t.step()
    assert not any("/mfu_lost/" in k or "/phase_s/" in k for k in t.metrics())


# ---- the CPU clock: injected sleeps ---------------------------------------------------

SLEEP_S = {"data": 0.004, "forward": 0.006, "backward": 0.008, "optimizer": 0.002}


def test_cpu_clock_injected_sleeps():
    t = Tracker(1e9, peak_tflops=1.0, executed_flops_per_step=1.2e9, clock="cpu", warmup=0,
                window=8)
    t.step()
    for _ in range(8):
        for name, seconds in SLEEP_S.items():
            with t.phase(name):
                time.sleep(seconds)
        t.step()
    m = t.metrics()
    assert _sums_to_one(m)
    step_s = m["throughput/step_time_s"]
    lost = _lost(m)
    for name, seconds in SLEEP_S.items():
        assert m[f"throughput/phase_s/{name}"] >= seconds          # a sleep lasts at least that
        assert m[f"throughput/phase_s/{name}"] <= step_s
    # Each share within tolerance of the injected one: at least the injected
    # time, at most that plus the step's whole overshoot (the time not
    # injected anywhere: sleeps run long, the loop costs) -- bounds that hold
    # however loaded the machine, since every sleep lasts at least its time.
    overshoot = step_s - sum(SLEEP_S.values())
    assert overshoot >= 0
    for name, seconds in SLEEP_S.items():
        assert m[f"throughput/phase_s/{name}"] <= seconds + overshoot * (1 + 1e-9)
    for name in ("data", "optimizer"):
        assert lost[name] == pytest.approx(m[f"throughput/phase_s/{name}"] / step_s, rel=1e-12)
        assert SLEEP_S[name] / step_s <= lost[name] <= (SLEEP_S[name] + overshoot) / step_s * (1 + 1e-9)
    assert lost["recompute"] == pytest.approx(m["throughput/hfu"] - m["throughput/mfu"])
    compute = (m["throughput/phase_s/forward"] + m["throughput/phase_s/backward"]) / step_s
    assert lost["compute"] == pytest.approx(compute - m["throughput/hfu"])
    assert lost["other"] >= -1e-12                                 # phases never overlap


def test_nested_phase_inner_wins_outer_resumes():
    t = Tracker(1e9, peak_tflops=1.0, clock="cpu", warmup=0)
    t.step()
    with t.phase("data"):
        time.sleep(0.002)
        with t.phase("forward"):
            time.sleep(0.005)
        time.sleep(0.002)
    t.step()
    s = t.summary()["phase_s"]
    assert s["forward"] >= 0.005
    assert s["data"] >= 0.004                                       # both halves
    assert s["data"] + s["forward"] <= t.summary()["step_time_s"]   # never counted twice


def test_metrics_time_is_excluded_on_the_cpu_clock(monkeypatch):
    """The time inside metrics() leaves the step it falls in."""
    t = Tracker(1e3, peak_tflops=1.0, clock="cpu", warmup=0)
    from mfu_tracker.tracker import _tracker as tracker_module

    real = tracker_module.format_metrics
    slept = []

    def slow_format(*args, **kwargs):
        start = time.monotonic_ns()
        time.sleep(0.2)  # stands in for a slow collective
        slept.append((time.monotonic_ns() - start) * 1e-9)   # inside the excluded time
        return real(*args, **kwargs)

    with Bracket() as steps:
        t.step()
        t.step()
        monkeypatch.setattr(tracker_module, "format_metrics", slow_format)
        for _ in range(3):
            t.metrics()
            t.step()
    # the 200 ms sleeps are in no step: each is excluded from the step it fell in, so
    # the four periods add up to at most the test's bracket of the boundaries less
    # the sleeps (each at least as long as the test measured it inside)
    s = t.summary()
    assert s["steps"] == 4 and len(slept) == 3
    assert s["step_time_s"] * s["steps"] <= steps.s - math.fsum(slept)
    assert t.phases()["excluded_s"] * s["steps"] >= 3 * 0.2


# ---- the GPU timeline (fake driver) ----------------------------------------------------


def test_gpu_timeline_semantics_zero_syncs(fake):
    t = Tracker(5e11, spec=SPEC, clock="cuda", stream=0, warmup=0)
    t.step()                                  # GPU 0
    t.begin_phase("forward")                  # GPU 0
    fake.set_work_ns(4 * MS)
    t.switch_phase("backward")                # GPU 4: forward 4 ms
    fake.set_work_ns(6 * MS)
    t.end_phase()                             # GPU 10: backward 6 ms
    fake.set_work_ns(0)
    with t.phase("data"):                     # recorded at host 0: GPU 10
        fake.advance(5 * MS)                  # host stall while the GPU is busy until 10
    #                                           end at max(10, 5) = 10: 0 ms of data
    fake.advance(10 * MS)                     # host at 15: the GPU drained at 10
    with t.phase("data"):                     # GPU 15
        fake.advance(3 * MS)                  # host stall with an idle GPU
    #                                           end at GPU 18: 3 ms of data
    fake.set_work_ns(2 * MS)
    with t.phase("optimizer"):                # GPU 20 (2 ms of earlier work first)
        pass                                  # end at GPU 22: optimizer 2 ms
    fake.set_work_ns(0)
    t.step()                                  # GPU 22: period 22 ms
    fake.advance(20 * MS)
    m = t.metrics()
    assert m["throughput/step_time_s"] == pytest.approx(22e-3, rel=1e-9)
    assert m["throughput/phase_s/forward"] == pytest.approx(4e-3, rel=1e-9)
    assert m["throughput/phase_s/backward"] == pytest.approx(6e-3, rel=1e-9)
    assert m["throughput/phase_s/data"] == pytest.approx(3e-3, rel=1e-9)   # 0 + 3
    assert m["throughput/phase_s/optimizer"] == pytest.approx(2e-3, rel=1e-9)
    lost = _lost(m)
    mfu = 5e11 / 1e15 / 22e-3                                  # ideal 0.5 ms of 22
    assert m["throughput/mfu"] == pytest.approx(mfu, rel=1e-9)
    assert lost["data"] == pytest.approx(3 / 22, rel=1e-9)
    assert lost["optimizer"] == pytest.approx(2 / 22, rel=1e-9)
    assert lost["compute"] == pytest.approx(10 / 22 - mfu, rel=1e-9)
    # 10..15 and 18..20: between phases, none running -- idle, carved out of
    # other (docs/waterfall.md); nothing else is unmarked
    assert lost["idle"] == pytest.approx(7 / 22, rel=1e-9)
    assert m["throughput/idle_s"] == pytest.approx(7e-3, rel=1e-9)
    assert lost["other"] == pytest.approx(0.0, abs=1e-12)
    assert "recompute" not in lost and "communication" not in lost
    assert _sums_to_one(m)
    assert fake.sync_calls() == 0


def test_idle_between_phases_is_carved_out_of_other(fake):
    """idle_s: from a phase's end to the next phase's start, none running;
    the time before a step's first phase and after its last stays in
    other; a step that marked no phase has none (the keys left out)."""
    t = Tracker(5e11, spec=SPEC, clock="cuda", stream=0, warmup=0, window=2)
    t.step()                                  # GPU 0
    fake.advance(2 * MS)                      # host at 2: before the first phase, other
    with t.phase("forward"):                  # GPU 2
        fake.set_work_ns(3 * MS)
    fake.set_work_ns(0)                       # forward ends at GPU 5
    fake.advance(6 * MS)                      # host at 8: the GPU drained at 5
    with t.phase("backward"):                 # GPU 8: idle 5 .. 8
        fake.set_work_ns(4 * MS)
    fake.set_work_ns(0)                       # backward ends at GPU 12
    fake.advance(8 * MS)                      # host at 16: after the last phase (12), other
    t.step()                                  # GPU 16: period 16 ms
    with t.phase("forward"):                  # GPU 16 (no gap: the step's first)
        fake.set_work_ns(10 * MS)
    fake.set_work_ns(0)
    t.step()                                  # GPU 26: period 10 ms, idle 0
    fake.advance(20 * MS)                     # host at 36: everything resolved
    m = t.metrics()
    lost = _lost(m)
    # per step over T = (16 + 10) / 2 = 13 ms: idle (3 + 0) / 2 = 1.5 ms, other
    # (2 + 4 + 0) / 2 = 3 ms; forward (3 + 10) / 2 and backward 4 / 2 in compute
    assert m["throughput/idle_s"] == pytest.approx(1.5e-3, rel=1e-9)
    assert lost["idle"] == pytest.approx(1.5 / 13, rel=1e-9)
    assert lost["other"] == pytest.approx(3 / 13, rel=1e-9)
    assert list(lost) == [k for k in LOSSES if k in lost] and _sums_to_one(m)
    assert [s["idle_s"] for s in t.window_steps()] == [pytest.approx(3e-3), 0.0]
    fake.advance(5 * MS)
    t.step()                                  # a step without phases: idle unknown
    m = t.metrics()
    assert "throughput/idle_s" not in m and "idle" not in _lost(m) and _sums_to_one(m)
    assert t.window_steps()[-1]["idle_s"] is None and "idle_s" not in t.summary()
    assert fake.sync_calls() == 0


def test_combine_idle_is_peak_weighted_like_every_share():
    """Across ranks: the idle share is the peak-weighted mean of the ranks'
    (weights 1 : 3), idle_s the mean; the row carries it per step."""
    r0 = dataclasses.replace(_row(0, 0.1, {"forward": 0.05}, peak=1e12),
                             sums=StepSums(model_flops=2e11, idle_s=0.02))
    r1 = dataclasses.replace(_row(1, 0.1, {"forward": 0.05}, peak=3e12),
                             sums=StepSums(model_flops=6e11, idle_s=0.01))
    g = combine([r0, r1])
    assert g.mfu_lost["idle"] == pytest.approx((1 * 0.2 + 3 * 0.1) / 4)
    assert g.metrics()["throughput/idle_s"] == pytest.approx(0.015)
    assert math.fsum([g.mfu, *g.mfu_lost.values()]) == 1.0
    assert RankFigures.from_row(r1.to_row()) == r1
    g = combine([r0, _row(1, 0.1, {"forward": 0.05}, peak=3e12)])  # rank 1: unknown
    assert "idle" not in g.mfu_lost and "throughput/idle_s" not in g.metrics()


def test_gpu_excluded_interval(fake):
    t = Tracker(5e11, spec=SPEC, clock="cuda", stream=0, warmup=0)
    t.step()                                  # GPU 0
    fake.set_work_ns(2 * MS)
    t._exclude_begin()                        # GPU 2
    fake.set_work_ns(0)
    fake.advance(10 * MS)                     # GPU idle from 2 to 10
    t._exclude_end()                          # GPU 10: 8 ms excluded
    fake.set_work_ns(1 * MS)
    t.step()                                  # GPU 11: period 11 - 8 = 3 ms
    fake.advance(5 * MS)
    assert t.summary()["step_time_s"] == pytest.approx(3e-3, rel=1e-9)
    assert t.phases()["excluded_s"] == pytest.approx(8e-3, rel=1e-9)
    assert fake.sync_calls() == 0


def test_phase_window_leaves_the_warmup_step_out(fake):
    # warmup=1: the first step (forward 9 ms) is left out of the phases as it is of
    # the periods; the window's two steps have forward 2 ms and 4 ms: (2 + 4) / 2 = 3 ms
    t = Tracker(5e11, spec=SPEC, clock="cuda", stream=0, warmup=1)
    t.step()
    for forward_ms in (9, 2, 4):
        t.begin_phase("forward")
        fake.set_work_ns(forward_ms * MS)
        t.end_phase()
        fake.set_work_ns(0)
        t.step()
    t.flush()
    s = t.summary()
    assert s["steps"] == 2
    assert s["phase_s"] == {"forward": pytest.approx(3e-3, rel=1e-9)}
    assert s["step_time_s"] == pytest.approx(3e-3, rel=1e-9)


def test_a_phase_marked_in_one_step_of_the_window_is_kept(fake):
    # step 1 marks data (3 ms) and forward (1 ms); step 2 only forward (1 ms):
    # data = 3 / 2 = 1.5 ms per step, forward = (1 + 1) / 2 = 1 ms
    t = Tracker(5e11, spec=SPEC, clock="cuda", stream=0, warmup=0)
    t.step()
    for data_ms in (3, None):
        if data_ms is not None:
            t.begin_phase("data")
            fake.set_work_ns(data_ms * MS)
            t.end_phase()
        t.begin_phase("forward")
        fake.set_work_ns(MS)
        t.end_phase()
        fake.set_work_ns(0)
        t.step()
    t.flush()
    assert t.summary()["phase_s"] == {"data": pytest.approx(1.5e-3, rel=1e-9),
                                      "forward": pytest.approx(1e-3, rel=1e-9)}


def test_excluded_time_inside_a_phase_leaves_the_phase(fake):
    # data runs from GPU 0 to 12 ms, of which 2..10 is the tracker's own time:
    # data = 12 - 8 = 4 ms, the period 12 - 8 = 4 ms, excluded 8 ms
    t = Tracker(5e11, spec=SPEC, clock="cuda", stream=0, warmup=0)
    t.step()                                  # GPU 0
    t.begin_phase("data")                     # GPU 0
    fake.set_work_ns(2 * MS)
    t._exclude_begin()                        # GPU 2
    fake.set_work_ns(0)
    fake.advance(10 * MS)
    t._exclude_end()                          # GPU 10
    fake.set_work_ns(2 * MS)
    t.end_phase()                             # GPU 12
    fake.set_work_ns(0)
    t.step()                                  # GPU 12
    t.flush()
    assert t.summary()["step_time_s"] == pytest.approx(4e-3, rel=1e-9)
    assert t.phases()["phase_s"] == {"data": pytest.approx(4e-3, rel=1e-9)}
    assert t.phases()["excluded_s"] == pytest.approx(8e-3, rel=1e-9)


def test_a_phase_mark_inside_excluded_time_charges_none_of_it(fake):
    # data runs from GPU 0; 2..10 is excluded; forward is marked at 6, inside it:
    # data = 0..2 = 2 ms, forward = 10..12 = 2 ms (the excluded 8 ms go to neither)
    t = Tracker(5e11, spec=SPEC, clock="cuda", stream=0, warmup=0)
    t.step()                                  # GPU 0
    t.begin_phase("data")                     # GPU 0
    fake.set_work_ns(2 * MS)
    t._exclude_begin()                        # GPU 2
    fake.set_work_ns(0)
    fake.advance(6 * MS)                      # host 6
    t.switch_phase("forward")                 # GPU 6
    fake.advance(4 * MS)                      # host 10
    t._exclude_end()                          # GPU 10
    fake.set_work_ns(2 * MS)
    t.end_phase()                             # GPU 12
    fake.set_work_ns(0)
    t.step()                                  # GPU 12: period 12 - 8 = 4 ms
    t.flush()
    assert t.summary()["step_time_s"] == pytest.approx(4e-3, rel=1e-9)
    assert t.phases()["phase_s"] == {"data": pytest.approx(2e-3, rel=1e-9),
                                     "forward": pytest.approx(2e-3, rel=1e-9)}
    assert t.phases()["excluded_s"] == pytest.approx(8e-3, rel=1e-9)


def test_excluded_seconds_are_per_step(fake):
    # step 1 excludes 8 ms, step 2 excludes 4 ms: excluded_s = (8 + 4) / 2 = 6 ms per step
    t = Tracker(5e11, spec=SPEC, clock="cuda", stream=0, warmup=0)
    t.step()                                  # GPU 0
    fake.set_work_ns(2 * MS)
    t._exclude_begin()                        # GPU 2
    fake.set_work_ns(0)
    fake.advance(10 * MS)                     # host 10
    t._exclude_end()                          # GPU 10: 8 ms excluded
    fake.set_work_ns(MS)
    t.step()                                  # GPU 11: period 11 - 8 = 3 ms
    fake.set_work_ns(0)
    fake.advance(5 * MS)                      # host 15
    t._exclude_begin()                        # GPU max(11, 15) = 15
    fake.advance(4 * MS)                      # host 19
    t._exclude_end()                          # GPU 19: 4 ms excluded
    fake.set_work_ns(MS)
    t.step()                                  # GPU 20: period 9 - 4 = 5 ms
    fake.set_work_ns(0)
    t.flush()
    s = t.summary()
    assert (s["steps"], s["window_s"]) == (2, pytest.approx(8e-3, rel=1e-9))      # 3 + 5
    assert t.phases()["excluded_s"] == pytest.approx(6e-3, rel=1e-9)            # (8 + 4) / 2


def test_local_metrics_on_a_gpu_clock_takes_no_mark(fake):
    t = Tracker(5e11, spec=SPEC, clock="cuda", stream=0, warmup=0)
    t.step()
    before = fake.calls("cuEventRecord")
    t.metrics()
    assert fake.calls("cuEventRecord") == before


# ---- distributed figures by hand ---------------------------------------------------


def _row(rank, step_s, phases, mfu=0.2, peak=1e12):
    return RankFigures(rank=rank, boundaries=11, steps=10, window_s=10 * step_s,
                       step_time_s=step_s, step_time_min_s=step_s, step_time_max_s=step_s,
                       sums=StepSums(model_flops=mfu * peak),   # model FLOP/s: mfu x peak
                       peak_flops_per_sec=peak, peak_bytes_per_sec=None, num_devices=1,
                       model_parallel=1, interval_s=1.0, interval_steps=10,
                       **{f"phase_{k}_s": v for k, v in phases.items()})


def test_combine_waterfall_and_straggler_by_hand():
    # DDP-like: equal periods of 0.1 s; rank 1 computes 0.09 s, rank 0 0.06 s and
    # waits 0.03 s more in the all-reduce (exposed communication 0.04 vs 0.01).
    r0 = _row(0, 0.1, {"forward": 0.02, "backward": 0.04, "communication": 0.04}, peak=1e12)
    r1 = _row(1, 0.1, {"forward": 0.05, "backward": 0.04, "communication": 0.01}, peak=3e12)
    g = combine([r0, r1])
    assert g.straggler_rank == 1
    # the other rank waited busy_1 - busy_0 = 0.09 - 0.06 = 0.03 s of the job's 0.1 s step
    assert g.straggler_lost == pytest.approx(0.3)
    # peak-weighted mean of the ranks' shares (weights 1 : 3)
    assert g.mfu_lost["communication"] == pytest.approx((1 * 0.4 + 3 * 0.1) / 4)
    assert g.mfu_lost["compute"] == pytest.approx((1 * (0.6 - 0.2) + 3 * (0.9 - 0.2)) / 4)
    assert g.phase_s["forward"] == pytest.approx(0.035)
    m = g.metrics()
    assert m["throughput/straggler_rank"] == 1.0
    assert math.fsum([m["throughput/mfu"], *_lost(m).values()]) == 1.0
    # no phases on one rank: no waterfall, no straggler keys
    g = combine([r0, _row(1, 0.1, {})])
    assert g.mfu_lost is None and g.straggler_rank is None
    assert not any("straggler" in k or "mfu_lost" in k for k in g.metrics())


def test_row_round_trip_keeps_phases():
    r = _row(2, 0.1, {"data": 0.01, "communication": 0.02})
    assert RankFigures.from_row(r.to_row()) == r
    assert r.phase_s == {"data": 0.01, "communication": 0.02}


# ---- the straggler tie-break: the lowest rank wins (docs) --------------------------------


def _busy_row(rank, communication_s, step_s=0.1):
    """A rank whose busy time is step_s - communication_s (forward holds the rest)."""
    return _row(rank, step_s, {"forward": step_s - communication_s,
                               "communication": communication_s})


@pytest.mark.parametrize("order", [(0, 1), (1, 0)])
def test_straggler_tie_on_two_ranks_is_rank_0(order):
    # busy 0.1 - 0.02 = 0.08 s on both ranks (the same double): a tie
    rows = {0: _busy_row(0, 0.02), 1: _busy_row(1, 0.02)}
    assert rows[0].busy_s == rows[1].busy_s
    g = combine([rows[r] for r in order])
    assert g.straggler_rank == 0
    assert g.straggler_lost == 0.0                     # (0.08 - 0.08) / 1 rank / 0.1 s
    assert g.metrics()["throughput/straggler_rank"] == 0.0


@pytest.mark.parametrize("order", [(0, 1, 2), (2, 1, 0), (1, 2, 0), (2, 0, 1)])
def test_straggler_tie_on_ranks_1_and_2_of_3_is_rank_1(order):
    # busy: rank 0 0.1 - 0.04 = 0.06 s; ranks 1 and 2 0.1 - 0.01 = 0.09 s (a tie)
    rows = {0: _busy_row(0, 0.04), 1: _busy_row(1, 0.01), 2: _busy_row(2, 0.01)}
    g = combine([rows[r] for r in order])              # any row order: the rule is the rank's
    assert g.straggler_rank == 1
    # the others' mean wait for rank 1: ((0.09 - 0.06) + (0.09 - 0.09)) / 2 / 0.1 = 0.15
    assert g.straggler_lost == pytest.approx(0.15, rel=1e-12)
    assert g.metrics()["throughput/straggler_rank"] == 1.0


def test_straggler_is_the_most_busy_rank_not_the_highest():
    # no tie: rank 0 is the busiest (0.1 - 0.0 = 0.1 s) against 0.07 and 0.09
    g = combine([_busy_row(2, 0.01), _busy_row(1, 0.03), _busy_row(0, 0.0)])
    assert g.straggler_rank == 0
    # ((0.1 - 0.07) + (0.1 - 0.09)) / 2 / 0.1 = 0.2
    assert g.straggler_lost == pytest.approx(0.2, rel=1e-12)


def test_straggler_lost_is_over_the_slowest_mean_period():
    # rank 0: period 0.1 s, busy 0.1 - 0.04 = 0.06 s; rank 1: period 0.12 s, busy 0.12 s.
    # The job's step time is the slowest mean period, 0.12 s: lost = (0.12 - 0.06) / 0.12
    g = combine([_busy_row(0, 0.04, step_s=0.1), _busy_row(1, 0.0, step_s=0.12)])
    assert g.straggler_rank == 1
    assert g.straggler_lost == pytest.approx(0.5, rel=1e-12)
