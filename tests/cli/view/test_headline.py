"""mfu_tracker/cli/view/_headline.py: the run's facts, the peak and MFU's
denominator, model FLOPs per step, and MFU's formula applied to its inputs."""
from __future__ import annotations

import pytest

from mfu_tracker.cli.view._figure import Newest
from mfu_tracker.cli.view._headline import (FLOPS_WORDS, NOT_RECORDED, flops_how, headline,
                                            peak_figure, run_facts)
from mfu_tracker.job._records import Run
from mfu_tracker.peaks._table import GIVE_A_PEAK

from cli.view._pages import figures


def run(**record):
    base = {"record": "run", "time": 1.0, "run_id": "a", "ranks": 2, "devices": 2,
            "peak_tflops": 100.0, "peak_source": "datasheet", "dtype": "bf16",
            "device": "H100 SXM"}
    return Run(number=1, record={**base, **record}, line=1)


def test_flops_how_and_run_facts():
    assert flops_how(run(model={"flops": "counted"})) == "counted"
    assert flops_how(run(model={"flops": "guessed"})) == "" and flops_how(run()) == ""
    facts = run_facts(run(model={"config": {"model_type": "llama"}, "seq_len": 2048}))
    assert (facts["model_type"], facts["seq_len"], facts["devices"], facts["ended"]) == \
        ("llama", 2048, 2, False)


def test_the_peak_figure():
    peak = peak_figure(run())
    assert (peak.value, peak.how) == (100.0, "looked up")
    assert peak.formula == "the peak table's row for H100 SXM, dense bf16"
    assert peak.source == "line 1 (run record): peak_tflops, peak_source='datasheet'"
    none = peak_figure(run(peak_tflops=None, peak_source=None, device=None))
    assert none.value is None
    assert none.absent == f"no peak for the device (unknown): {GIVE_A_PEAK}"


def test_mfu_formula_applied_to_the_logged_inputs():
    # peak 100 TFLOP/s x 2 devices = 200; achieved 50 TFLOP/s x 0.5 s = 2.5e13 FLOPs per step;
    # MFU = 2.5e13 / 0.5 s / 2e14 = 0.25
    records = [{"_line": 2, "step": 10, "p/mfu": 0.25, "p/achieved_tflops": 50.0,
                "p/step_time_s": 0.5, "p/peak_tflops": 200.0}]
    head = headline(Newest(records, "p"), run(model={"flops": "counted"}), None)
    found = figures(head)
    assert found["peak_tflops"]["value"] == 200.0 and found["peak_tflops"]["check"] == 200.0
    assert found["model_flops_per_step"]["value"] == 2.5e13
    assert found["model_flops_per_step"]["how"] == "counted"
    assert found["mfu"]["value"] == 0.25
    assert found["mfu"]["check"] == pytest.approx(0.25, rel=1e-15)
    assert head["flops"] == FLOPS_WORDS["counted"] and head["flops_how"] == "counted"
    assert found["hfu"]["absent"].startswith("needs the executed FLOPs")
    assert "mfu_mixed" not in found         # listed only when logged


def test_without_a_peak_mfu_says_why():
    records = [{"_line": 2, "step": 10, "p/step_time_s": 0.5}]
    head = headline(Newest(records, "p"), run(peak_tflops=None), "no MFU: no peak")
    found = figures(head)
    assert found["mfu"]["value"] is None and found["mfu"]["absent"] == "no MFU: no peak"
    assert found["model_flops_per_step"]["absent"].startswith("needs the model FLOPs")
    assert head["flops"] == NOT_RECORDED and head["flops_how"] is None
