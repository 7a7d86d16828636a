"""Automatic phase marks (integrations/_auto_phases.py) on a real Tracker and
module: a training forward marks forward, then backward; an eval forward
marks nothing; a compiled model's first step is compile."""
from __future__ import annotations

import time
import types

import torch

from mfu_tracker import Tracker
from mfu_tracker.integrations._auto_phases import AutoPhases, is_compiled

SLEEP_S = 0.02


class Slow(torch.nn.Module):
    """A forward that takes at least SLEEP_S (so its phase has seconds)."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x):
        time.sleep(SLEEP_S)
        return self.linear(x)


def _tracker():
    return Tracker(1e6, dtype="fp32", peak_tflops=1.0, clock="cpu", window=1, warmup=0)


def _step(tracker, phases, model):
    phases.data()
    model(torch.ones(2, 4)).sum().backward()
    phases.optimizer()
    time.sleep(SLEEP_S)
    phases.end()
    assert tracker.phase_depth() == 0
    tracker.step()


def test_a_training_step_marks_forward_backward_and_optimizer():
    tracker, model = _tracker(), Slow()
    phases = AutoPhases(tracker)
    phases.attach(model)
    tracker.step()
    _step(tracker, phases, model)
    phase_s = tracker.phases()["phase_s"]
    assert phase_s["forward"] >= SLEEP_S           # the sleep is inside the forward
    assert phase_s["optimizer"] >= SLEEP_S
    assert "backward" in phase_s
    tracker.close()


def test_eval_and_no_grad_forwards_are_not_marked_and_detach_stops_marks():
    tracker, model = _tracker(), Slow()
    phases = AutoPhases(tracker)
    phases.attach(model)
    with torch.no_grad():
        model(torch.ones(1, 4))
    model.eval()
    model(torch.ones(1, 4))
    assert tracker.phase_depth() == 0
    model.train()
    model(torch.ones(1, 4))
    assert tracker.phase_depth() == 1              # backward, open until the next event
    phases.end()
    phases.detach()
    model(torch.ones(1, 4))
    assert tracker.phase_depth() == 0
    tracker.close()


def test_before_first_forward_runs_once():
    tracker, model = _tracker(), Slow()
    phases = AutoPhases(tracker)
    calls = []
    phases.before_first_forward = lambda: calls.append(1)
    phases.attach(model)
    model(torch.ones(1, 4))
    model(torch.ones(1, 4))
    assert calls == [1]
    phases.end()
    tracker.close()


def test_a_compiled_models_first_step_is_compile_then_forward():
    tracker, model = _tracker(), Slow()
    phases = AutoPhases(tracker)
    phases.compiled(model, declared=True)          # as HF's torch_compile=True declares it
    phases.attach(model)
    tracker.step()
    _step(tracker, phases, model)                  # first step: compile
    # compile is badput: it leaves the step's phases for the job ledger
    assert tracker.ledger()["phase_s"]["compile"] >= SLEEP_S
    assert tracker.phases()["phase_s"].get("forward", 0.0) == 0.0
    _step(tracker, phases, model)                  # the next: forward again
    assert tracker.phases()["phase_s"]["forward"] >= SLEEP_S
    tracker.close()


def test_is_compiled():
    model = torch.nn.Linear(2, 2)
    assert not is_compiled(model)
    # torch.compile's OptimizedModule holds the eager module as _orig_mod (building a
    # real one imports dynamo: seconds), nn.Module.compile() sets _compiled_call_impl
    assert is_compiled(types.SimpleNamespace(_orig_mod=model))
    assert is_compiled(types.SimpleNamespace(_compiled_call_impl=model.forward))

    class LightningLike:
        _compiler_ctx = {"compiler": "dynamo"}

    assert is_compiled(LightningLike())
