"""mfu_tracker/agent/_step.py: ``end_step()`` reaches the armed agent, and
does nothing without one."""
from __future__ import annotations

import mfu_tracker
from mfu_tracker.agent import _step
from mfu_tracker.agent._agent import Agent
from mfu_tracker.agent._config import RunConfig
from mfu_tracker.agent._step import end_step


def test_nothing_without_an_agent():
    assert _step.ACTIVE == []
    assert end_step() is None
    assert mfu_tracker.end_step is end_step


def test_the_armed_agent_takes_the_boundaries_from_then_on(tmp_path, monkeypatch):
    agent = Agent(RunConfig.checked(log_path=str(tmp_path / "m.jsonl")))   # not installed
    monkeypatch.setattr(_step, "ACTIVE", [agent])
    assert agent._explicit is False
    end_step()
    assert agent._explicit is True and agent._tracker is None   # no step yet: no boundary
