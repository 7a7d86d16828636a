"""mfu_tracker/distributed/_comm_hook.py: attach_ddp on a real DDP model
(a gloo group of one in this process) -- the marking hook switches an open
phase to "communication" after the last bucket, the gradients are the
all-reduce's; a model that is not DDP is refused naming ``model``."""
from __future__ import annotations

import pytest
import torch

from mfu_tracker import Tracker
from mfu_tracker.distributed._comm_hook import attach_ddp, attach_ddp_or_warn

from tests._process_group import process_group


def test_a_model_that_is_not_ddp_is_refused():
    tracker = Tracker(1.0, dtype="fp32", peak_tflops=1.0, clock="cpu", distributed=False)
    with pytest.raises(TypeError, match="model"):
        attach_ddp(tracker, torch.nn.Linear(2, 2))
    messages = []
    assert attach_ddp_or_warn(tracker, torch.nn.Linear(2, 2), messages.append, "do X") is False
    assert len(messages) == 1 and messages[0].endswith("do X")
    tracker.close()


def test_the_marking_hook_moves_the_wait_into_communication():
    with process_group("gloo", 1):
        torch.manual_seed(0)
        model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
        tracker = Tracker(1.0, dtype="fp32", peak_tflops=1.0, clock="cpu", warmup=0,
                          distributed=False, comm=False)
        attach_ddp(tracker, model)
        x = torch.ones(3, 4)
        tracker.step()
        tracker.begin_phase("backward")
        model(x).sum().backward()
        tracker.end_phase()
        tracker.step()
        phases = tracker.metrics()
        assert phases.get("throughput/phase_s/communication", 0) > 0
        # a world of one: the all-reduce's average is the local gradient, d(sum)/dW = sum of x
        assert torch.equal(model.module.weight.grad, torch.full((1, 4), 3.0))
        tracker.close()
