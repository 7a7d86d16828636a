"""mfu_tracker/agent/_detected.py: the exit line says what was measured, or
why nothing was."""
from __future__ import annotations

import torch

from mfu_tracker.agent._agent import Agent
from mfu_tracker.agent._config import RunConfig
from mfu_tracker.agent._detected import END_STEP_HINT, end_report


def agent(tmp_path):
    return Agent(RunConfig.checked(log_path=str(tmp_path / "m.jsonl")))   # never installed


def test_nothing_trained_says_nothing(tmp_path):
    assert end_report(agent(tmp_path)) is None       # a launcher, a compile worker


def test_forwards_without_an_optimizer(tmp_path):
    a = agent(tmp_path)
    a.root, a.training_forwards = torch.nn.Linear(2, 2), 3
    assert end_report(a) == ("steps cannot be found: 3 training forwards of Linear ran and no "
                             f"optimizer stepped (a custom update?); {END_STEP_HINT}")


def test_optimizer_steps_without_a_forward(tmp_path):
    a = agent(tmp_path)
    a.optimizer_steps = 5
    assert end_report(a).startswith("steps cannot be found: 5 optimizer steps ran, but no "
                                    "forward of a module with trainable parameters")


def test_steps_measured(tmp_path):
    a = agent(tmp_path)
    a._steps_done, a.blind_steps = 12, 2
    assert end_report(a) == ("12 steps measured (boundaries at the optimizer's step); 2 of them "
                             "with no visible forward (FLOPs and tokens unknown); log "
                             f"{tmp_path / 'm.jsonl'}")
    a._explicit, a.blind_steps = True, 0
    assert end_report(a) == ("12 steps measured (boundaries at mfu_tracker.end_step()); log "
                             f"{tmp_path / 'm.jsonl'}")
