"""A model for the command line: built on the meta device from its config
(a preset, a ``config.json``, or a HuggingFace repository id found in the
local HF cache), and counted exactly there.

``profile`` prints the count; ``estimate`` falls back to it for a
``model_type`` the analytic formula does not know. Nothing is downloaded
and no memory is allocated (meta tensors have shapes, not data).
"""
from __future__ import annotations

from typing import Any, Mapping

from .._install import DISTRIBUTION
from ..flops.counter import FlopCounter


class ModelError(Exception):
    """The config cannot be built into a model here (printed as one line)."""


def _dtype(config: Mapping[str, Any]) -> Any:
    """The config's own dtype, else bf16: what training runs, and what
    torch's grouped-GEMM (transformers 5 MoE experts) needs on meta. The
    FLOPs do not depend on it."""
    import torch

    name = config.get("dtype") or config.get("torch_dtype") or "bfloat16"
    dtype = getattr(torch, str(name).replace("torch.", ""), None)
    return dtype if isinstance(dtype, torch.dtype) else torch.bfloat16


def _hf_config(transformers: Any, config: Mapping[str, Any]) -> Any:
    fields = dict(config)
    model_type = fields.pop("model_type", None)
    if not isinstance(model_type, str):
        raise ModelError("the model config has no model_type")
    try:
        return transformers.AutoConfig.for_model(model_type, **fields)
    except (ValueError, KeyError, TypeError) as exc:
        raise ModelError(f"transformers cannot build a config of type {model_type!r}: {exc}") from exc


def build_meta_model(config: Mapping[str, Any], attn_implementation: str) -> Any:
    """A transformers causal LM (a VLM: its image-text-to-text model) from a
    config dict, on the meta device."""
    import torch

    try:
        import transformers
    except ImportError as exc:
        raise ModelError("profiling a model needs transformers: "
                         f"pip install '{DISTRIBUTION}[hf]'") from exc
    hf_config = _hf_config(transformers, config)
    auto = (transformers.AutoModelForImageTextToText if "vision_config" in config
            else transformers.AutoModelForCausalLM)
    with torch.device("meta"):
        try:
            return auto.from_config(hf_config, attn_implementation=attn_implementation,
                                    dtype=_dtype(config))
        except (ValueError, KeyError) as exc:
            if attn_implementation == "sdpa" and "attention implementation" in str(exc):
                # Gemma 2, gpt-oss, Mamba-2 ...: transformers refuses sdpa; eager
                # attention counts the same matmuls
                return build_meta_model(config, "eager")
            raise ModelError(f"transformers cannot build a model for {config.get('model_type')!r}: "
                             f"{exc}") from exc


def meta_count(config: Mapping[str, Any], *, batch_size: int, seq_len: int,
               causal_attention: str, attn_implementation: str = "sdpa",
               forward_only: bool = False, audit: bool = False) -> tuple[FlopCounter, Any]:
    """The exact count of one step (forward + backward, or forward only) of
    ``batch_size`` x ``seq_len`` tokens on the meta device (text only: a
    VLM's vision tower does not run); ``audit``: with the counter's audit
    (``fc.uncounted()``)."""
    import torch

    model = build_meta_model(config, attn_implementation)
    ids = torch.zeros(batch_size, seq_len, dtype=torch.long, device="meta")
    with FlopCounter(causal_attention=causal_attention, audit=audit) as fc:
        if forward_only:
            with torch.no_grad():
                model(input_ids=ids)
        else:
            logits = model(input_ids=ids).logits
            logits.float().sum().backward()  # meta: no memory, grads are meta too
    return fc, model
