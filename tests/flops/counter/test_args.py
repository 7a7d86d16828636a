"""A dispatched call's arguments as the C core takes them
(mfu_tracker/flops/counter/_args.py): schema defaults, the largest input,
and one call counted at a site, against FlopCounterMode."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from mfu_tracker.flops.counter._args import (  # noqa: E402
    INPUTS,
    Args,
    count_call,
    hop_name,
    largest_input,
    one_line,
    tf32_bits,
)
from mfu_tracker.flops.counter._sites import Site  # noqa: E402


def test_args_fill_schema_defaults_and_keywords():
    func = torch.ops.aten.addmm.default  # (self, mat1, mat2, *, beta=1, alpha=1)
    a = Args(func, (1, 2, 3), {"alpha": 5})
    assert (a[0], a[2], a[3], a[4], a[9]) == (1, 3, 1, 5, None)


def test_mm_counted_at_a_site_as_flop_counter_mode_counts_it():
    a, b = torch.ones(4, 8), torch.ones(8, 3)
    assert "aten::mm" in INPUTS
    with FlopCounterMode(display=False) as mode:
        torch.mm(a, b)
    forward = count_call("aten::mm", torch.ops.aten.mm.default, (a, b), {}, "full", Site())
    assert forward.executed == mode.get_total_flops() == 2 * 4 * 8 * 3
    assert forward.dtype == "fp32"
    assert count_call("aten::relu", torch.ops.aten.relu.default, (a,), {}, "full",
                      Site()) is None  # neither in the table nor with a formula


def test_helpers():
    assert largest_input(((torch.ones(2, 3), [torch.ones(4, 4)]), {"x": torch.ones(1)})) == (4, 4)
    assert largest_input((1, "a")) is None
    assert tf32_bits((torch.ones(1),)) == 0  # the CPU has no TF32
    assert one_line(RuntimeError("first line\nframe #0: ...")) == "first line"
    assert one_line(ValueError()) == "ValueError"
    from torch._higher_order_ops.flex_attention import flex_attention as hop
    assert hop_name(hop) == "higher_order::flex_attention"
