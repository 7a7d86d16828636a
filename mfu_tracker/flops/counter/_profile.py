"""``profile_flops``: the FLOPs of one sample step, counted.

Runs the model once (forward, and a backward from its loss through
``torch.autograd.grad``: no ``.grad`` is left) under a
:class:`~._counter.FlopCounter`; ``device="meta"`` counts a full-size model
without memory. Compatible with the pure-Python mfu-tracker's
``profile_flops(model, kwargs=sample, with_backward=True)``.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable, NamedTuple

from ..._validate import check_flag
from ._counter import FlopCounter

__all__ = ["FlopProfile", "profile_flops", "profile_flops_with_hfu"]


class FlopProfile(NamedTuple):
    """Counted FLOPs of one sample step (``flops, hfu_flops = ...``).

    Attributes:
        flops: model FLOPs (MFU numerator).
        hfu_flops: executed FLOPs (HFU numerator).
    """

    flops: int
    hfu_flops: int


def _normalize_batch(args: Any, kwargs: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    import torch

    if kwargs is not None and not isinstance(kwargs, Mapping):
        raise TypeError(f"kwargs must be a dict of model inputs, not {type(kwargs).__name__}")
    kw = dict(kwargs or {})
    if args is None:
        return (), kw
    if isinstance(args, torch.Tensor):
        return (args,), kw
    if isinstance(args, (tuple, list)):
        return tuple(args), kw
    if isinstance(args, Mapping):
        if kwargs is not None:
            raise TypeError("give the batch as args or as kwargs, not a dict in both")
        return (), dict(args)
    raise TypeError("args must be a tensor, a tuple / list of inputs or a dict of model inputs, "
                    f"not {type(args).__name__}")


def _to_device(value: Any, device: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, tuple):
        return tuple(_to_device(v, device) for v in value)
    if isinstance(value, list):
        return [_to_device(v, device) for v in value]
    if isinstance(value, Mapping):
        return {k: _to_device(v, device) for k, v in value.items()}
    return value


def _loss_of(output: Any) -> Any:
    import torch

    loss = getattr(output, "loss", None)
    if isinstance(loss, torch.Tensor):
        return loss
    candidates: list[Any]
    if isinstance(output, torch.Tensor):
        candidates = [output]
    elif isinstance(output, Mapping):
        candidates = list(output.values())
    elif isinstance(output, (tuple, list)):
        candidates = list(output)
    else:
        to_tuple = getattr(output, "to_tuple", None)
        candidates = list(to_tuple()) if callable(to_tuple) else []
    for value in candidates:
        if isinstance(value, torch.Tensor) and value.is_floating_point() and value.requires_grad:
            return value
    return None


def _model_device(model: Any) -> Any:
    import torch

    for tensor in model.parameters():
        return tensor.device
    for tensor in model.buffers():
        return tensor.device
    return torch.device("cpu")


def _run_profile(model: Any, args: Any, kwargs: Any, with_backward: bool,
                 causal_attention: str, device: Any, modules: bool) -> FlopCounter:
    import torch

    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, not {type(model).__name__}")
    check_flag(with_backward, "with_backward")
    call_args, call_kwargs = _normalize_batch(args, kwargs)
    if device is not None:
        from ..._validate import check_device

        target = check_device(device)
    else:
        target = _model_device(model)
    run: Callable[[], Any]
    if target.type == "meta":
        call_args = _to_device(call_args, target)
        call_kwargs = _to_device(call_kwargs, target)
        if _model_device(model).type != "meta":
            # A meta twin of every parameter and buffer (no memory), same
            # requires_grad: the model itself is untouched.
            params = {n: torch.empty_like(p, device="meta").requires_grad_(p.requires_grad)
                      for n, p in model.named_parameters()}
            buffers = {n: torch.empty_like(b, device="meta")
                       for n, b in model.named_buffers()}
            state = {**params, **buffers}
            def run() -> Any:
                return torch.func.functional_call(model, state, call_args, call_kwargs)
        else:
            def run() -> Any:
                return model(*call_args, **call_kwargs)
    else:
        def run() -> Any:
            return model(*call_args, **call_kwargs)

    counter = FlopCounter(causal_attention=causal_attention, modules=modules)
    with counter:
        with torch.enable_grad() if with_backward else torch.no_grad():
            output = run()
        if with_backward:
            loss = _loss_of(output)
            if loss is not None:
                if loss.numel() != 1:
                    loss = loss.float().sum()
                # autograd.grad, not backward(): no .grad left on the model
                leaves = _grad_leaves(loss)
                if leaves:
                    torch.autograd.grad(loss, leaves, allow_unused=True)
    return counter


def _grad_leaves(loss: Any) -> list[Any]:
    """The leaf tensors requiring grad that `loss` depends on."""
    leaves: list[Any] = []
    seen: set[int] = set()
    todo = [loss.grad_fn]
    while todo:
        fn = todo.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        variable = getattr(fn, "variable", None)
        if variable is not None:
            leaves.append(variable)
        todo.extend(next_fn for next_fn, _ in fn.next_functions)
    return leaves


def profile_flops(model: Any, args: Any = None, kwargs: Any = None, *,
                  with_backward: bool = True, causal_attention: str = "full",
                  device: Any = None) -> int:
    """Model FLOPs of one step of ``model`` on a sample batch (an int).

    Runs ``model(*args, **kwargs)`` under a :class:`FlopCounter` and, with
    ``with_backward``, a backward from its loss (``output.loss``, else the
    first float output that requires grad, summed) through
    ``torch.autograd.grad``, so no ``.grad`` is left behind.
    ``with_backward=True`` gives forward + backward model FLOPs (3x the
    forward when every weight trains; less for frozen weights);
    ``with_backward=False`` runs under ``no_grad`` and gives the forward.

    ``device="meta"`` (or a model already on ``meta``) counts without
    memory: parameters, buffers and inputs get ``meta`` twins (the model is
    untouched), so full-size models profile on any machine. Data-dependent
    ops (``.item()``, ``nonzero``) cannot run on ``meta``.

    Compatible with the pure-Python mfu-tracker's
    ``profile_flops(model, kwargs=sample, with_backward=True)``.

    Raises:
        TypeError: ``model`` is not an ``nn.Module``; the batch is not a
            tensor, a tuple / list or a dict.
    """
    counter = _run_profile(model, args, kwargs, with_backward, causal_attention, device, False)
    return counter.model_flops if with_backward else counter.forward_flops


def profile_flops_with_hfu(model: Any, args: Any = None, kwargs: Any = None, *,
                           with_backward: bool = True, causal_attention: str = "full",
                           device: Any = None) -> FlopProfile:
    """:func:`profile_flops` and the executed (HFU) FLOPs of the same run."""
    counter = _run_profile(model, args, kwargs, with_backward, causal_attention, device, False)
    flops = counter.model_flops if with_backward else counter.forward_flops
    return FlopProfile(flops=flops, hfu_flops=counter.executed_flops)
