"""What a count did not cover: :meth:`FlopCounter.uncounted` and its warning.

``FlopCounter(audit=True)`` records every op outside the op table that took
tensors and during which nothing was counted (a composite op whose parts
are counted, like ``aten::linear``, is covered), with its calls and its
largest input; both backends (the C++ observer's RecordFunction audit and
the TorchDispatchMode fallback) hand the records over as
``{name: (calls, largest input shape)}``. This module turns them into
:class:`UncountedOp` rows and decides which look FLOP-heavy, the ones worth
one warning: a custom op (a namespace that is not torch's own), a
higher-order op, or a name with ``attn``, ``attention``, ``gemm``,
``matmul``, a word ending in ``mm`` (``_int_mm``, ``addmm_``) or ``conv``
(``convert`` excepted) in it.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

__all__ = ["UncountedOp", "uncounted_ops", "merge_uncounted", "heavy_message"]

# Namespaces torch itself registers ops in (torch 2.13's dispatcher, the
# higher-order ops aside): an op in any other is a custom op.
_TORCH_NAMESPACES = frozenset({
    "aten", "prim", "prims", "quantized", "_quantized", "quantization", "sparse",
    "symm_mem", "static_runtime", "c10d", "c10d_functional", "_c10d_functional",
    "_c10d_functional_autograd", "_dtensor", "fsdp", "onednn", "mkldnn",
    "mkldnn_prepacked", "mkl", "profiler", "inductor", "inductor_prims", "debugprims",
    "rngprims", "debug_mode_ops", "_native", "export", "onnx", "onnx_symbolic",
    "streams", "torch_attn", "flex_lib", "_test", "_inductor_test",
})
_HEAVY_PARTS = ("attn", "attention", "gemm", "matmul")


class UncountedOp(NamedTuple):
    """One op the count did not cover.

    Attributes:
        name: the op (``"mylib::attn"``, ``"higher_order::cond"``).
        calls: how many times it ran uncovered.
        largest_input: the shape of its largest tensor input (by elements).
        heavy: it looks FLOP-heavy (see the module docstring).
    """

    name: str
    calls: int
    largest_input: tuple[int, ...]
    heavy: bool


def looks_heavy(name: str) -> bool:
    """Whether an uncounted op's name suggests it does FLOP-heavy work."""
    namespace, _, op = name.partition("::")
    if namespace == "higher_order" or namespace not in _TORCH_NAMESPACES:
        return True
    for word in op.lower().split("_"):
        if word.endswith("mm") or any(part in word for part in _HEAVY_PARTS):
            return True
        if "conv" in word and not word.startswith("convert"):
            return True
    return False


def merge_uncounted(into: dict[str, tuple[int, tuple[int, ...]]],
                    more: Mapping[str, Any]) -> None:
    """Add the records ``more`` to ``into``: calls add up, the larger of
    the two largest inputs stays."""
    for name, (calls, shape) in more.items():
        old_calls, old_shape = into.get(name, (0, ()))
        shape = tuple(int(d) for d in shape)
        into[name] = (old_calls + int(calls),
                      shape if _numel(shape) > _numel(old_shape) or not old_calls else old_shape)


def _numel(shape: tuple[int, ...]) -> int:
    numel = 1
    for d in shape:
        numel *= d
    return numel


def uncounted_ops(records: Mapping[str, tuple[int, tuple[int, ...]]]) -> list[UncountedOp]:
    """The records as rows: FLOP-heavy ones first, then by calls."""
    rows = [UncountedOp(name, calls, tuple(shape), looks_heavy(name))
            for name, (calls, shape) in records.items()]
    return sorted(rows, key=lambda r: (not r.heavy, -r.calls, r.name))


def heavy_message(rows: list[UncountedOp]) -> str | None:
    """The warning about the FLOP-heavy rows (None when there are none)."""
    heavy = [r for r in rows if r.heavy]
    if not heavy:
        return None
    names = ", ".join(f"{r.name} ({r.calls} call{'s' if r.calls != 1 else ''}, largest input "
                      f"{list(r.largest_input)})" for r in heavy)
    return (f"ops outside the FLOP table that look FLOP-heavy ran and were not counted: {names}. "
            "Their FLOPs are missing from the totals (and from MFU); give a custom op a "
            "formula with register_flop_formula(op, fn)")
