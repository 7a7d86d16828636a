"""mfu_tracker/agent/_say.py: one line on stderr, each message once, rank 0
for the job."""
from __future__ import annotations

import pytest

from mfu_tracker.agent import _say
from mfu_tracker.agent._say import rank, say, say_warning


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    monkeypatch.setattr(_say, "_SAID", set())
    monkeypatch.delenv("RANK", raising=False)


def test_rank_from_the_environment(monkeypatch):
    assert rank() == 0
    monkeypatch.setenv("RANK", "3")
    assert rank() == 3
    monkeypatch.setenv("RANK", "x")
    assert rank() == 0


def test_each_message_once(capsys):
    say("hello")
    say("hello")
    say_warning("mfu_tracker: low peak")
    assert capsys.readouterr().err == "mfu-tracker run: hello\nmfu-tracker run: warning: low peak\n"


def test_other_ranks_speak_only_when_every_rank_must(monkeypatch, capsys):
    monkeypatch.setenv("RANK", "2")
    say("rank 0's business")
    say("a probe failed", every_rank=True)
    assert capsys.readouterr().err == "mfu-tracker run (rank 2): a probe failed\n"
