"""The agent of ``mfu-tracker run`` in this process: how it finds steps, what
it counts and reads, and that it never raises into the loop it measures.

References: FLOPs by hand arithmetic (``tiny_loop.model_flops_per_step``,
written out beside each figure), step counts by the loops' own structure,
token counts from the tensors' shapes and masks.
"""
from __future__ import annotations

import atexit
import json
import sys
import warnings
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent / "scripts"))

from tiny_loop import TinyLM, model_flops_per_step  # noqa: E402
from _backends import active_counter_slots  # noqa: E402

import mfu_tracker  # noqa: E402
from mfu_tracker.agent import _step  # noqa: E402
from mfu_tracker.agent._agent import Agent  # noqa: E402
from mfu_tracker.agent._config import RunConfig  # noqa: E402
from mfu_tracker.agent._inputs import detect_dtype, token_inputs  # noqa: E402
from mfu_tracker.job import read_log  # noqa: E402

B, S = 4, 16


@pytest.fixture
def agent(tmp_path):
    """An armed agent (its hooks registered in this process), removed after."""
    made = Agent(RunConfig.checked(log_path=str(tmp_path / "m.jsonl"), log_every=2,
                                   peak_tflops=1.0))
    made.install()
    _step.ACTIVE.append(made)
    yield made
    _step.ACTIVE.clear()
    made.remove_hooks()
    atexit.unregister(made.finish)
    if made._tracker is not None and not made._tracker.closed:
        made._tracker.close()


def ids(seed: int = 0) -> torch.Tensor:
    return torch.randint(0, 64, (B, S), generator=torch.Generator().manual_seed(seed))


def train(model, optimizers, steps, *, micro=1, between=None):
    for step in range(steps):
        for m in range(micro):
            x = ids(step * micro + m)
            model(input_ids=x, labels=x).backward()
        for optimizer in optimizers:
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        if between is not None:
            between()


def ledger_flops_per_step(agent) -> list:
    """Each logged interval's model FLOPs per step, from the log itself."""
    agent.finish()
    log = read_log(agent.config.log_path)
    out = []
    for run in log.runs:
        for record in run.metrics:
            ledger = record["ledger"]
            out.append(ledger["model_flops"] / ledger["flops_steps"])
    return out


def test_steps_at_the_optimizer_counted_exactly(agent, capsys):
    model = TinyLM()
    train(model, [torch.optim.SGD(model.parameters(), lr=0.01)], 4)
    assert agent._steps_done == 4 and agent.root is model
    # 6 x 64 tokens x (16 x 32 + 32 x 64) = 983,040 per step
    assert model_flops_per_step(B * S) == 983_040
    assert ledger_flops_per_step(agent) == [983_040.0, 983_040.0]
    err = capsys.readouterr().err
    assert "detected: tokens/step 64 (input_ids of TinyLM.forward)" in err
    assert "FLOPs/step 983,040 model" in err and "dtype fp32 (the parameters)" in err
    assert "peak 1 TFLOP/s fp32 per device (given: --peak-tflops)" in err


def test_gradient_accumulation_is_one_step(agent):
    model = TinyLM()
    train(model, [torch.optim.SGD(model.parameters(), lr=0.01)], 4, micro=3)
    assert agent._steps_done == 4
    assert ledger_flops_per_step(agent) == [3 * 983_040.0] * 2   # 3 micro-batches of 64 tokens


def test_two_optimizers_stepping_together_are_one_step(agent):
    model = TinyLM()
    params = list(model.parameters())
    optimizers = [torch.optim.SGD(params[:2], lr=0.01), torch.optim.AdamW(params[2:], lr=0.01)]
    train(model, optimizers, 4)
    assert agent._steps_done == 4 and agent.blind_steps == 0
    assert ledger_flops_per_step(agent) == [983_040.0, 983_040.0]


def test_an_optimizer_stepping_again_without_a_forward_is_a_blind_step(agent, capsys):
    model = TinyLM()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    train(model, [optimizer], 2)
    optimizer.step()            # no forward of the root since the boundary
    assert agent._steps_done == 3 and agent.blind_steps == 1
    assert agent._discovery, "it looks for the model again"
    train(model, [optimizer], 1)
    assert agent._steps_done == 4 and not agent._discovery
    assert "an optimizer stepped twice with no training forward of TinyLM" in capsys.readouterr().err
    agent.finish()
    steps = read_log(agent.config.log_path).runs[0].metrics
    # the blind step's interval has its FLOPs unknown: 1 of its 2 steps has none
    assert [r["ledger"]["flops_steps"] for r in steps] == [2, 1]


def test_evaluation_between_steps_is_neither_counted_nor_a_step(agent):
    model = TinyLM()

    def evaluate():
        model.eval()
        with torch.no_grad():
            model(input_ids=ids(99))
        model.train()

    train(model, [torch.optim.SGD(model.parameters(), lr=0.01)], 4, between=evaluate)
    assert agent._steps_done == 4
    assert ledger_flops_per_step(agent) == [983_040.0, 983_040.0]


class WithLoss(torch.nn.Module):
    """A model called by a loop that also calls a loss module and a frozen
    teacher at the top level: neither is the root."""

    def __init__(self):
        super().__init__()
        self.student = TinyLM()
        self.teacher = TinyLM().requires_grad_(False)
        self.loss = torch.nn.CrossEntropyLoss()


def test_the_root_is_the_outermost_trained_module(agent):
    parts = WithLoss()
    optimizer = torch.optim.SGD(parts.student.parameters(), lr=0.01)
    for step in range(2):
        x = ids(step)
        teacher = parts.teacher(x)                        # frozen: not the root
        logits = parts.student(x)
        loss = parts.loss(logits.flatten(0, 1), x.flatten()) + (teacher - logits).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    assert agent.root is parts.student and agent._steps_done == 2


def test_end_step_draws_the_steps_of_a_loop_without_an_optimizer(agent):
    model = TinyLM()
    for step in range(4):
        x = ids(step)
        model(input_ids=x, labels=x).backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= 0.01 * p.grad
                p.grad = None
        mfu_tracker.end_step()
    assert agent._steps_done == 4 and agent._explicit
    assert ledger_flops_per_step(agent) == [983_040.0, 983_040.0]


def test_end_step_after_the_optimizer_adds_no_step(agent):
    model = TinyLM()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    train(model, [optimizer], 3, between=mfu_tracker.end_step)
    assert agent._steps_done == 3 and agent.blind_steps == 0


def test_end_step_outside_run_does_nothing():
    assert _step.ACTIVE == []
    assert mfu_tracker.end_step() is None


def test_a_failing_probe_says_so_once_and_stops(agent, capsys, monkeypatch):
    import mfu_tracker.agent._agent as agent_module

    model = TinyLM()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    train(model, [optimizer], 2)

    def broken(*args):
        raise RuntimeError("probe broke")

    monkeypatch.setattr(agent_module, "token_inputs", broken)
    train(model, [optimizer], 3)          # the loop goes on, untouched
    err = capsys.readouterr().err
    assert err.count("the agent stopped: _root_ends failed (RuntimeError('probe broke'))") == 1
    assert agent.stopped is not None and agent._tracker.closed
    assert not model._forward_hooks and not model._forward_pre_hooks
    # the step's FLOP counter, entered at the forward, was left with it: no
    # counter is active in the process (each holds one of its 8 slots)
    assert active_counter_slots() == 0
    from torch.nn.modules import module as torch_module

    ours = [h for h in torch_module._global_forward_pre_hooks.values()
            if getattr(h, "__self__", None) is agent]
    assert ours == []


def test_warnings_never_become_exceptions_in_the_loop(tmp_path, capsys):
    made = Agent(RunConfig.checked(log_path=str(tmp_path / "m.jsonl"), log_every=2))
    made.install()
    try:
        model = TinyLM()
        with warnings.catch_warnings():
            warnings.simplefilter("error")      # python -W error
            train(model, [torch.optim.SGD(model.parameters(), lr=0.01)], 3)
        assert made.stopped is None and made._steps_done == 3
        assert "peak none (cpu has no datasheet peak" in capsys.readouterr().err
    finally:
        made.remove_hooks()
        atexit.unregister(made.finish)
        made._tracker.close()


def test_the_last_steps_are_logged_at_exit(agent):
    model = TinyLM()
    train(model, [torch.optim.SGD(model.parameters(), lr=0.01)], 5)
    agent.finish()
    lines = [json.loads(line) for line in Path(agent.config.log_path).read_text().splitlines()]
    assert [line.get("step") for line in lines if "record" not in line] == [2, 4, 5]
    assert lines[-1]["record"] == "run_end" and lines[-1]["step"] == 5


# ---- what it reads --------------------------------------------------------------------

def test_token_inputs_follow_the_documented_order():
    x = torch.zeros(2, 3, dtype=torch.long)
    y = torch.ones(2, 3, dtype=torch.long)
    f = torch.zeros(2, 3)
    assert token_inputs((), {"input_ids": x})[0]["input_ids"] is x
    assert token_inputs((f, y), {})[0]["input_ids"] is y                 # first integer positional
    found, name = token_inputs((f,), {"labels": x, "idx": y})            # labels are not tokens
    assert found["input_ids"] is y and name == "idx"
    assert token_inputs((f,), {})[0] is None                             # no integer tensor
    assert token_inputs((), {"inputs_embeds": torch.zeros(2, 3, 4)})[1].startswith("inputs_embeds")
    assert token_inputs((torch.zeros(2, 3, dtype=torch.bool),), {})[0] is None


def test_a_mask_is_read_on_the_cpu_only():
    x = torch.zeros(2, 8, dtype=torch.long)
    mask = torch.ones(2, 8, dtype=torch.long)
    found, name = token_inputs((), {"input_ids": x, "attention_mask": mask})
    assert found["attention_mask"] is mask and name == "attention_mask ones of input_ids"
    on_device = torch.ones(2, 8, dtype=torch.long, device="meta")     # stands for a GPU's
    found, name = token_inputs((), {"input_ids": x.to("meta"), "attention_mask": on_device})
    assert "attention_mask" not in found and "padding included" in name and "meta" in name


def test_the_dtype_comes_from_autocast_then_the_parameters():
    model = TinyLM()
    assert detect_dtype(model, torch.device("cpu")) == ("fp32", "the parameters")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert detect_dtype(model, torch.device("cpu")) == ("bf16", "autocast")
    assert detect_dtype(model.to(torch.bfloat16), torch.device("cpu")) == ("bf16", "the parameters")


def test_the_config_travels_in_one_variable_and_is_checked():
    config = RunConfig.checked(log_path="x.jsonl", dtype="bfloat16", peak_tflops=2)
    env = {"MFU_TRACKER_RUN": config.to_env()}
    assert RunConfig.from_env(env) == config and config.dtype == "bf16"
    assert RunConfig.from_env({}) is None
    with pytest.raises(ValueError, match="flops_per_step"):
        RunConfig.checked(log_path="x", flops_per_step=-1.0)
    with pytest.raises(ValueError, match="unknown settings"):
        RunConfig.from_env({"MFU_TRACKER_RUN": json.dumps({"log_path": "x", "colour": 1})})
    with pytest.raises(ValueError, match="not JSON"):
        RunConfig.from_env({"MFU_TRACKER_RUN": "{"})


def test_a_compiled_model_is_counted_as_the_eager_one_without_a_graph_break(tmp_path, capsys):
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # python -W error: set before the agent arms
        made = Agent(RunConfig.checked(log_path=str(tmp_path / "m.jsonl"), log_every=2))
        made.install()
        try:
            model = TinyLM()
            compiled = torch.compile(model, backend="aot_eager")
            train(compiled, [torch.optim.SGD(model.parameters(), lr=0.01)], 4)
            assert made.stopped is None and type(made.root).__name__ == "OptimizedModule"
            assert ledger_flops_per_step(made) == [983_040.0, 983_040.0]   # as eager
        finally:
            made.remove_hooks()
            atexit.unregister(made.finish)
            torch._dynamo.reset()
    assert dict(counters["graph_break"]) == {} and counters["stats"]["unique_graphs"] == 1
    assert "OptimizedModule" in capsys.readouterr().err


def test_a_dataloader_worker_forked_from_the_run_stays_silent(agent, tmp_path):
    class Rows(torch.utils.data.Dataset):
        """Each item runs a trained module's forward, in the worker."""

        def __init__(self):
            self.net = TinyLM()

        def __len__(self):
            return 4

        def __getitem__(self, i):
            x = ids(i)
            self.net(input_ids=x[:1], labels=x[:1]).backward()   # a root forward, in a fork
            return x

    model = TinyLM()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = torch.utils.data.DataLoader(Rows(), batch_size=None, num_workers=1,
                                         multiprocessing_context="fork")
    for x in loader:
        model(input_ids=x, labels=x).backward()
        optimizer.step()
        optimizer.zero_grad()
    assert agent.root is model and agent._steps_done == 4
    agent.finish()
    assert [r["run_id"] for r in (json.loads(line) for line in
            Path(agent.config.log_path).read_text().splitlines()) if r.get("record") == "run"] \
        == [agent._tracker.run_id]      # one run: the worker's agent never began one


def test_the_run_record_has_the_sequence_length_of_keyword_tokens(agent):
    """``model(input_ids=x)`` (what ``model(**batch)`` does): the global
    pre-hook that finds the root gets no keywords, so the run record's
    sequence length (the live page's framework range needs it) comes from
    the keywords of the call being made: S = 16, the [4, 16] ids' length."""
    model = TinyLM()
    train(model, [torch.optim.SGD(model.parameters(), lr=0.01)], 2)
    agent.finish()
    run = read_log(agent.config.log_path).runs[0]
    assert run.record["model"] == {"flops": "counted", "seq_len": S}


def test_a_positional_call_gives_its_sequence_length_too(agent):
    model = TinyLM()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(2):
        model(ids(step)[:, :12]).sum().backward()     # [4, 12] positional, no labels
        optimizer.step()
        optimizer.zero_grad()
    agent.finish()
    assert read_log(agent.config.log_path).runs[0].record["model"]["seq_len"] == 12
