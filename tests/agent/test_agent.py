"""mfu_tracker/agent (the package, and its _agent module): a tiny loop
measured from torch's global hooks, steps at the optimizer's step, FLOPs by
hand arithmetic."""
from __future__ import annotations

import atexit
import subprocess
import sys

import pytest
import torch

from mfu_tracker.agent import _say, _step, end_step
from mfu_tracker.agent._agent import Agent, probe
from mfu_tracker.agent._config import RunConfig
from mfu_tracker.job import read_log

B, S, V, H = 4, 16, 64, 8


class Tiny(torch.nn.Module):
    """Embedding (no FLOPs) then one Linear of S*H -> 1 over the flattened sequence."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(V, H)
        self.head = torch.nn.Linear(S * H, 1, bias=False)

    def forward(self, ids):
        return self.head(self.embed(ids).flatten(1)).sum()


@pytest.fixture
def agent(tmp_path, monkeypatch):
    monkeypatch.setattr(_say, "_SAID", set())
    made = Agent(RunConfig.checked(log_path=str(tmp_path / "m.jsonl"), log_every=2, warmup=0,
                                   peak_tflops=1.0))
    made.install()
    monkeypatch.setattr(_step, "ACTIVE", [made])
    yield made
    made.remove_hooks()
    atexit.unregister(made.finish)
    if made._tracker is not None and not made._tracker.closed:
        made._tracker.close()


def test_importing_the_package_imports_no_torch():
    code = "import sys, mfu_tracker.agent; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    assert callable(end_step)


def test_a_loop_is_measured_at_the_optimizers_steps(agent, tmp_path, capsys):
    model = Tiny()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for seed in range(4):
        ids = torch.randint(0, V, (B, S), generator=torch.Generator().manual_seed(seed))
        model(ids).backward()
        optimizer.step()
        optimizer.zero_grad()
    assert agent.root is model and agent._steps_done == 4 and agent.optimizer_steps == 4
    agent.finish()
    err = capsys.readouterr().err
    # the Linear: forward 2 x B x (S*H) x 1 = 1024 FLOPs; backward twice that (grad of the
    # weight and of the input) = 2048; the embedding counts none: 3072 per step
    assert "FLOPs/step 3,072 model" in err
    # the tokens: the [B, S] integer tensor, positional argument 0
    assert "tokens/step 64 (argument 0 of Tiny.forward)" in err
    assert "peak 1 TFLOP/s fp32 per device (given: --peak-tflops)" in err
    log = read_log(str(tmp_path / "m.jsonl"))
    steps = [m["step"] for m in log.runs[0].metrics]
    assert steps == [2, 4]                       # every log_every = 2 steps
    assert log.runs[0].end is not None           # finish() wrote the run-end record


def test_a_failing_hook_stops_the_agent_and_never_raises(agent, capsys):
    @probe
    def broken(self, *args):
        raise RuntimeError("boom")

    assert broken(agent) is None
    assert agent.stopped == "broken failed (RuntimeError('boom'))"
    assert "the agent stopped: broken failed" in capsys.readouterr().err
    assert agent._global == [] and agent._discovery == []      # every hook removed
