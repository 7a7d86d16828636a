"""Higher-order operators under the C++ observer
(mfu_tracker/flops/counter/_hops.py): flex_attention counted through the
core, any other passed on with the ops inside it counted."""
from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")

from mfu_tracker.flops.counter import FlopCounter, counter_backend  # noqa: E402
from mfu_tracker.flops.counter import _hops  # noqa: E402

pytestmark = pytest.mark.skipif(counter_backend() != "torch-ext",
                                reason="higher-order kernels are the C++ observer's")


def test_every_higher_order_op_gets_a_kernel_at_a_counters_start():
    from torch import _ops

    assert "higher_order::flex_attention" in _hops._COUNTED
    assert "higher_order::flex_attention_backward" in _hops._COUNTED
    with FlopCounter(modules=False):
        pass
    assert _hops._synced == len(_ops._higher_order_ops)


def test_flex_attention_is_counted_by_the_core():
    from torch.nn.attention.flex_attention import flex_attention

    q = torch.randn(1, 2, 128, 16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # eager flex_attention's "use torch.compile" note
        with FlopCounter(modules=False) as counter:
            flex_attention(q, q, q)
    # QK^T and AV: 4 * b * h * s^2 * d = 4 * 1 * 2 * 128^2 * 16
    assert counter.forward_flops == 4 * 1 * 2 * 128 * 128 * 16 == 2_097_152


def test_another_higher_order_op_runs_with_the_ops_inside_it_counted():
    a = torch.ones(4, 8)
    b = torch.ones(8, 3)

    def branch(x, y):
        return x @ y

    with FlopCounter(modules=False) as counter:
        out = torch.cond(torch.tensor(True), branch, branch, (a, b))
    torch.testing.assert_close(out, a @ b)
    assert counter.forward_flops == 2 * 4 * 8 * 3
