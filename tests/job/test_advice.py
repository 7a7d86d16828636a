"""The advice rules (mfu_tracker.job._advice.RULES): each fires on evidence
built to meet it, with its bound worked out beside it, stays silent below
its threshold, and says what to turn on when its input is missing."""
from __future__ import annotations

import pytest

from mfu_tracker.breakdown._record import CLASSES, Breakdown, ClassTime
from mfu_tracker.job import _advice as A
from mfu_tracker.job._advice import Advice, Evidence, Needs

P = "throughput"
RULE = {r.name: r for r in A.RULES}


def breakdown(step_s=1.0, idle=0.0, counts=None, peak=None, compiled=False, flops=None, **times):
    """A breakdown of ``step_s`` seconds: each class's time (active = time)."""
    counts = counts or {}
    classes = {c: ClassTime(time_s=times.get(c, 0.0), active_s=times.get(c, 0.0),
                            count=counts.get(c, 1 if times.get(c) else 0),
                            flops=(flops or {}).get(c)) for c in CLASSES}
    assert sum(times.values()) + idle == pytest.approx(step_s)
    return Breakdown(step_s=step_s, idle_s=idle, classes=classes, step=7,
                     peak_flops_per_sec=peak, compiled=compiled)


def lines(**values):
    """A metrics line: ``throughput/<name>`` for each value (``__`` is ``/``)."""
    return {"step": 100, **{f"{P}/{k.replace('__', '/')}": v for k, v in values.items()}}


def check(name, metrics=None, b=None, ranks=None):
    return RULE[name].check(Evidence(prefix=P, metrics=metrics, breakdown=b,
                                     breakdown_step=None if b is None else b.step,
                                     ranks=ranks), RULE[name])


# ---- selective checkpointing: recompute >= 5% and headroom >= 20% -----------------

def test_recompute():
    fire = check("selective_checkpointing",
                 lines(mfu_lost__recompute=0.30, memory__peak_reserved_frac=0.60))
    assert isinstance(fire, Advice) and fire.bound == 0.30
    assert "recompute 30.0%" in fire.evidence and "memory headroom 40.0%" in fire.evidence
    assert "throughput/memory/peak_reserved_frac 0.600" in fire.evidence
    # below either threshold: silent
    assert check("selective_checkpointing", lines(mfu_lost__recompute=0.04,
                                                  memory__peak_reserved_frac=0.1)) is None
    assert check("selective_checkpointing", lines(mfu_lost__recompute=0.30,
                                                  memory__peak_reserved_frac=0.85)) is None
    # no memory keys: says what to turn on, with the evidence it has
    need = check("selective_checkpointing", lines(mfu_lost__recompute=0.30))
    assert isinstance(need, Needs) and "memory=True" in need.needs and "30.0%" in need.needs
    # a waterfall without recompute: executed FLOPs; no waterfall: the waterfall
    assert "executed FLOPs" in check("selective_checkpointing", lines(mfu_lost__data=0.1)).needs
    assert "mfu_lost/*" in check("selective_checkpointing", lines(step_time_s=1.0)).needs


# ---- compile: elementwise + reduction >= 20%, nothing compiled --------------------

def test_compile():
    fire = check("compile", b=breakdown(elementwise=0.15, reduction=0.10, gemm=0.75))
    assert isinstance(fire, Advice) and fire.bound == pytest.approx(0.25)   # 0.15 + 0.10
    assert "25.0%" in fire.evidence and "kernel_share/elementwise 0.150" in fire.evidence
    assert check("compile", b=breakdown(elementwise=0.10, reduction=0.09, gemm=0.81)) is None
    assert check("compile", b=breakdown(elementwise=0.15, reduction=0.10, gemm=0.75,
                                        compiled=True)) is None
    assert "profile_steps" in check("compile", lines(mfu_lost__data=0.1)).needs


# ---- launch-bound: idle >= 10% and < 50 us of work per kernel --------------------

def test_launch_bound():
    # 0.8 s of work over 20000 kernels: 40 us each; idle 0.2 of 1 s
    fire = check("launch_bound", b=breakdown(idle=0.2, gemm=0.8, counts={"gemm": 20000}))
    assert isinstance(fire, Advice) and fire.bound == pytest.approx(0.2)
    assert "40.0 us" in fire.evidence and "kernel_share/idle 0.200" in fire.evidence
    # 0.8 s over 10000: 80 us each: long enough, silent; idle 5%: silent
    assert check("launch_bound", b=breakdown(idle=0.2, gemm=0.8, counts={"gemm": 10000})) is None
    assert check("launch_bound", b=breakdown(idle=0.05, gemm=0.95,
                                             counts={"gemm": 100000})) is None
    assert isinstance(check("launch_bound"), Needs)


# ---- exposed communication --------------------------------------------------------

def test_all_gather_and_gradient_reduction():
    fire = check("fsdp_prefetch", lines(comm_s__all_gather=0.12, step_time_s=1.2))
    assert isinstance(fire, Advice) and fire.bound == pytest.approx(0.1)    # 0.12 / 1.2
    assert "throughput/comm_s/all_gather 0.12 s" in fire.evidence
    assert check("fsdp_prefetch", lines(comm_s__all_gather=0.05, step_time_s=1.2)) is None
    both = check("gradient_reduction", lines(comm_s__reduce_scatter=0.03, comm_s__all_reduce=0.03,
                                             step_time_s=1.0))
    assert isinstance(both, Advice) and both.bound == pytest.approx(0.06)   # 0.03 + 0.03
    assert check("gradient_reduction", lines(comm_s__all_reduce=0.04, step_time_s=1.0)) is None
    # no comm keys: one process has nothing to say; several ranks need the observer
    assert check("fsdp_prefetch", lines(step_time_s=1.0), ranks=1) is None
    assert "communication observer" in check("fsdp_prefetch", lines(step_time_s=1.0),
                                             ranks=8).needs
    assert "step_time_s" in check("fsdp_prefetch", lines(comm_s__all_gather=0.1)).needs


# ---- optimizer, data ---------------------------------------------------------------

def test_optimizer():
    fire = check("fused_optimizer", lines(mfu_lost__optimizer=0.08))
    assert isinstance(fire, Advice) and fire.bound == 0.08
    assert check("fused_optimizer", lines(mfu_lost__optimizer=0.04)) is None
    # from the breakdown when the waterfall lacks it
    fire = check("fused_optimizer", b=breakdown(optimizer=0.1, gemm=0.9))
    assert isinstance(fire, Advice) and fire.bound == pytest.approx(0.1)
    assert isinstance(check("fused_optimizer"), Needs)
    # a waterfall whose steps mark no optimizer phase: the phase is what is missing
    needs = check("fused_optimizer", lines(mfu_lost__data=0.1, mfu_lost__compute=0.6)).needs
    assert "optimizer phase marked" in needs and "the waterfall (mfu_lost/*)" not in needs
    assert "the waterfall (mfu_lost/*)" in check("fused_optimizer").needs


def test_data():
    fire = check("data_loading", lines(mfu_lost__data=0.2))
    assert isinstance(fire, Advice) and fire.bound == 0.2 and "throughput/mfu_lost/data" in \
        fire.evidence
    assert check("data_loading", lines(mfu_lost__data=0.049)) is None
    assert "tracker.phase('data')" in check("data_loading", lines(mfu_lost__compute=0.5)).needs


# ---- GEMM shapes: GEMM >= 20%, < 50% of peak, < 50 us per kernel ------------------

def test_gemm_shapes():
    # 0.5 s of GEMM over 20000 kernels (25 us each) doing 1e14 FLOPs: 200
    # TFLOP/s of a 1000 TFLOP/s peak = 20%; bound 0.5 x (1 - 0.2) = 0.4
    b = breakdown(gemm=0.5, elementwise=0.5, counts={"gemm": 20000}, peak=1e15,
                  flops={"gemm": 1e14})
    fire = check("gemm_shapes", b=b)
    assert isinstance(fire, Advice) and fire.bound == pytest.approx(0.4)
    assert "20.0% of the peak" in fire.evidence and "25.0 us per kernel" in fire.evidence
    # at 60% of the peak: silent; long kernels: silent; no peak: needs one
    assert check("gemm_shapes", b=breakdown(gemm=0.5, elementwise=0.5, counts={"gemm": 20000},
                                            peak=1e15, flops={"gemm": 3e14})) is None
    assert check("gemm_shapes", b=breakdown(gemm=0.5, elementwise=0.5, counts={"gemm": 100},
                                            peak=1e15, flops={"gemm": 1e14})) is None
    need = check("gemm_shapes", b=breakdown(gemm=0.5, elementwise=0.5, counts={"gemm": 20000},
                                            flops={"gemm": 1e14}))
    assert isinstance(need, Needs) and "peak_tflops" in need.needs


def test_advice_is_ranked_by_bound_and_every_rule_is_judged():
    ev = Evidence(prefix=P, metrics=lines(mfu_lost__data=0.06, mfu_lost__optimizer=0.3,
                                          mfu_lost__recompute=0.0, step_time_s=1.0),
                  breakdown=breakdown(elementwise=0.15, reduction=0.10, gemm=0.75), ranks=1)
    advice, needs = A.advise(ev)
    assert [a.rule for a in advice] == ["fused_optimizer", "compile", "data_loading"]
    assert [a.bound for a in advice] == sorted((a.bound for a in advice), reverse=True)
    assert needs == []          # every rule had its inputs (or nothing to judge)


def test_rates_divide_by_the_time_a_class_ran_not_the_time_it_won():
    # GEMMs ran 0.4 s (active) over 4 kernels; attention, first in priority,
    # won 0.1 s of it on another stream: GEMM's time (its share) is 0.3 s
    b = breakdown(gemm=0.3, attention=0.7, counts={"gemm": 4}, peak=1e15,
                  flops={"gemm": 2e14})
    b.classes["gemm"].active_s = 0.4
    assert b.mean_s("gemm") == pytest.approx(0.1)                  # 0.4 s / 4 kernels
    assert b.tflops("gemm") == pytest.approx(500.0)                # 2e14 / 0.4 s
    assert b.peak_share("gemm") == pytest.approx(0.5)              # 500 / 1000 TFLOP/s
