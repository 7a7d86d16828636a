"""The result of a FLOP count without a run: :class:`TransformerFlops`
(analytic, or the exact meta-device count of a model the formulas do not
know). Units: FLOPs (not per second)."""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

__all__ = ["TransformerFlops"]

#: The counting methods of ``transformer_flops(formula=...)`` (the C core's).
FORMULAS = ("6n", "palm", "matmul")


@dataclasses.dataclass(frozen=True)
class TransformerFlops:
    """FLOPs of one batch (all in FLOPs, not FLOP/s): analytic, or, for a
    model type without a formula, the exact meta-device count
    (``conventions["formula"] == "exact"``).

    Attributes:
        model_flops: MFU numerator for the batch (forward + backward the
            training needs; recompute excluded), vision tower included.
        hardware_flops: HFU numerator: model FLOPs + activation recompute.
        forward_flops: one forward pass over the batch (inference cost).
        attention_flops: the attention core (QKᵀ and AV) inside
            ``forward_flops``; 0 with the ``"6n"`` formula; None for an
            exact count (the counter does not split attention from the
            other matmuls).
        flops_per_token: ``model_flops / num_tokens``.
        num_tokens: real (unpadded) language tokens in the batch.
        num_params: every parameter once (tied embeddings once), as
            ``model.num_parameters()`` counts them.
        num_embedding_params: N_emb: the token (and learned position)
            embedding tables.
        num_active_params: ``num_params`` with only the active experts
            (None for an exact count: which experts are active is not
            known from the parameters).
        num_adapter_params: LoRA A and B matrices (0 without LoRA).
        conventions: how the numbers were counted (formula, causal
            convention, attention spans, lm_head / embedding handling, LoRA,
            recompute, sequence source, vision inputs), as a read-only
            mapping.
        conventions_str: the same as one readable line.
        language_flops: the model FLOPs of the language model (the
            lmms-engine convention's numerator).
        vision_flops: the model FLOPs of the vision tower (0 without
            images or videos); ``language_flops + vision_flops ==
            model_flops``.
        scan_flops: the forward matmuls of chunked linear-attention / SSM
            scans inside ``forward_flops`` (0 without such layers; None for
            an exact count).
    """

    model_flops: float
    hardware_flops: float
    forward_flops: float
    attention_flops: float | None
    flops_per_token: float
    num_tokens: int
    num_params: int
    num_embedding_params: int
    num_active_params: int | None
    num_adapter_params: int
    conventions: Mapping[str, Any]
    conventions_str: str
    language_flops: float = 0.0
    vision_flops: float = 0.0
    scan_flops: float | None = 0.0

    def __str__(self) -> str:
        return (
            f"{self.flops_per_token / 1e9:.2f} GFLOP/token x {self.num_tokens:,} "
            f"tokens = {self.model_flops:.4g} model FLOPs "
            f"({self.hardware_flops:.4g} hardware); {self.conventions_str}"
        )
