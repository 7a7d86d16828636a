"""What the agent reads from the model it found: the tokens among a root
call's inputs, and the dtype the step computes in (docs/run.md, "What is
detected").

**Tokens** of one call of the root module (the outermost call of a module
with trainable parameters, in training mode, with grad on), the first that
exists of:

1. the ``input_ids`` keyword (transformers models);
2. the first positional argument that is an integer tensor (``model(x)``);
3. the first keyword argument that is an integer tensor, except the ones
   that are not the batch's positions (:data:`NOT_TOKENS`: labels, targets,
   masks, position ids);
4. the ``inputs_embeds`` keyword (a [batch, seq, hidden] tensor: batch x seq).

A call with none of them has no token count (tokens/s is left out). The
tokens are the tensor's positions -- a [batch, seq] tensor's batch x seq, any
other shape its element count -- unless an ``attention_mask`` of the same
[batch, seq] shape is given and lives on the CPU: then its ones (padding
left out). A mask on an accelerator is not read: summing it would allocate
on the device and reading it would synchronize, and the agent does neither;
its tokens then include the padding, and the detection line says so.

**dtype**: autocast's when it is on for the root's device, else the
parameters' (bf16, fp16, fp64); fp32 parameters are ``tf32`` on a CUDA
device whose fp32 matmuls may use TF32, else ``fp32``.
"""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

from .._dtypes import normalize_dtype

#: Integer keyword arguments that are not the batch's tokens.
NOT_TOKENS = frozenset({"labels", "targets", "target", "attention_mask", "position_ids",
                        "token_type_ids", "cache_position", "num_items_in_batch"})


def _is_ids(value: Any) -> bool:
    import torch

    return (isinstance(value, torch.Tensor) and value.dim() >= 1 and value.dtype != torch.bool
            and not value.is_floating_point() and not value.is_complex())


def token_ids(args: Sequence[Any], kwargs: Mapping[str, Any]) -> Tuple[Any, str]:
    """(the token tensor or None, the name of the argument it came from)."""
    value = kwargs.get("input_ids")
    if _is_ids(value):
        return value, "input_ids"
    for index, value in enumerate(args):
        if _is_ids(value):
            return value, f"argument {index}"
    for key, value in kwargs.items():
        if key not in NOT_TOKENS and _is_ids(value):
            return value, key
    return None, ""


def call_kwargs(module: Any) -> Mapping[str, Any]:
    """The keyword arguments of the call of ``module`` whose forward
    pre-hooks run now. A global forward pre-hook (how the agent finds the
    root: ``torch.nn.modules.module.register_module_forward_pre_hook``) is
    given only the positional ones, and ``model(**batch)`` passes the tokens
    by keyword; so they are read from the frame of ``Module._call_impl``
    that runs the hooks (its locals ``self`` and ``kwargs``). Empty when no
    such frame is found within a few callers (a torch whose call path
    differs): what only the keywords carry is then left out, as before."""
    import sys

    import torch

    code = getattr(torch.nn.Module._call_impl, "__code__", None)
    frame = sys._getframe(1)
    for _ in range(_CALLERS):
        if frame is None:
            break
        if frame.f_code is code:
            local = frame.f_locals
            kwargs = local.get("kwargs")
            if local.get("self") is module and isinstance(kwargs, dict):
                return kwargs
            break
        frame = frame.f_back
    return {}


#: How many callers :func:`call_kwargs` looks through (the agent's hooks
#: reach ``_begin`` some six frames below ``_call_impl``).
_CALLERS = 16


def token_inputs(args: Sequence[Any], kwargs: Mapping[str, Any]) -> Tuple[Optional[Dict[str, Any]], str]:
    """The inputs of one root call as ``StepRecord.record_inputs`` reads them
    (``input_ids`` and a CPU ``attention_mask``, or ``inputs_embeds``), and
    a description of where they came from; ``(None, "")`` when the call has
    no tokens (module docstring)."""
    import torch

    ids, name = token_ids(args, kwargs)
    if ids is None:
        embeds = kwargs.get("inputs_embeds")
        if isinstance(embeds, torch.Tensor) and embeds.dim() >= 2:
            return {"inputs_embeds": embeds}, "inputs_embeds (batch x sequence)"
        return None, ""
    out: Dict[str, Any] = {"input_ids": ids}
    mask = kwargs.get("attention_mask")
    if not (isinstance(mask, torch.Tensor) and ids.dim() == 2 and mask.shape == ids.shape):
        return out, name
    if mask.device.type != "cpu":
        return out, (f"{name}, padding included: the attention_mask is on {mask.device.type} "
                     "and reading it would synchronize")
    out["attention_mask"] = mask
    return out, f"attention_mask ones of {name}"


def detect_dtype(module: Any, device: Any) -> Tuple[str, str]:
    """(the dtype the root computes in, where it came from) -- module docstring."""
    import torch

    kind = getattr(device, "type", str(device))
    try:
        if torch.is_autocast_enabled(kind):
            return normalize_dtype(torch.get_autocast_dtype(kind)), "autocast"
    except (RuntimeError, TypeError, ValueError):  # a device type autocast does not know
        pass
    param = next((p for p in module.parameters() if p.is_floating_point()), None)
    if param is None or param.dtype == torch.float32:
        if kind == "cuda" and (torch.backends.cuda.matmul.allow_tf32
                               or torch.get_float32_matmul_precision() != "highest"):
            return "tf32", "fp32 parameters, and TF32 matmuls are allowed"
        return "fp32", "the parameters"
    return normalize_dtype(param.dtype), "the parameters"
