"""Where a call runs, as the fallback and the higher-order ops' kernels see it.

The core's site rules (csrc/core/ops/ops.h "Sites") take the backward phase,
grad mode, the autograd node being evaluated (autograd's own, a custom
Function's, a reentrant checkpoint's), whether default saved-tensor hooks
are set, and whether the call is a recomputed node of a compiled backward.
csrc/torch/site.cpp reads them for the C++ observer; :class:`NodeSites`
reads them from Python. Which node is which is one rule, the C core's
(``_C.node_kind``), that both call.
"""
from __future__ import annotations

import threading
from typing import Any, NamedTuple

from ..._native import _C
from ._args import BLOCK_MASK_AT, INPUTS, Args, hop_args

__all__ = ["NodeSites", "Site"]


class Site(NamedTuple):
    """Where a call runs (``_C.op_count``'s phase and autograd keywords;
    csrc/core/ops/ops.h "Sites")."""

    backward_phase: bool = False
    grad_enabled: bool = True
    node: str = "unknown"
    saved_tensor_hooks: bool = False
    recomputed: bool = False


class NodeSites:
    """Per thread: the autograd node being evaluated, what it is (the core's
    rule, ``_C.node_kind``, as csrc/torch/site.cpp applies it) and the
    recomputed calls of its compiled backward still to run
    (``_compiled.recompute_plan``)."""

    def __init__(self) -> None:
        self.local = threading.local()
        self.plans: dict[type, Any] = {}

    def site(self, torch: Any, name: str, args: tuple, kwargs: dict, func: Any,
             grad_enabled: bool) -> Site:
        if torch._C._current_graph_task_id() == -1:
            return Site(grad_enabled=grad_enabled)
        hooks = torch._C._autograd._top_saved_tensors_default_hooks(True) is not None
        node = torch._C._current_autograd_node()
        local = self.local
        if getattr(local, "node", None) is not node:
            local.node = node  # held: its id is not reused meanwhile
            local.kinds, local.budget = self._classify(torch, node)
        kind = local.kinds[name.startswith("higher_order::")]
        recomputed = bool(local.budget) and _take(local.budget, name, args, kwargs, func)
        return Site(True, grad_enabled, kind, hooks, recomputed)

    def _classify(self, torch: Any, node: Any) -> tuple[tuple[str, str], list]:
        """The node's kind for an ordinary call and for a higher-order op's
        call, and the plan of a compiled backward's recomputed calls."""
        custom = isinstance(node, torch._C._FunctionBase)  # else autograd's own node, or none
        name = type(node).__name__ if custom else None
        forward_cls = getattr(type(node), "_forward_cls", None) if custom else None
        module = getattr(forward_cls, "__module__", None)
        kinds = (_C.node_kind(custom, name, module, False), _C.node_kind(custom, name, module, True))
        if kinds[0] != "custom":
            return kinds, []
        from ._compiled import recompute_plan

        cls = type(node)
        if cls not in self.plans:
            self.plans[cls] = recompute_plan(node)
        return kinds, list(self.plans[cls] or ())


def _take(budget: list, name: str, args: tuple, kwargs: dict, func: Any) -> bool:
    """Whether the call is one of the node's recomputed calls still to run
    (and then consume it): the same op kind and role tensor shapes (-1: any)."""
    from ._compiled import kind_of

    kind = kind_of(name)
    if kind is None:
        return False
    a: Any = hop_args(name, args, kwargs) if name in BLOCK_MASK_AT else Args(func, args, kwargs)
    shapes = [getattr(a[pos], "shape", None) for pos, _role, need in INPUTS[name]
              if need == "tensor"]
    for i, (want_kind, want) in enumerate(budget):
        if want_kind != kind or len(want) != len(shapes):
            continue
        if all(w == (-2,) or (s is not None and len(s) == len(w)
                                and all(x < 0 or x == y for x, y in zip(w, s)))
               for s, w in zip(shapes, want)):
            del budget[i]
            return True
    return False
