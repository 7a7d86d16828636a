"""What the exact count of a linear-attention model holds beyond the analytic
count (csrc/core/model/family_hybrid.c), per sequence: the tests that compare the
two take it off the exact count until the analytic formulas follow.

The exact count charges the backward that ran (docs/flops.md, "Only what
reaches the loss gets a backward"); the analytic one charges 3x every matmul
of the chunked scan. Two differences, in transformers' torch fallbacks (chunk
C = 64):

* gated DeltaNet (``torch_chunk_gated_delta_rule``: Qwen3-Next, Qwen3.5,
  OLMo-hybrid) solves its chunk's unit triangle with
  ``linalg.solve_triangular`` twice (for the values and the decayed keys);
  each backward forms the triangle's gradient -(grad X^T) with a matmul of
  [C, d] by [d, C]: + 2 C^2 (d_k + d_v) per value head and chunk;
* the last chunk's state update (k^T v_new, [d_k, C] by [C, d_v]) feeds no
  loss when the final state is not returned (training): its backward never
  runs, - 2 x 2 C d_k d_v per head (gated DeltaNet and KDA alike).

Delete a model type's entry once the analytic count does the same.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

C = 64  # the chunk of both torch fallbacks


def exact_minus_analytic(saved: Mapping[str, Any], seq_len: int) -> int:
    """The difference for one sequence of ``seq_len`` tokens of the model
    whose saved config (``config.json`` as a dict) is ``saved``; 0 for
    other model types."""
    text = saved.get("text_config") or saved
    layers = list(text.get("layer_types") or []).count("linear_attention")
    if text["model_type"] in ("qwen3_next", "qwen3_5_text", "qwen3_5_moe_text"):
        d_k, d_v = text["linear_key_head_dim"], text["linear_value_head_dim"]
        heads, chunks = text["linear_num_value_heads"], -(-seq_len // C)
        return layers * heads * (chunks * 2 * C * C * (d_k + d_v) - 2 * 2 * C * d_k * d_v)
    if text["model_type"] == "kimi_linear":
        kda = text.get("linear_attn_config") or {}
        heads = kda.get("num_heads", text.get("linear_num_heads"))
        d = kda.get("head_dim", text.get("linear_head_dim"))
        return -layers * heads * 2 * 2 * C * d * d
    return 0
