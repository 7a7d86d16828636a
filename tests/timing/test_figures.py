"""mfu_tracker/timing/_figures.py: a step engine's window figures -- totals
given at logging time replace the window's own sums, the collective kinds'
phases are summed into ``communication``, and the communication figures (and
their check) come only with an observer that saw the window's steps. A real
``_C.StepTracker`` on the CPU clock; the expected values are hand arithmetic
over the engine's own window seconds."""
from __future__ import annotations

import math

import pytest

from mfu_tracker._native import _C
from mfu_tracker.timing._figures import COMM_FIGURES, window_figures
from mfu_tracker.timing._totals import StepSums

PEAK = 1e15   # FLOP/s: far above what 1e6 FLOPs a step reach, so no MFU > 1 warning


class Check:
    """A communication observer that records each figures mapping it checks."""

    def __init__(self):
        self.seen = []

    def check(self, figures):
        self.seen.append(figures)


def engine(steps=3, *, phases=(), comm=False):
    """A CPU-clock engine with ``steps`` steps of 1e6 model FLOPs and 10 tokens,
    each marking ``phases`` (and, with ``comm``, one observed all-reduce)."""
    e = _C.StepTracker(model_flops=1e6, peak_flops_per_sec=PEAK, warmup=0)
    if comm:
        assert e._comm_subscribe()
    e.step()
    for _ in range(steps):
        for name in phases:
            e.begin_phase(name)
            e.end_phase()
        if comm:
            token = e._comm_begin("all_reduce", 1000.0, 1500.0, 1e9, True)
            e._comm_end(token)
        e.step(num_tokens=10)
    return e


def test_the_window_sums_and_ratios_without_totals():
    out = window_figures(engine())
    assert out["steps"] == 3 and out["model_flops"] == 3e6    # 3 steps x 1e6
    assert out["num_tokens"] == 30.0
    assert out["mfu"] == pytest.approx(3e6 / out["window_s"] / PEAK, rel=1e-12)
    assert "phase_s" not in out                        # nothing marked: no empty mapping
    assert not set(COMM_FIGURES) & set(out) and "comm_s" not in out


def test_given_totals_replace_the_windows_own():
    e = engine()
    out = window_figures(e, StepSums(model_flops=6e6, num_tokens=90.0))
    assert out["model_flops"] == 6e6 and out["num_tokens"] == 90.0
    assert out["mfu"] == pytest.approx(6e6 / out["window_s"] / PEAK, rel=1e-12)
    assert out["tokens_per_sec"] == pytest.approx(90.0 / out["window_s"], rel=1e-12)
    assert window_figures(e)["model_flops"] == 3e6    # the engine's own sums are kept


def test_the_kinds_phases_are_summed_into_communication():
    out = window_figures(engine(phases=("forward", "all_reduce", "p2p")))
    engine_phases = _C.StepTracker.summary(engine(phases=("all_reduce", "p2p")))["phase_s"]
    assert set(engine_phases) == {"all_reduce", "p2p"}     # the engine: one phase per kind
    assert set(out["phase_s"]) == {"forward", "communication"}
    assert "comm_s" not in out                              # no observer: no per-kind seconds


def test_an_observer_gets_the_kinds_seconds_and_checks_the_figures_once():
    check = Check()
    out = window_figures(engine(phases=("all_reduce", "p2p"), comm=True), comm=check)
    assert set(out["comm_s"]) == {"all_reduce", "p2p"}
    assert out["phase_s"]["communication"] == math.fsum(out["comm_s"].values())
    assert out["comm_bytes"] == {"all_reduce": 1000.0}
    assert set(COMM_FIGURES) <= set(out)
    assert len(check.seen) == 1 and check.seen[0] is out   # checked in full, once


def test_an_observer_over_a_window_without_steps_adds_nothing():
    check = Check()
    out = window_figures(engine(steps=0, comm=True), comm=check)   # one boundary, no step
    assert out["steps"] == 0 and out["mfu"] is None
    assert check.seen == [] and "comm_s" not in out
    assert not set(COMM_FIGURES) & set(out)
