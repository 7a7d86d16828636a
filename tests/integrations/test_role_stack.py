"""Nested framework calls split into turns (integrations/_role_stack.py):
each second and each FLOP goes to the innermost role, on a real Roles."""
from __future__ import annotations

import torch

from mfu_tracker import Roles, Tracker
from mfu_tracker.integrations._role_stack import RoleStack

# Linear(8 -> 4, no bias) on a (2, 8) input: 2 x 2 x 8 x 4 FLOPs
LINEAR_FORWARD = 128


class Clock:
    """Seconds set by the test (the stack's clock is injected)."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def _roles():
    tracker = Tracker(dtype="fp32", peak_tflops=1.0, clock="cpu", window=1, warmup=0)
    return tracker, Roles(tracker)


def _forward():
    with torch.no_grad():
        torch.nn.Linear(8, 4, bias=False)(torch.ones(2, 8))


def test_an_inner_role_pauses_the_outer_one():
    tracker, roles = _roles()
    clock = Clock()
    stack = RoleStack(roles, clock)
    stack.push("learner")            # t=0
    clock.now = 2.0
    stack.push("rollout")            # learner paused after 2 s
    assert stack.top == "rollout" and stack.depth == 2
    clock.now = 7.0
    stack.pop()                      # rollout: 5 s; learner resumes
    assert stack.top == "learner"
    clock.now = 8.5
    stack.push(None)                 # no role: the wait
    clock.now = 9.0
    stack.close()                    # learner's last 1.5 s, the None frame books nothing
    assert stack.depth == 0 and stack.top is None
    assert roles.run("learner").seconds == 2.0 + 1.5
    assert roles.run("rollout").seconds == 5.0
    tracker.close()


def test_each_counted_role_gets_only_its_own_flops():
    tracker, roles = _roles()
    stack = RoleStack(roles, Clock(), counted=("learner", "reference"))
    stack.push("learner")
    _forward()
    stack.push("reference")
    _forward()
    _forward()
    stack.pop()
    _forward()
    stack.push("rollout")            # not counted by the stack
    _forward()
    stack.pop()
    stack.add_tokens("learner", 16)
    stack.add_tokens("rollout", 4)
    stack.close()
    assert roles.run("learner").flops == 2 * LINEAR_FORWARD
    assert roles.run("reference").flops == 2 * LINEAR_FORWARD
    assert roles.run("rollout").flops is None        # nobody booked its FLOPs
    assert roles.run("learner").tokens == 16 and roles.run("rollout").tokens == 4
    tracker.close()


def test_close_restarts_the_counts_and_abandon_books_nothing():
    tracker, roles = _roles()
    stack = RoleStack(roles, Clock(), counted=("learner",))
    stack.push("learner")
    _forward()
    stack.close()
    stack.push("learner")
    _forward()
    stack.abandon()                  # mid-step: nothing booked, the counter exited
    assert stack.depth == 0
    _forward()                       # no counter active: not counted anywhere
    stack.push("learner")
    _forward()
    stack.close()
    assert roles.run("learner").flops == 2 * LINEAR_FORWARD   # the two closed steps' only
    stack.pop()                      # popping an empty stack does nothing
    tracker.close()
