"""Fake tensors either way round, and warnings of one line.

A counter counts what the ops of the user's own fake run would cost, whether
the FakeTensorMode is entered around the counter or inside it (as
``FlopCounterMode`` does), never torch.compile's tracing (fake tensors of its
own). Cumulative lengths of fake tensors cannot be read: a varlen flash call
counts its worst case, max_seqlen per sequence (FlopCounterMode's
``_offsets_to_lengths``), and says so. No warning the package gives carries a
C++ backtrace, even with ``TORCH_SHOW_CPP_STACKTRACES=1``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import pytest

torch = pytest.importorskip("torch")

from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from mfu_tracker.counter import FlopCounter  # noqa: E402

MM_64 = 2 * 64 * 64 * 64  # 524,288


def test_fake_mode_inside_the_counter_counts_the_fake_ops():
    with FlopCounter() as fc:
        with FakeTensorMode():
            x = torch.randn(64, 64)
            x @ x
    with FlopCounterMode(display=False) as reference:
        with FakeTensorMode():
            x = torch.randn(64, 64)
            x @ x
    assert fc.executed_flops == fc.model_flops == reference.get_total_flops() == MM_64


def test_fake_mode_around_the_counter_counts_the_same():
    with FakeTensorMode():
        x = torch.randn(64, 64)
        with FlopCounter() as fc:
            x @ x
    assert fc.executed_flops == MM_64


def test_compile_tracing_is_not_counted():
    """torch.compile traces on fake tensors of its own (dynamo, AOTAutograd)
    and compiles the backward at its first call: the first, compiling step
    counts what ran, not what was traced (inductor's lazily compiled
    backward: tests/flops/counter/test_compiled.py)."""
    x = torch.randn(64, 64, requires_grad=True)
    compiled = torch.compile(lambda a: (a @ a).sum(), backend="aot_eager", fullgraph=True)
    with FlopCounter() as fc:
        compiled(x).backward()   # traced, compiled, then run
    with FlopCounter() as again:
        compiled(x).backward()   # cached
    # forward 524,288; x @ x needs both input grads: model 3 x, executed 3 x
    assert fc.executed_flops == again.executed_flops == 3 * MM_64
    assert fc.model_flops == again.model_flops == 3 * MM_64


def _flash_on_fake():
    """aten._flash_attention_forward on fake nested (varlen) inputs: q, k, v
    [total 10, heads 4, dim 8], cumulative lengths [0, 3, 10] whose values
    are unknown on fake tensors, max_seqlen 7 both ways."""
    q = torch.empty(10, 4, 8)
    cu = torch.tensor([0, 3, 10], dtype=torch.int32)
    return torch.ops.aten._flash_attention_forward(q, q, q, cu, cu, 7, 7, 0.0, False, False)


def test_fake_varlen_flash_counts_its_worst_case_and_says_so():
    with FakeTensorMode():
        with FlopCounterMode(display=False) as reference:
            _flash_on_fake()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with FlopCounter() as fc:
                _flash_on_fake()
    # 2 sequences at max_seqlen 7: 2 x (2 + 2) * 4 heads * 7 * 7 * 8 = 12,544
    assert fc.executed_flops == reference.get_total_flops() == 12_544
    assert fc.approximate and fc.errors == 0
    [warning] = [w for w in caught if "FlopCounter" in str(w.message)]
    assert "max_seqlen" in str(warning.message) and "upper bound" in str(warning.message)
    assert "\n" not in str(warning.message)


_EVERY_WARNING = r"""
import json, warnings
import torch
from torch._subclasses.fake_tensor import FakeTensorMode
warnings.simplefilter("always")
from mfu_tracker.counter import FlopCounter, register_flop_formula
messages = []
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    with FakeTensorMode():               # the worst case of a fake varlen flash call
        q = torch.empty(10, 4, 8)
        cu = torch.tensor([0, 3, 10], dtype=torch.int32)
        with FlopCounter():
            torch.ops.aten._flash_attention_forward(q, q, q, cu, cu, 7, 7, 0.0, False, False)
    lib = torch.library.Library("mfu_warn_test", "DEF")
    lib.define("op(Tensor x) -> Tensor")
    lib.impl("op", lambda x: x * 2, "CompositeExplicitAutograd")
    register_flop_formula("mfu_warn_test::op", lambda shape: 1 // 0)  # cannot be counted
    with FlopCounter(audit=True):
        torch.ops.mfu_warn_test.op(torch.ones(4))
    lib2 = torch.library.Library("aten", "IMPL", "TESTING_ONLY_GenericMode")  # a foreign kernel
    lib2.impl("mm", lambda a, b: a.clone())
    with FlopCounter():
        torch.mm(torch.ones(2, 2), torch.ones(2, 2))
messages = [str(w.message) for w in caught]
print(json.dumps(messages))
"""


def test_no_warning_carries_a_cpp_backtrace():
    """Every warning of the counter -- an uncountable call, a worst case, a
    foreign kernel on its key -- in a process that asks torch for C++ stack
    traces: one line each, no "frame #"."""
    env = dict(os.environ, TORCH_SHOW_CPP_STACKTRACES="1")
    proc = subprocess.run([sys.executable, "-c", _EVERY_WARNING], capture_output=True,
                          text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    messages = json.loads(proc.stdout.strip().splitlines()[-1])
    ours = [m for m in messages if m.startswith("mfu_tracker")]
    assert len(ours) >= 3, messages      # worst case, uncounted call, foreign kernel
    assert any("custom formula raised" in m and "ZeroDivisionError" in m for m in ours), ours
    for message in ours:
        assert "\n" not in message, message
    for message in messages:  # torch's own "Overriding a previously registered kernel" included
        assert "frame #" not in message, message
    assert "frame #" not in proc.stderr
