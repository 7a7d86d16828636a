"""Higher-order operators under the C++ observer: counted or passed on, never failed.

Higher-order operators (``torch.ops.higher_order.flex_attention``, ``cond``,
``invoke_subgraph``, ...) are not dispatcher ops: they dispatch in Python, on
the keys of their arguments and of the thread. While a count is active its
dispatch key is in the thread's keys, and a higher-order op with no kernel
for it fails ("could not find kernel for HigherOrderOperator ..."). So
:func:`sync` (run when a count starts) gives every higher-order op defined
so far a Python kernel for the counting key, and makes the ones defined
later fall through it:

* the table's (``flex_attention`` and its backward, csrc/core/ops/op_table.c)
  count through the C core (``_C.op_count`` on the call flattened by
  ``_args.hop_args``) at its site (forward, backward, a custom
  Function's backward, a recompute: ``_sites.NodeSites``, csrc/core/ops/ops.h)
  for each causal convention active on the thread,
  run with the counting key excluded and nested as a counted op
  (``_torch.nest``: the ops inside them, and their own re-call below
  autograd, are theirs, neither counted nor audited), and add the count to
  the thread's counters (``_torch.add_count``) once they ran;
* any other runs on at its next dispatch key with the counting key still
  on, so the ops inside it count; one inside which nothing was counted is
  recorded as uncounted (``_torch.audit_record``), audit or not: the counter
  notes every op it could not handle.

Calls on fake or subclass tensors (``torch.compile`` tracing) and calls
outside a count pass straight on.
"""
from __future__ import annotations

import threading
from typing import Any, Callable

from ..._native import _C
from ._args import count_call, hop_name, is_compiling, largest_input, one_line
from ._sites import NodeSites

__all__ = ["sync"]

_COUNTED = frozenset(row["name"] for row in _C.op_table()
                     if row["name"].startswith("higher_order::"))
_DTYPE_INDEX = {name: i for i, name in enumerate(_C.dtype_names())}
_lock = threading.Lock()
_synced = -1  # how many higher-order ops had a kernel at the last sync
_running = threading.local()  # .hops: the uncounted ones running on this thread
_SITES = NodeSites()  # where a counted call runs (the fallback's reading of it)


def sync(ext: Any) -> None:
    """Give every higher-order op a kernel for the counting key of ``ext``
    (mfu_tracker._torch), and make those defined later fall through it."""
    global _synced
    import torch
    from torch import _ops

    key = torch._C.DispatchKey(ext.COUNT_KEY)
    with _lock:
        if len(_ops._higher_order_ops) == _synced:
            return
        later = getattr(_ops, "_HIGHER_ORDER_OP_DEFAULT_FALLTHROUGH_DISPATCH_KEYS", None)
        if later is not None and key not in later:
            later.append(key)  # higher-order ops defined from now on fall through
        for hop in list(_ops._higher_order_ops.values()):
            try:
                if key not in hop.py_kernels:
                    hop.py_impl(key)(_kernel(hop, ext, key))
            except Exception:  # noqa: BLE001 -- an odd op must not stop counting
                continue
        _synced = len(_ops._higher_order_ops)


def _plain_call(args: tuple, kwargs: dict) -> bool:
    """No fake, functional or subclass tensor among the arguments (nested in
    tuples, lists and dicts), and not tracing for torch.compile: a call that
    really runs."""
    import torch

    if is_compiling():
        return False
    plain = (torch.Tensor, torch.nn.Parameter)
    todo: list[Any] = [args, kwargs]
    while todo:
        value = todo.pop()
        if isinstance(value, torch.Tensor):
            if type(value) not in plain:
                return False
        elif isinstance(value, (tuple, list)):
            todo.extend(value)
        elif isinstance(value, dict):
            todo.extend(value.values())
    return True


def _next(hop: Any, key: Any, args: tuple, kwargs: dict) -> Any:
    """Run ``hop`` on the dispatch key after the counting key (the thread's
    keys unchanged: the ops inside it still count)."""
    from torch._ops import _compute_keyset

    keys = _compute_keyset(args, kwargs, hop.non_fallthrough_keys).remove(key)
    return hop.dispatch(keys.highestPriorityTypeId(), *args, **kwargs)


def _kernel(hop: Any, ext: Any, key: Any) -> Callable[..., Any]:
    import torch

    name = hop_name(hop)
    exclude = torch._C.DispatchKeySet(key)

    def count_and_run(conventions: tuple[str, ...], args: tuple, kwargs: dict) -> Any:
        results: dict[str, Any] = {}
        ext.nest(1)  # from here the ops run are the count's and the op's own
        try:
            try:
                site = _SITES.site(torch, name, args, kwargs, hop, torch.is_grad_enabled())
            except Exception as exc:  # noqa: BLE001 - never raise into the op
                site = exc
            for causal in conventions:
                try:
                    if isinstance(site, Exception):
                        raise site
                    r = count_call(name, hop, args, kwargs, causal, site)
                    results[causal] = (r.executed, r.model_backward, r.approximate,
                                       _DTYPE_INDEX[r.dtype], r.model_self, r.overcompute,
                                       r.site, r.mask_read)
                except Exception as exc:  # noqa: BLE001 - never raise into the op
                    results[causal] = one_line(exc)
            with torch._C._ExcludeDispatchKeyGuard(exclude):
                out = hop(*args, **kwargs)
        finally:
            ext.nest(-1)
        ext.add_count(name, results.get("full"), results.get("half"))
        return out

    def run_uncounted(args: tuple, kwargs: dict) -> Any:
        running = _running.__dict__.setdefault("hops", [])
        if hop in running:  # its own re-call (below autograd): already seen
            return _next(hop, key, args, kwargs)
        before = ext.counted_calls()
        running.append(hop)
        try:
            out = _next(hop, key, args, kwargs)
        finally:
            running.pop()
        if ext.counted_calls() == before:
            shape = largest_input((args, kwargs))
            if shape is not None:
                ext.audit_record(name, shape)
        return out

    def kernel(*args: Any, **kwargs: Any) -> Any:
        conventions = ext.conventions()
        if not conventions or not _plain_call(args, kwargs):
            return _next(hop, key, args, kwargs)
        if name in _COUNTED:
            return count_and_run(conventions, args, kwargs)
        return run_uncounted(args, kwargs)

    return kernel
