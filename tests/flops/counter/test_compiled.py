"""torch.compile (docs/flops.md, "The stack people run"): the tool adds no graph break and no graph, and a
compiled region's model FLOPs equal the eager model's.

A small GPT-2 and a small Llama (transformers configs, CPU, inductor) run the
loops of tests/_compile_loops.py -- a FlopCounter every step, a Tracker with
phases, MFUOptimizerWrapper, the HF Trainer with ``torch_compile=True``, a
Lightning Trainer holding the compiled model, Fabric with fabric_tracker()
and Accelerate with MFUOptimizerWrapper -- once here with the tool and
once in a child process that never imports mfu_tracker (started first, so
the two compile side by side). Each loop's ``torch._dynamo`` counter
increments (frames traced, graphs, graph breaks; HF models have graph breaks
of their own) must be equal, and every model FLOPs figure the tool reports
for a compiled step must equal the eager model's FlopCounter count within
0.1% (they are equal exactly: the compiled backward counts as it runs). Each
model is compiled once per process (~30 s each here with a warm inductor
cache; the first run on a machine compiles from scratch).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("lightning")

from mfu_tracker.counter import counter_backend  # noqa: E402

TESTS = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(TESTS))
import _compile_loops  # noqa: E402

MODELS = ("gpt2", "llama")

pytestmark = pytest.mark.skipif(counter_backend() != "torch-ext",
                                reason="the TorchDispatchMode fallback is not compile-transparent")


@pytest.fixture(scope="module")
def runs():
    """(with the tool, without it): the loops' results per model."""
    env = dict(os.environ, PYTHONPATH=str(TESTS))
    child = subprocess.Popen([sys.executable, str(TESTS / "_compile_loops.py"), *MODELS],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        with_tool = {name: _compile_loops.run(name, tool=True) for name in MODELS}
        out, err = child.communicate(timeout=900)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 0, err[-3000:]
    return with_tool, json.loads(out.strip().splitlines()[-1])


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("loop", _compile_loops.LOOPS)
def test_no_graph_break_and_no_graph_from_the_tool(runs, model, loop):
    with_tool, without = runs
    frames, graphs, breaks = with_tool[model][loop]["counts"]
    assert [frames, graphs, breaks] == without[model][loop]["counts"], (model, loop)
    if loop == "counter":
        assert graphs >= 1  # the first loop compiled the model: the check is not vacuous


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("loop", _compile_loops.LOOPS)
def test_compiled_model_flops_equal_eager(runs, model, loop):
    with_tool, _ = runs
    eager = with_tool[model]["eager"]
    flops = with_tool[model][loop]["flops"]
    assert len(flops) == _compile_loops.STEPS, (model, loop, flops)
    assert eager > 0
    for value in flops:
        assert value == pytest.approx(eager, rel=1e-3), (model, loop)


def test_kind_of_reads_the_op_tables_kind():
    from mfu_tracker.flops.counter import _compiled

    assert _compiled.kind_of("aten::mm") == "mm"
    assert _compiled.kind_of("aten::relu") is None  # not in the table
