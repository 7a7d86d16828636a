"""Custom FLOP formulas: :func:`register_flop_formula` for torch ops outside
the C core's table (``torch.library`` custom ops).

The registry is one, in ``_C`` (csrc/python/py_ops.h); both counter
backends read it, so a formula counts the same on either.
"""
from __future__ import annotations

from typing import Any, Callable

from ..._native import _C
from ._backend import current_backend

__all__ = ["register_flop_formula", "unregister_flop_formula"]


def _op_name(op: Any) -> str:
    if isinstance(op, str):
        name = op
    else:
        schema = getattr(op, "_schema", None)
        if schema is None:
            # an OpOverloadPacket: its default overload's schema
            default = getattr(op, "default", None)
            schema = getattr(default, "_schema", None)
        if schema is None:
            raise TypeError(f"op_name must be a str like 'mylib::op' or a torch op, not {op!r}")
        name = schema.name
    if "::" not in name or name.startswith("::") or name.endswith("::"):
        raise ValueError(f"op_name must be a qualified op name like 'mylib::op', not {name!r}")
    return name


def register_flop_formula(op_name: Any, fn: Callable[..., Any]) -> None:
    """Count the custom op ``op_name`` (``"mylib::my_matmul"`` or the op
    object) with ``fn``.

    ``fn`` receives the op's arguments in schema order, tensors replaced by
    their shapes (tuples), ints / floats / bools / int lists as they are and
    anything else as None. It returns the FLOPs of the call (an int >= 0), or
    a pair ``(flops, model_backward_flops)``; with a bare int a forward call
    whose tensor inputs require grad adds ``2 * flops`` of model backward.
    Ops called inside a counted op are not counted again.

    Both counter backends read the one registry (in ``_C``); registering
    and unregistering are safe from any thread, also while counters run.

    Raises:
        ValueError: ``op_name`` has a built-in formula or one is registered.
        TypeError: ``fn`` is not callable.
    """
    _C.register_flop_formula(_op_name(op_name), fn)
    sync = getattr(current_backend(), "sync", None)
    if sync is not None:
        sync()  # counters already running count the op from now on


def unregister_flop_formula(op_name: Any) -> None:
    """Forget the formula :func:`register_flop_formula` gave ``op_name``.

    Raises:
        KeyError: none is registered.
    """
    _C.unregister_flop_formula(_op_name(op_name))
