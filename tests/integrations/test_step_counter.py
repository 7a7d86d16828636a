"""The counter of one counted step (integrations/_step_counter.py): the
FLOPs of its regions add up; a failure is one warning, never an exception."""
from __future__ import annotations

import pytest
import torch

from mfu_tracker.integrations._step_counter import StepCounter

# Linear(8 -> 4, no bias) on a (2, 8) input: one matmul, 2 x 2 x 8 x 4 FLOPs
LINEAR_FORWARD = 2 * 2 * 8 * 4          # = 128


class Policy:
    """The attributes a StepCounter reads of its step-FLOPs policy."""

    def __init__(self, causal_attention="full"):
        self.causal_attention = causal_attention
        self.audited = False
        self.warnings = []

    def warn_once(self, key, message):
        self.warnings.append((key, message))


def _forward():
    model = torch.nn.Linear(8, 4, bias=False)
    with torch.no_grad():
        model(torch.ones(2, 8))


def test_regions_add_up_and_stop_gives_each_regions_flops():
    counter = StepCounter(Policy())
    assert counter.stop() is None                     # nothing started
    counter.start()
    _forward()
    first = counter.stop()
    counter.start()
    _forward()
    _forward()
    second = counter.stop()
    assert first.model_flops == LINEAR_FORWARD
    assert second.model_flops == 2 * LINEAR_FORWARD
    assert second.forward_flops == 2 * LINEAR_FORWARD
    assert counter.totals().model_flops == 3 * LINEAR_FORWARD
    assert counter.ran and not counter.failed


def test_nothing_counted_outside_a_region_and_shares_by_dtype():
    counter = StepCounter(Policy())
    assert counter.shares() is None and counter.totals().model_flops is None
    counter.start()
    _forward()
    counter.stop()
    _forward()                                        # after stop: not counted
    assert counter.totals().model_flops == LINEAR_FORWARD
    assert counter.shares() == {"fp32": 1.0}


def test_a_counter_that_cannot_start_warns_once_and_is_not_counted():
    policy = Policy(causal_attention="quarter")      # FlopCounter refuses it
    counter = StepCounter(policy)
    counter.start()
    counter.start()
    assert counter.failed and not counter.ran
    assert counter.stop() is None
    assert [key for key, _ in policy.warnings] == ["counter"]
    assert "quarter" in policy.warnings[0][1] or "causal" in policy.warnings[0][1]


@pytest.mark.filterwarnings("ignore")
def test_the_first_counted_step_audits():
    policy = Policy()
    counter = StepCounter(policy)
    counter.start()
    _forward()
    counter.stop()
    counter.warn_audit()          # a Linear is all counted: nothing heavy uncounted
    assert [key for key, _ in policy.warnings if key == "audit"] == []
