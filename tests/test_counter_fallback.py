"""The TorchDispatchMode fallback: forced with MFU_TRACKER_DISABLE_TORCH_EXT=1
(read when mfu_tracker.counter is imported, so in a subprocess), one
warning, the same numbers as the C++ observer, and the op table checked
against torch's schemas."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from mfu_tracker._dispatch_counter import ATTENTION, CONV, OP_TABLE  # noqa: E402

TESTS = Path(__file__).resolve().parent

# Counts a few zoo models and prints {name: [executed, forward, model]}.
_COUNT = r"""
import json, sys, warnings
sys.path.insert(0, %(tests)r)
import torch
from test_counter_zoo import ZOO, _decoder, _step, _ours
from mfu_tracker.counter import counter_backend
out = {"backend": counter_backend()}
models = {k: ZOO[k] for k in ("gpt2", "mixtral", "t5", "cnn")}
models["llama_sdpa"] = lambda: _decoder("llama", attn="sdpa")[::2]
models["mixtral_grouped"] = lambda: _decoder("mixtral", experts="grouped_mm")[::2]
for name, build in models.items():
    for causal in ("full", "half"):
        fc = _ours(_step(*build()), causal_attention=causal)
        out[f"{name}/{causal}"] = [fc.executed_flops, fc.forward_flops, fc.model_flops,
                                   sorted(fc.by_op.items())]
print(json.dumps(out))
"""


def _run(env_value: str | None) -> tuple[dict, str]:
    env = dict(os.environ)
    env.pop("MFU_TRACKER_DISABLE_TORCH_EXT", None)
    if env_value is not None:
        env["MFU_TRACKER_DISABLE_TORCH_EXT"] = env_value
    proc = subprocess.run([sys.executable, "-W", "always::RuntimeWarning", "-c",
                           _COUNT % {"tests": str(TESTS)}],
                          capture_output=True, text=True, env=env, check=True, timeout=600)
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def test_both_backends_agree_and_the_fallback_warns_once():
    ext, ext_err = _run(None)
    fallback, fb_err = _run("1")
    assert ext.pop("backend") == "torch-ext"
    assert fallback.pop("backend") == "dispatch"
    assert ext == fallback
    assert fb_err.count("TorchDispatchMode fallback") == 1  # one warning for many counters
    assert "MFU_TRACKER_DISABLE_TORCH_EXT=1" in fb_err
    assert "fallback" not in ext_err


def test_behaviour_suite_passes_on_the_fallback():
    """The whole behaviour suite (nesting, threads, failures, profile_flops,
    hand arithmetic) again, on the fallback."""
    env = dict(os.environ, MFU_TRACKER_DISABLE_TORCH_EXT="1")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-W", "ignore::RuntimeWarning:mfu_tracker.counter",
         str(TESTS / "test_counter.py"), "-k", "not torch_compile"],
        capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout


def _schema(name: str):
    namespace, op = name.split("::")
    packet = getattr(getattr(torch.ops, namespace), op)
    return packet.default._schema if "default" in packet.overloads() else \
        getattr(packet, packet.overloads()[0])._schema


@pytest.mark.parametrize("name, kind, params", OP_TABLE, ids=[row[0] for row in OP_TABLE])
def test_op_table_positions_match_torch_schemas(name, kind, params):
    if name.startswith("torch_attn::"):
        import torch.nn.attention.varlen  # noqa: F401 - registers the ops
    args = [a.name for a in _schema(name).arguments]
    if kind == CONV:
        wanted = dict(zip(("stride", "padding", "dilation", "transposed", "output_padding"), params))
        for what, index in wanted.items():
            if index >= 0:
                assert args[index] == what, (name, what, args)
    elif kind == ATTENTION:
        (backward, _layout, grad_out, q, k, v, cu_q, cu_k, max_q, max_k, causal, mask_type) = params
        assert (args[q], args[k], args[v]) == ("query", "key", "value")
        assert name.endswith("backward") == bool(backward)
        if grad_out >= 0:
            assert args[grad_out].startswith("grad_out")
        if cu_q >= 0:
            assert "cu" in args[cu_q] and "cu" in args[cu_k], args
            assert "max" in args[max_q] and "max" in args[max_k], args
        assert args[causal] == ("custom_mask_type" if mask_type else "is_causal"), args
    else:
        assert len(args) >= 2
