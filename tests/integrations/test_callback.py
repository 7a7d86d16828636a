"""The core every framework callback shares (integrations/_callback.py):
configuration errors name the argument; the step cycle driven by hand on a
tiny model books each step's counted FLOPs; a failing hook warns once.

Model: Linear(8 -> 4, no bias), input (2, 8) without grad: forward 2 x 2 x 8
x 4 = 128 FLOPs, backward only the weight's gradient (128): 256 a step.
"""
from __future__ import annotations

import warnings

import pytest
import torch

from mfu_tracker.integrations._callback import CallbackCore, guarded

STEP = 2 * (2 * 2 * 8 * 4)       # = 256


@pytest.mark.parametrize("kwargs, name", [
    ({"num_gpus": 0}, "num_gpus"), ({"count_every": -1}, "count_every"),
    ({"window": 0}, "window"), ({"warmup": -1}, "warmup"),
    ({"causal_attention": "quarter"}, "causal_attention"), ({"clock": "sundial"}, "clock"),
    ({"phases": "yes"}, "phases"), ({"metric_prefix": 3}, "metric_prefix"),
    ({"peak_tflops": -1.0}, "peak_tflops"), ({"telemetry": 3}, "telemetry"),
    ({"hfu_backward_factor": 1.0, "backward_factor": 2.0}, "backward_factor"),
])
def test_a_bad_argument_is_an_error_naming_it(kwargs, name):
    with pytest.raises((TypeError, ValueError), match=name):
        CallbackCore(**kwargs)


def _cycle(core, model, steps):
    for _ in range(steps):
        core._open_step()
        core._step.record_inputs((torch.zeros(2, 8, dtype=torch.long),), {})
        model(torch.ones(2, 8)).sum().backward()
        core._stop_counting()
        core._mark("optimizer")
        core._close_step()


def test_the_step_cycle_books_each_counted_step():
    core = CallbackCore(peak_tflops=1.0, clock="cpu", warmup=0, metric_prefix="t")
    model = torch.nn.Linear(8, 4, bias=False)
    core._start(model, dtype="fp32", window=3, device="cpu")
    assert core.resolved_dtype == "fp32"
    _cycle(core, model, 3)
    out = core._window_metrics(step=3)
    entry = core.history[-1]
    assert entry["steps"] == 3
    assert entry["step_flops"] == [STEP, STEP, STEP]
    assert entry["model_flops"] == 3 * STEP
    assert entry["tokens"] == 3 * 16                 # 2 x 8 positions a step
    assert entry["peak_flops_per_sec"] == 1e12 and entry["dtype"] == "fp32"
    assert out is entry["metrics"] and any(key.startswith("t/") for key in out)
    assert core._window_metrics(step=3) is None      # nothing new since
    core._stop(3)
    assert core._tracker.closed


def test_count_every_two_scales_the_step_in_between():
    core = CallbackCore(peak_tflops=1.0, clock="cpu", warmup=0, count_every=2)
    model = torch.nn.Linear(8, 4, bias=False)
    core._start(model, dtype="fp32", window=2, device="cpu")
    _cycle(core, model, 2)
    core._window_metrics(step=2)
    assert core.history[-1]["step_flops"] == [STEP, STEP]   # the same shapes: the same FLOPs
    core._stop()


def test_a_model_that_is_not_a_module_warns_once():
    core = CallbackCore()
    with pytest.warns(RuntimeWarning, match="no model in on_train_begin"):
        assert core._is_model(None, "on_train_begin") is False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert core._is_model(None, "on_train_begin") is False     # not again


def test_a_guarded_hook_never_raises_and_warns_once():
    class Adapter(CallbackCore):
        @guarded
        def on_step_end(self):
            raise RuntimeError("boom")

    adapter = Adapter()
    with pytest.warns(RuntimeWarning, match=r"MFUCallback.on_step_end failed \(RuntimeError\('boom'\)"):
        assert adapter.on_step_end() is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        adapter.on_step_end()
