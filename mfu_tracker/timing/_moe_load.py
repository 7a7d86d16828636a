"""The figures of a mixture-of-experts step: expert load, padding, drops.

Pure arithmetic over what one sampled step's MoE layers did
(:mod:`._moe_observer` reads it; docs/moe.md defines every figure). Per
layer, two counts per expert:

* ``routed`` -- the (token, expert) assignments the router made (a token
  sent to k experts counts once at each);
* ``rows`` -- the rows the expert's GEMMs computed: the grouped GEMM's
  group sizes (its offsets' differences), the rows of the per-expert
  matmul of an eager loop, or the capacity of a capacity buffer.

From them, per expert: padded rows ``max(rows - routed, 0)`` (rows computed
for no token: groups aligned to a multiple, buffers filled to a capacity)
and dropped assignments ``max(routed - rows, 0)`` (tokens beyond a
capacity, which the layer never computes). Padded FLOPs are padded rows x
the FLOPs a row costs in that layer's expert GEMMs (every GEMM of the
expert, ``2 x K x N`` each, forward only: the backward scales both sides).

Model figures: ``imbalance`` is the busiest expert's tokens over the mean,
summed over layers (sum_l max_l / sum_l mean_l: the expert GEMMs' pace when
each layer waits for its busiest expert, over a balanced one); the
straggler is the (layer, expert) with the most tokens beyond its layer's
mean.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence

__all__ = ["LayerLoad", "MoELoad", "RankLoads", "layer_load", "model_load", "rank_loads"]


@dataclass(frozen=True)
class LayerLoad:
    """One MoE layer's load on one step (counts are rows: token-expert
    assignments; FLOPs forward only)."""

    name: str
    routed: tuple            # assignments per expert
    rows: tuple              # rows computed per expert
    row_flops: float         # FLOPs one row costs across the expert's GEMMs
    padded_rows: int
    dropped: int
    row_model_flops: float = 0.0   # a row's FLOPs with the backward training runs

    @property
    def padded_model_flops(self) -> float:
        """FLOPs the padded rows cost, forward and the backward that runs
        (+1x per GEMM input that needs a gradient)."""
        return self.padded_rows * self.row_model_flops

    @property
    def experts(self) -> int:
        return len(self.routed)

    @property
    def mean(self) -> float:
        return sum(self.routed) / len(self.routed)

    @property
    def imbalance(self) -> Optional[float]:
        """max / mean of tokens per expert; None for a layer that saw no token."""
        mean = self.mean
        return max(self.routed) / mean if mean > 0 else None

    @property
    def straggler(self) -> int:
        """The expert with the most tokens (the lowest index on a tie)."""
        return max(range(len(self.routed)), key=lambda e: (self.routed[e], -e))

    @property
    def computed_rows(self) -> int:
        return sum(self.rows)


def layer_load(name: str, routed: Sequence[int], rows: Optional[Sequence[int]] = None,
               row_flops: float = 0.0, row_model_flops: Optional[float] = None) -> LayerLoad:
    """A layer's load from its routed assignments and computed rows per
    expert (rows None: the layer computed exactly what was routed);
    ``row_model_flops`` (None: ``row_flops``, forward only) a row's FLOPs
    with its backward."""
    routed_t = tuple(int(n) for n in routed)
    if not routed_t or any(n < 0 for n in routed_t):
        raise ValueError(f"routed: one non-negative count per expert, got {routed_t!r}")
    rows_t = routed_t if rows is None else tuple(int(n) for n in rows)
    if len(rows_t) != len(routed_t) or any(n < 0 for n in rows_t):
        raise ValueError(f"rows: one non-negative count per expert ({len(routed_t)}), "
                         f"got {rows_t!r}")
    padded = sum(max(r - t, 0) for r, t in zip(rows_t, routed_t))
    dropped = sum(max(t - r, 0) for r, t in zip(rows_t, routed_t))
    model = row_flops if row_model_flops is None else row_model_flops
    return LayerLoad(name, routed_t, rows_t, float(row_flops), padded, dropped, float(model))


@dataclass(frozen=True)
class RankLoads:
    """Expert parallelism on a sampled step: what the ranks' MoE layers did,
    seen from one rank.

    ``wait_s`` is this rank's wait for the slowest rank, summed over layers:
    sum_l (max_r s_lr - s_l,own), s_lr rank r's seconds in layer l's experts
    (forward). A rank done with its experts early waits that long in the
    all-to-all that returns their outputs. ``straggler_rank`` holds the
    busiest expert: the most tokens of any expert, in any layer (lowest rank
    on a tie)."""

    rank: int
    wait_s: float
    straggler_rank: int
    layer_s: tuple           # by rank: seconds in each layer's experts (forward)


def rank_loads(rank: int, seconds: Sequence[Sequence[float]],
               busiest: Sequence[Sequence[float]]) -> RankLoads:
    """From each rank's seconds and busiest expert's tokens per layer (by rank)."""
    layers = range(len(seconds[rank]))
    wait = sum(max(s[l] for s in seconds) - seconds[rank][l] for l in layers)
    top = max(range(len(busiest)), key=lambda r: (max(busiest[r], default=0.0), -r))
    return RankLoads(rank, wait, top, tuple(tuple(s) for s in seconds))


@dataclass(frozen=True)
class MoELoad:
    """A sampled step's MoE figures: its layers and the model's (``ranks``:
    under expert parallelism, else None)."""

    step: int
    layers: tuple
    ranks: Optional[RankLoads] = None

    def figures(self) -> Dict[str, Any]:
        """The figures under their ``timing._metrics`` field names (None:
        unavailable; the per-layer imbalance a family ``{layer: ratio}``, ``moe/layer_imbalance``)."""
        layers = [layer for layer in self.layers if layer.mean > 0]
        if not layers:
            return {}
        tokens = [n for layer in layers for n in layer.routed]
        total_max = sum(max(layer.routed) for layer in layers)
        total_mean = sum(layer.mean for layer in layers)
        worst = max(layers, key=lambda layer: max(layer.routed) - layer.mean)
        out: Dict[str, Any] = {
            "moe_imbalance": total_max / total_mean,
            "moe_imbalance_max": max(layer.imbalance for layer in layers),
            "moe_tokens_per_expert_min": float(min(tokens)),
            "moe_tokens_per_expert_max": float(max(tokens)),
            "moe_tokens_per_expert_mean": sum(tokens) / len(tokens),
            "moe_straggler_layer": float(self.layers.index(worst)),
            "moe_straggler_expert": float(worst.straggler),
            "moe_straggler_rank": float(0 if self.ranks is None else self.ranks.straggler_rank),
            "moe_padded_rows": float(sum(layer.padded_rows for layer in layers)),
            "moe_dropped_tokens": float(sum(layer.dropped for layer in layers)),
            "moe_dropped_share": sum(layer.dropped for layer in layers) / sum(tokens),
            "moe_sampled_step": float(self.step),
            "moe/layer_imbalance": {layer.name: layer.imbalance for layer in layers},
        }
        computed = sum(layer.computed_rows * layer.row_flops for layer in layers)
        if computed > 0:
            out["moe_padded_flops_share"] = sum(
                layer.padded_rows * layer.row_flops for layer in layers) / computed
        return out

    @property
    def padded_model_flops(self) -> float:
        """The padded rows' FLOPs over every layer, forward and the backward
        that runs: what a count of every computed row (a FlopCounter's)
        holds beyond the routed tokens' model FLOPs (docs/moe.md)."""
        return sum(layer.padded_model_flops for layer in self.layers)

    @property
    def wait_s(self) -> Optional[float]:
        """This rank's wait for the slowest expert-parallel rank (None: one process)."""
        return None if self.ranks is None else self.ranks.wait_s


def model_load(step: int, layers: List[LayerLoad], ranks: Optional[RankLoads] = None) -> MoELoad:
    """The model's load: its layers in the order they ran."""
    return MoELoad(step, tuple(layers), ranks)
