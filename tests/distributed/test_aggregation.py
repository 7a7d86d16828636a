"""The aggregation arithmetic and the defined behaviour without peers, in-process.

combine() is checked by hand arithmetic; then the Tracker with no process
group, with a world-size-1 gloo group in this process, and after the group
is destroyed. Real multi-process runs are in test_torchrun.py.
"""
from __future__ import annotations

import dataclasses
import math
import warnings

import pytest

from mfu_tracker import user_gpu_spec
from mfu_tracker.distributed import ROW_FIELDS, ROW_LAYOUT, RankFigures, combine
from mfu_tracker.timing._totals import StepSums
from mfu_tracker.step import Tracker
from tests._process_group import process_group

SPEC = user_gpu_spec(1.0, name="fake", memory_bandwidth_tbs=1.0)  # 1e12 FLOP/s, 1e12 B/s
LOCAL_KEYS = {"mfu", "tokens_per_sec", "achieved_tflops", "step_time_s", "step_time_min_s",
              "step_time_max_s", "peak_tflops"}
RANK_KEYS = {"tokens_per_sec_per_device", "mfu_rank_min", "mfu_rank_mean", "mfu_rank_max",
             "step_time_rank_max", "step_time_rank_min", "slowest_rank"}


def row(rank, *, achieved=None, peak=1e12, tokens=None, executed=None, moved=None, bandwidth=None,
        steps=10, boundaries=11, step_time=0.1, interval=1.0, interval_steps=10, devices=1,
        mixed=None, language=None):
    """A rank's figures as the aggregation carries them (window of `steps` x
    `step_time`): the window's sums per second -- model FLOP/s (`achieved`),
    executed FLOP/s, bytes/s (`moved`), tokens/s; `mixed`, an mfu_mixed per
    device, as ideal seconds per second (x devices); `language`, an
    mfu_language, as language FLOP/s (x the peak)."""
    return RankFigures(
        rank=rank, boundaries=boundaries, steps=steps, window_s=steps * step_time,
        step_time_s=step_time, step_time_min_s=step_time * 0.5, step_time_max_s=step_time * 2,
        sums=StepSums(model_flops=achieved, executed_flops=executed, param_bytes=moved,
                      num_tokens=tokens, ideal_s=None if mixed is None else mixed * devices,
                      language_flops=None if language is None else language * peak),
        peak_flops_per_sec=peak, peak_bytes_per_sec=bandwidth, num_devices=devices,
        model_parallel=1, interval_s=interval, interval_steps=interval_steps)


def keys(metrics):
    return {k.split("/", 1)[1] for k in metrics}


# ---- combine(): hand arithmetic ------------------------------------------------

def test_two_ranks_by_hand():
    ranks = [row(0, achieved=4e11, tokens=1000.0, executed=5e11, interval=1.0),
             row(1, achieved=2e11, tokens=3000.0, executed=3e11, interval=1.5, step_time=0.12)]
    g = combine(ranks)
    assert g.mfu == pytest.approx((4e11 + 2e11) / (1e12 + 1e12))       # = 0.3
    assert g.hfu == pytest.approx((5e11 + 3e11) / 2e12)                # = 0.4
    assert g.achieved_flops_per_sec == pytest.approx(6e11)
    assert g.tokens_per_sec == pytest.approx(4000.0)
    assert g.tokens_per_sec_per_device == pytest.approx(2000.0)        # 4000 / 2 devices
    assert g.peak_flops_per_sec == pytest.approx(2e12)
    assert (g.mfu_rank_min, g.mfu_rank_max) == (pytest.approx(0.2), pytest.approx(0.4))
    assert g.mfu_rank_mean == pytest.approx(0.3)
    assert g.slowest_rank == 1
    assert g.step_time_rank_max == pytest.approx(0.15)                 # 1.5 s / 10 steps
    assert g.step_time_rank_min == pytest.approx(0.10)                 # 1.0 s / 10 steps
    assert g.step_time_s == pytest.approx(0.12)                        # the slower window mean
    assert g.step_time_min_s == pytest.approx(0.05) and g.step_time_max_s == pytest.approx(0.24)
    assert g.mbu is None                                               # no rank gave bytes
    assert g.steps_match and g.world_size == 2
    m = g.metrics("tp")
    assert m["tp/achieved_tflops"] == pytest.approx(0.6) and m["tp/peak_tflops"] == pytest.approx(2.0)
    assert m["tp/slowest_rank"] == 1.0
    assert keys(m) == LOCAL_KEYS | RANK_KEYS | {"hfu"}


def test_heterogeneous_peaks_weight_the_mean():
    # an 8-GPU process (num_gpus=8) beside a 1-GPU one: peak-weighted, not rank-weighted
    ranks = [row(0, achieved=4e12, peak=8e12, devices=8), row(1, achieved=9e11, peak=1e12)]
    g = combine(ranks)
    assert g.mfu == pytest.approx((4e12 + 9e11) / 9e12)                # = 0.5444...
    assert g.mfu_rank_mean == pytest.approx((0.5 + 0.9) / 2)           # = 0.7, unweighted
    assert g.mfu_rank_min <= g.mfu <= g.mfu_rank_max
    assert g.num_devices == 9


def test_mbu_sums_bytes_over_bandwidth():
    ranks = [row(0, achieved=1e11, moved=2e11, bandwidth=1e12),
             row(1, achieved=1e11, moved=6e11, bandwidth=2e12)]
    assert combine(ranks).mbu == pytest.approx(8e11 / 3e12)


def test_a_figure_missing_on_one_rank_is_left_out_not_summed_partially():
    ranks = [row(0, achieved=4e11, tokens=1000.0), row(1, achieved=None, tokens=1000.0)]
    g = combine(ranks)
    assert g.mfu is None and g.achieved_flops_per_sec is None and g.mfu_rank_min is None
    assert g.tokens_per_sec == pytest.approx(2000.0)
    assert "throughput/mfu" not in g.metrics() and "throughput/tokens_per_sec" in g.metrics()


def test_unknown_peak_leaves_mfu_out_but_keeps_the_rates():
    g = combine([row(0, achieved=4e11, peak=None), row(1, achieved=2e11, peak=None)])
    assert g.mfu is None and g.peak_flops_per_sec is None
    assert g.achieved_flops_per_sec == pytest.approx(6e11)


def test_a_rank_with_an_empty_window_empties_the_window_figures():
    g = combine([row(0, achieved=4e11), row(1, achieved=None, steps=0)])
    assert g.mfu is None and g.step_time_s is None
    assert g.slowest_rank == 0  # ties on interval time: the lowest rank


def test_steps_mismatch_and_interval_per_step():
    # rank 1 aggregated after 15 step() calls, rank 0 after 11: per-step interval compares
    g = combine([row(0, achieved=1e11, interval=1.0, interval_steps=10),
                 row(1, achieved=1e11, interval=1.2, interval_steps=15, boundaries=15)])
    assert not g.steps_match
    assert g.slowest_rank == 0 and g.step_time_rank_max == pytest.approx(0.1)  # 0.1 > 0.08


@pytest.mark.parametrize("order", [(0, 1), (1, 0)])
def test_slowest_rank_tie_on_two_ranks_is_rank_0(order):
    # interval step time 1.5 s / 10 = 0.15 s on both ranks: a tie, the lowest rank wins
    rows = {r: row(r, achieved=1e11, interval=1.5) for r in (0, 1)}
    g = combine([rows[r] for r in order])
    assert g.slowest_rank == 0
    assert g.step_time_rank_max == pytest.approx(0.15) and g.step_time_rank_min == pytest.approx(0.15)
    assert g.metrics()["throughput/slowest_rank"] == 0.0


@pytest.mark.parametrize("order", [(0, 1, 2), (2, 1, 0), (1, 2, 0), (2, 0, 1)])
def test_slowest_rank_tie_on_ranks_1_and_2_of_3_is_rank_1(order):
    # rank 0: 1.0 s / 10 = 0.1 s per step; ranks 1 and 2: 1.2 s / 8 = 0.15 s (a tie)
    rows = {0: row(0, achieved=1e11, interval=1.0),
            1: row(1, achieved=1e11, interval=1.2, interval_steps=8),
            2: row(2, achieved=1e11, interval=1.2, interval_steps=8)}
    g = combine([rows[r] for r in order])              # any row order: the rule is the rank's
    assert g.slowest_rank == 1
    assert g.step_time_rank_max == pytest.approx(0.15) and g.step_time_rank_min == pytest.approx(0.1)
    assert g.metrics()["throughput/slowest_rank"] == 1.0


def test_no_interval_steps_means_no_straggler_figure():
    g = combine([row(0, achieved=1e11, interval_steps=0), row(1, achieved=1e11)])
    assert g.slowest_rank is None and "throughput/slowest_rank" not in g.metrics()


def test_mixed_precision_measured_peak_and_telemetry_by_hand():
    # rank 0: 1 device, mfu_mixed 0.5; rank 1: an 8-device process, mfu_mixed 0.2
    r0 = dataclasses.replace(row(0, achieved=4e11, tokens=1000.0, mixed=0.5),
                             measured_flops_per_sec=8e11, power_w=300.0, sm_clock_mhz=1800.0,
                             clock_ratio=0.9, throttled=0.0)
    r1 = dataclasses.replace(row(1, achieved=2e11, tokens=3000.0, devices=8, mixed=0.2),
                             measured_flops_per_sec=4e11, power_w=500.0, sm_clock_mhz=1400.0,
                             clock_ratio=0.7, throttled=1.0)
    g = combine([r0, r1])
    assert g.mfu_mixed == pytest.approx((0.5 * 1 + 0.2 * 8) / 9)         # device-weighted: 0.2333
    assert g.mfu_vs_measured == pytest.approx((4e11 + 2e11) / (8e11 + 4e11))  # = 0.5
    assert g.power_w == pytest.approx(800.0)                             # 300 + 500 W
    assert g.energy_j_per_token == pytest.approx(800.0 / 4000.0)         # 0.2 J per token
    assert g.tflops_per_watt == pytest.approx(0.6 / 800.0)               # 0.6 TFLOP/s over 800 W
    assert g.sm_clock_mhz == pytest.approx(1600.0)                       # mean of 1800, 1400
    assert g.clock_ratio == pytest.approx(0.7)                           # the lowest
    assert g.throttled == 1.0                                            # any rank
    m = g.metrics("tp")
    assert keys(m) >= {"mfu_mixed", "mfu_vs_measured", "power_w", "energy_j_per_token",
                                    "tflops_per_watt", "sm_clock_mhz", "clock_ratio", "throttled"}
    assert RankFigures.from_row(r1.to_row()) == r1


def test_mixed_precision_and_telemetry_missing_on_one_rank_are_left_out():
    r0 = dataclasses.replace(row(0, achieved=4e11, tokens=1000.0, mixed=0.5), power_w=300.0,
                             measured_flops_per_sec=8e11, clock_ratio=0.9)
    r1 = row(1, achieved=2e11, tokens=3000.0)                            # no telemetry, no mixed
    g = combine([r0, r1])
    assert (g.mfu_mixed, g.mfu_vs_measured, g.power_w, g.energy_j_per_token, g.tflops_per_watt,
            g.sm_clock_mhz, g.clock_ratio, g.throttled) == (None,) * 8
    assert not keys(g.metrics()) & {"mfu_mixed", "mfu_vs_measured", "power_w", "clock_ratio"}


def test_mfu_language_is_peak_weighted_like_mfu():
    # rank 0: peak 1e12, mfu 0.4 of which language 0.3; rank 1: peak 3e12,
    # mfu 0.2, language 0.1 -> (1e12 * 0.3 + 3e12 * 0.1) / 4e12 = 0.15, the
    # job's language FLOP/s (3e11 + 3e11) over its peak (4e12)
    r0 = row(0, achieved=4e11, language=0.3)
    r1 = row(1, achieved=6e11, peak=3e12, language=0.1)
    g = combine([r0, r1])
    assert g.mfu_language == pytest.approx(0.15)
    assert g.mfu == pytest.approx(1e12 / 4e12)
    assert g.metrics("t")["t/mfu_language"] == pytest.approx(0.15)
    # a rank without it (not a VLM step there): left out
    assert combine([r0, row(1, achieved=6e11, peak=3e12)]).mfu_language is None
    r = row(3, achieved=1.5e11, language=0.1)
    assert RankFigures.from_row(r.to_row()) == r


def test_row_round_trip():
    r = row(3, achieved=1.5e11, tokens=None, executed=2e11)
    values = r.to_row()
    assert len(values) == len(ROW_FIELDS) and values[0] == ROW_LAYOUT and int(ROW_LAYOUT) == 6
    assert math.isnan(values[ROW_FIELDS.index("num_tokens_per_sec")])
    assert RankFigures.from_row(values) == r


def test_combine_needs_a_rank():
    with pytest.raises(ValueError):
        combine([])


# ---- Tracker without a process group ----------------------------------------------

def steps(tracker, n, tokens=100):
    tracker.step()
    for _ in range(n):
        tracker.step(tokens)


def test_no_process_group_is_local_and_silent():
    t = Tracker(1e3, spec=SPEC, warmup=0)
    assert not t.distributed
    steps(t, 3)
    assert keys(t.metrics()) == LOCAL_KEYS
    assert t.distributed_counters()["collectives"] == 0
    g = t.aggregate()  # a one-rank aggregation, no communication
    assert g.mfu == t.summary()["mfu"] and g.world_size == 1 and g.slowest_rank is None


def test_configuration_errors_raise_at_construction():
    with pytest.raises(ValueError, match="distributed=True needs an initialized"):
        Tracker(1e3, spec=SPEC, distributed=True)
    with pytest.raises(TypeError, match="distributed"):
        Tracker(1e3, spec=SPEC, distributed="yes")
    for bad in (0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="distributed_timeout"):
            Tracker(1e3, spec=SPEC, distributed_timeout=bad)
    with pytest.raises(TypeError, match="distributed_timeout"):
        Tracker(1e3, spec=SPEC, distributed_timeout="60")
    for name in ("tensor_parallel", "sequence_parallel", "context_parallel", "pipeline_parallel"):
        with pytest.raises(ValueError, match=name):
            Tracker(1e3, spec=SPEC, **{name: 0})
        with pytest.raises(TypeError, match=name):
            Tracker(1e3, spec=SPEC, **{name: True})


def test_parallel_degrees_divide_the_replica_figures():
    # tp 2 x cp 2: the 4e3 replica FLOPs per step count a quarter on this rank,
    # so this rank's MFU is the replica's FLOP/s over 4 GPUs' peak.
    t = Tracker(4e3, spec=SPEC, warmup=0, tensor_parallel=2, context_parallel=2)
    assert t.model_parallel == 4
    steps(t, 5, tokens=400)
    s = t.summary()
    assert s["peak_flops_per_sec"] == pytest.approx(4e12)
    assert s["mfu"] == pytest.approx(4e3 * 5 / s["window_s"] / 4e12, rel=1e-12)
    r = t.rank_figures()
    assert r.achieved_flops_per_sec == pytest.approx(1e3 * 5 / s["window_s"], rel=1e-12)
    assert r.tokens_per_sec == pytest.approx(100 * 5 / s["window_s"], rel=1e-12)
    assert r.peak_flops_per_sec == pytest.approx(1e12) and r.model_parallel == 4
    assert r.mfu == pytest.approx(s["mfu"], rel=1e-12)


def test_aggregate_overrides_window_totals():
    t = Tracker(None, spec=SPEC, warmup=0)  # FLOPs known only at "logging time"
    steps(t, 4)
    w = t.summary()["window_s"]
    g = t.aggregate(model_flops=8e9, executed_flops=1e10, num_tokens=4000)
    assert g.achieved_flops_per_sec == pytest.approx(8e9 / w, rel=1e-12)
    assert g.mfu == pytest.approx(8e9 / w / 1e12, rel=1e-12)
    assert g.hfu == pytest.approx(1e10 / w / 1e12, rel=1e-12)
    assert g.tokens_per_sec == pytest.approx(4000 / w, rel=1e-12)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        g = t.aggregate(model_flops=-1.0)  # a bad value: a warning and no MFU, never a raise
    assert g.mfu is None and len(caught) == 1 and "model_flops" in str(caught[0].message)


# ---- a world-size-1 process group in this process ------------------------------

@pytest.fixture
def world_of_one():
    with process_group("gloo", world_size=1) as dist:
        yield dist


def test_world_size_one_same_keys_no_collective(world_of_one):
    t = Tracker(1e3, spec=SPEC, warmup=0)
    assert t.distributed
    steps(t, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = t.metrics()
    assert keys(m) == LOCAL_KEYS | RANK_KEYS
    assert m["throughput/mfu"] == m["throughput/mfu_rank_min"] == t.summary()["mfu"]
    assert m["throughput/slowest_rank"] == 0.0
    assert t.distributed_counters() == {"aggregations": 1, "collectives": 0, "failures": 0,
                                        "world_size": 1, "active": 1}
    assert keys(Tracker(1e3, spec=SPEC, distributed=False).metrics()) == set()  # opted out, empty


def test_world_size_one_keeps_mfu_mixed(world_of_one):
    from mfu_tracker import lookup_gpu_spec

    h100 = lookup_gpu_spec("NVIDIA H100 80GB HBM3", num_sms=132)         # fp8 1978.9, bf16 989.4
    t = Tracker(None, spec=h100, dtype="bf16", warmup=0, clock="cpu",
                flops_by_dtype={"fp8": 4e6, "bf16": 1e6})
    assert t.distributed
    steps(t, 3)
    local = t.summary()
    m = t.metrics()
    # one rank, one device: the global value is the rank's own
    assert m["throughput/mfu_mixed"] == pytest.approx(local["mfu_mixed"])
    window_s = local["window_s"]
    assert m["throughput/mfu_mixed"] == pytest.approx(
        3 * (4e6 / 1978.9e12 + 1e6 / 989.4e12) / window_s)
    assert "throughput/mfu_rank_min" in m                               # the distributed path


def test_world_size_one_rejects_degrees_that_do_not_divide_it(world_of_one):
    with pytest.raises(ValueError, match="does not divide the world size 1"):
        Tracker(1e3, spec=SPEC, tensor_parallel=2)
    Tracker(1e3, spec=SPEC, tensor_parallel=2, distributed=False)  # local: allowed


def test_prefix_is_checked_before_the_collective(world_of_one):
    t = Tracker(1e3, spec=SPEC, warmup=0)
    steps(t, 2)
    with pytest.raises(TypeError, match="prefix"):
        t.metrics(3)
    assert t.distributed_counters()["aggregations"] == 0
    assert "perf/mfu_rank_max" in t.metrics(prefix="perf")


def test_destroyed_process_group_falls_back_to_local(world_of_one):
    t = Tracker(1e3, spec=SPEC, warmup=0)
    steps(t, 2)
    world_of_one.destroy_process_group()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # defined behaviour, not a fault: no warning
        assert keys(t.metrics()) == LOCAL_KEYS
    assert not t.distributed


def test_close_ends_aggregation(world_of_one):
    t = Tracker(1e3, spec=SPEC, warmup=0)
    steps(t, 2)
    t.close()
    assert not t.distributed and keys(t.metrics()) == LOCAL_KEYS
