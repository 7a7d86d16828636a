"""torch.compile support: the recomputed calls of a compiled backward
(AOTAutograd), and frames torch.compile must run eagerly.

A compiled region runs as one custom autograd Function: its forward with
grad mode off, its backward (``CompiledFunctionBackward``) as a custom
Function's backward, whose calls count as model FLOPs as they run (the
core's CUSTOM_BACKWARD site, csrc/core/ops/ops.h). With activation checkpointing
inside the region (or a memory budget), AOTAutograd's partitioner moves
forward ops into that backward graph to recompute them there; those must
stay HFU-only (the RECOMPUTE site).

The backward graph tells them apart: a counted node that does not depend on
any ``tangents_*`` input (the incoming gradients) is forward work, i.e.
recomputed. :func:`recompute_plan` lists, once per compiled graph, each
such node's op kind and the shapes of the tensors its count reads (a
symbolic size as -1); both counters then take, per backward call, the calls
that match a listed one as recomputed (csrc/torch/site.cpp, ``_dispatch``).
Matching by kind and shapes, not by name, survives inductor's lowering
(``addmm`` may run as ``mm``), and calls with the same kind and shapes cost
the same, so which of them is taken does not change a total.

NB: a backward graph rebuilt from the AOTAutograd cache carries no shapes:
its recomputed calls are then matched by kind alone (the first calls of
that kind in each backward call), with one warning. A Linear's forward,
input-gradient and weight-gradient matmuls cost the same, so this is exact
as long as the recomputed matmuls and the others of a backward have the
same sizes.

Frames run eagerly (:func:`run_eagerly`): ``torch.compile(model)`` evaluates
every Python frame called under it -- ``nn.Module.__call__`` and
``_call_impl`` are skipped by its rules, but a forward hook of ours that
``_call_impl`` runs would be compiled on its own, and the tracker call in it
would break that frame (an extra graph break). Marked, such a frame and the
frames it calls run eagerly; traced *inline* (a hook inside a region that is
itself compiled, ``module.compile()``) it is still traced, so each such
function also checks ``torch.compiler.is_compiling()`` first.

Importing this module does not import torch.
"""
from __future__ import annotations

import sys
import warnings
from typing import Any, Optional

from ..._native import _C

__all__ = ["apply_deferred", "recompute_plan", "run_eagerly"]

# op name -> (kind, positions of the tensors its count reads)
_ROWS: dict[str, tuple[str, tuple[int, ...]]] = {
    row["name"]: (row["kind"], tuple(pos for pos, _role, need in row["inputs"] if need == "tensor"))
    for row in _C.op_table()
}
_KIND_OF_NAME: dict[str, str] = {name: kind for name, (kind, _) in _ROWS.items()}

_warned: set[str] = set()
ANY_SHAPE = (-2,)  # a shape the graph does not carry: any tensor matches


def _warn_once(key: str, message: str) -> None:
    if key not in _warned:
        _warned.add(key)
        warnings.warn(f"mfu_tracker: {message}", RuntimeWarning, stacklevel=3)


def _shape(value: Any) -> Optional[tuple[int, ...]]:
    shape = getattr(value, "shape", None)
    if shape is None:
        return None
    return tuple(d if isinstance(d, int) else -1 for d in shape)


def _plan_of_graph(graph: Any) -> list[tuple[str, tuple[tuple[int, ...], ...]]]:
    tangent: set[Any] = set()
    plan = []
    for node in graph.nodes:
        if node.op == "placeholder":
            if str(node.target).startswith("tangents"):
                tangent.add(node)
            continue
        if any(arg in tangent for arg in node.all_input_nodes):
            tangent.add(node)
            continue
        schema = getattr(node.target, "_schema", None)
        row = _ROWS.get(schema.name) if schema is not None else None
        if node.op != "call_function" or row is None:
            continue
        kind, positions = row
        shapes = []
        for pos in positions:
            arg = node.args[pos] if pos < len(node.args) else None
            if arg is None:
                shapes.append(())
                continue
            shape = _shape(arg.meta.get("val")) if hasattr(arg, "meta") else None
            if shape is None:
                _warn_once("shapes", "a compiled backward graph (an AOTAutograd cache hit) "
                           "carries no shapes: its recomputed calls are matched by op kind "
                           "only (exact when they have the sizes of the other calls of that "
                           "kind)")
            shapes.append(shape if shape is not None else ANY_SHAPE)
        plan.append((kind, tuple(shapes)))
    return plan


def recompute_plan(ctx: Any) -> Optional[list[tuple[str, tuple[tuple[int, ...], ...]]]]:
    """The recomputed calls of the compiled backward whose node (its
    Function context) is ``ctx``: ``[(op kind, (shape, ...)), ...]``, or
    None when it recomputes nothing counted or is not a compiled backward.
    Never raises: a graph it cannot read gives one warning, and its
    recompute (if any) counts as model FLOPs."""
    forward_cls = getattr(type(ctx), "_forward_cls", None)
    info = getattr(forward_cls, "_lazy_backward_info", None)
    if info is None:
        return None
    try:
        module = getattr(info, "bw_module", None)
        if module is None and callable(getattr(info, "bw_module_fn", None)):
            module = info.bw_module_fn()  # an AOTAutograd cache hit
        plan = _plan_of_graph(module.graph)
    except Exception as exc:  # noqa: BLE001 - never raise into a backward
        _warn_once("graph", f"cannot read a compiled backward graph ({exc!r}); activation "
                   "recompute inside it, if any, counts as model FLOPs")
        return None
    return plan or None


def kind_of(op_name: str) -> Optional[str]:
    """The op table kind of ``op_name`` ("mm", "attention", ...), or None."""
    return _KIND_OF_NAME.get(op_name)


#: (code, callees) waiting for torch._dynamo to be imported (run_eagerly)
_deferred: list[tuple[Any, bool]] = []


def run_eagerly(*functions: Any, callees: bool = False) -> None:
    """Have torch.compile's frame evaluation run these functions' frames
    eagerly -- and the frames they call, unless ``callees`` (then those are
    compiled as usual: the module table's ``__call__`` wrapper, whose callee
    is the model's forward). When ``torch._dynamo`` is not imported yet
    (importing it costs seconds: a run that never compiles does not pay it)
    they wait for :func:`apply_deferred`, which the counter and the
    integrations call before every step or block, and the module table's
    wrapper before a compiled model's first call. Never raises: on a torch
    without the API only the frame counts differ."""
    for fn in functions:
        entry = (getattr(fn, "__func__", fn).__code__, callees)
        if entry not in _deferred:
            _deferred.append(entry)
    apply_deferred()


def apply_deferred() -> None:
    """Apply the waiting :func:`run_eagerly` marks once torch.compile is in use."""
    if not _deferred or "torch._dynamo" not in sys.modules:
        return
    try:
        from torch._dynamo.eval_frame import (
            FrameAction,
            FrameExecStrategy,
            set_code_exec_strategy,
        )

        for code, callees in _deferred:
            set_code_exec_strategy(code, FrameExecStrategy(
                FrameAction.SKIP, FrameAction.DEFAULT if callees else FrameAction.SKIP))
    except Exception:  # noqa: BLE001
        pass
    _deferred.clear()
