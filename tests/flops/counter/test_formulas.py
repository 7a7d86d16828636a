"""Custom FLOP formulas (mfu_tracker/flops/counter/_formulas.py): a
torch.library op counted by the formula registered for it, forgotten when
unregistered, and the names it refuses."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from mfu_tracker.flops.counter import FlopCounter  # noqa: E402
from mfu_tracker.flops.counter._formulas import (  # noqa: E402
    register_flop_formula,
    unregister_flop_formula,
)

_lib = torch.library.Library("mfu_formulas_test", "DEF")
_lib.define("scale_mm(Tensor a, Tensor b, int k) -> Tensor")
_lib.impl("scale_mm", lambda a, b, k: (a @ b) * k, "CompositeExplicitAutograd")
OP = "mfu_formulas_test::scale_mm"


def _call():
    a, b = torch.ones(4, 8), torch.ones(8, 3)
    with torch.no_grad(), FlopCounter() as counter:
        torch.ops.mfu_formulas_test.scale_mm(a, b, 5)
    return counter


def test_a_registered_formula_counts_its_op_with_shapes_and_ints():
    seen = []

    def formula(a, b, k):
        seen.append((a, b, k))
        return 2 * a[0] * a[1] * b[1]  # a matmul: 2 * 4 * 8 * 3 = 192

    register_flop_formula(OP, formula)
    try:
        counter = _call()
        assert seen == [((4, 8), (8, 3), 5)]  # tensors as shapes, ints as they are
        assert counter.forward_flops == 192  # the inner matmul is the op's, not counted again
        with pytest.raises(ValueError):
            register_flop_formula(OP, formula)  # one is registered
    finally:
        unregister_flop_formula(torch.ops.mfu_formulas_test.scale_mm)  # the op object works
    assert _call().forward_flops == 2 * 4 * 8 * 3  # now its aten::mm inside counts
    with pytest.raises(KeyError):
        unregister_flop_formula(OP)


def test_names_and_functions_it_refuses():
    with pytest.raises(ValueError, match="qualified op name like 'mylib::op'"):
        register_flop_formula("scale_mm", lambda *a: 0)
    with pytest.raises(TypeError, match="op_name must be a str"):
        register_flop_formula(3, lambda *a: 0)
    with pytest.raises(ValueError):
        register_flop_formula("aten::mm", lambda *a: 0)  # it has a built-in formula
    with pytest.raises(TypeError):
        register_flop_formula("mfu_formulas_test::other", "not callable")
