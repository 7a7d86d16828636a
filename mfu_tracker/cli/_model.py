"""A model for the command line: built on the meta device from its config
(a preset, a ``config.json``, or a HuggingFace repository id found in the
local HF cache), and counted exactly there.

``profile`` prints the count; ``estimate`` counts through
:func:`~mfu_tracker.transformer_flops`, which falls back to the same meta
count for a ``model_type`` the analytic formula does not know. Nothing is
downloaded and no memory is allocated (meta tensors have shapes, not data).
The building, the inputs that spare transformers reading a meta tensor's
value, and the one-line errors are :mod:`mfu_tracker.flops._meta`'s.
"""
from __future__ import annotations

from typing import Any, Mapping

from ..flops._meta import MetaCountError, exact_config, run_counted
from ..flops.counter import FlopCounter

#: The error of a model that cannot be built or counted (one line).
ModelError = MetaCountError


def meta_count(config: Mapping[str, Any], *, batch_size: int, seq_len: int,
               causal_attention: str, attn_implementation: str = "sdpa",
               forward_only: bool = False, audit: bool = False) -> tuple[FlopCounter, Any]:
    """The exact count of one step (forward + backward, or forward only) of
    ``batch_size`` x ``seq_len`` tokens on the meta device (text only: a
    VLM's vision tower does not run), with the counter's audit
    (``fc.uncounted()``) and module table: (counter, model)."""
    del audit  # the meta count always audits: what it cannot see is listed
    fc, model, _ = run_counted(exact_config(config), batch_size=batch_size, length=seq_len,
                               causal=causal_attention, forward_only=forward_only,
                               attention=attn_implementation, modules=True)
    return fc, model
