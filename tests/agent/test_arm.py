"""mfu_tracker/agent/_arm.py: arming the agent of this process, once; a
failure is one line on stderr, never an exception."""
from __future__ import annotations

import atexit

from mfu_tracker.agent import _say, _step
from mfu_tracker.agent._arm import arm
from mfu_tracker.agent._config import ENV_VAR, RunConfig


def test_no_configuration_no_agent(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setattr(_step, "ACTIVE", [])
    assert arm() is None and _step.ACTIVE == []


def test_a_bad_configuration_is_said_not_raised(monkeypatch, capsys):
    monkeypatch.setattr(_say, "_SAID", set())
    monkeypatch.setattr(_step, "ACTIVE", [])
    monkeypatch.setenv(ENV_VAR, "{not json")
    assert arm() is None
    err = capsys.readouterr().err
    assert err.startswith("mfu-tracker run: the agent could not start (ValueError(")
    assert "MFU_TRACKER_RUN is not JSON" in err and err.endswith("this process is not measured\n")


def test_armed_once(monkeypatch, tmp_path):
    monkeypatch.setattr(_step, "ACTIVE", [])
    config = RunConfig.checked(log_path=str(tmp_path / "m.jsonl"))
    monkeypatch.setenv(ENV_VAR, config.to_env())
    agent = arm()
    try:
        assert agent is not None and agent.config == config and _step.ACTIVE == [agent]
        assert arm() is agent                   # a second call: the same agent
    finally:
        agent.remove_hooks()
        atexit.unregister(agent.exit_report)
