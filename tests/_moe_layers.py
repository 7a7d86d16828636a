"""Tiny MoE pieces the MoE tests route fixed assignments through: a fixed
router (a pre-hook on transformers' experts module that replaces its
assignment), and two experts modules of the same interface that transformers'
own models never are -- one that aligns its grouped GEMM's groups to a
multiple, one that fills a capacity buffer and drops beyond it."""
from __future__ import annotations

import torch
from torch import nn


def fix_router(model, assignment):
    """Every experts module of ``model`` receives ``assignment`` (one
    expert per token, top-1, weight 1) instead of its router's choice."""
    from mfu_tracker.timing._moe_observer import experts_modules

    fixed = torch.as_tensor(assignment).view(-1, 1)

    def pre(module, args, kwargs):
        hidden = args[0] if args else kwargs["hidden_states"]
        index = fixed.to(hidden.device)
        return (hidden, index, torch.ones(index.shape, dtype=hidden.dtype,
                                          device=hidden.device)), {}

    for _, module in experts_modules(model):
        module.register_forward_pre_hook(pre, with_kwargs=True)


class _Experts(nn.Module):
    def __init__(self, experts: int, hidden: int, width: int) -> None:
        super().__init__()
        self.num_experts = experts
        self.up = nn.Parameter(torch.randn(experts, hidden, width) / hidden ** 0.5)
        self.down = nn.Parameter(torch.randn(experts, width, hidden) / width ** 0.5)


class AlignedExperts(_Experts):
    """torchtitan's layout: tokens sorted by expert, each group padded with
    zero rows to a multiple of ``align``, one ``torch._grouped_mm`` per weight."""

    def __init__(self, experts: int, hidden: int, width: int, align: int) -> None:
        super().__init__(experts, hidden, width)
        self.align = align

    def forward(self, hidden_states, top_k_index, top_k_weights):
        flat = top_k_index.view(-1)
        counts = torch.bincount(flat, minlength=self.num_experts)
        sizes = (counts + self.align - 1) // self.align * self.align
        offs = torch.cumsum(sizes, 0).to(torch.int32)
        buffer = hidden_states.new_zeros(int(offs[-1]), hidden_states.shape[-1])
        order = torch.argsort(flat, stable=True)
        starts = torch.cat([offs.new_zeros(1), offs[:-1]]).long()
        rank = torch.arange(flat.numel()) - torch.cat(
            [counts.new_zeros(1), torch.cumsum(counts, 0)[:-1]])[flat[order]]
        rows = starts[flat[order]] + rank
        buffer[rows] = hidden_states[order]
        out = torch._grouped_mm(torch.relu(torch._grouped_mm(buffer, self.up, offs=offs)),
                                self.down, offs=offs)
        result = torch.zeros_like(hidden_states)
        result[order] = out[rows] * top_k_weights.view(-1, 1)[order]
        return result


class CapacityExperts(_Experts):
    """A capacity buffer: each expert computes ``capacity`` rows (a bmm over
    [experts, capacity, hidden]); a token beyond its expert's capacity is
    dropped (its output is zero)."""

    def __init__(self, experts: int, hidden: int, width: int, capacity: int) -> None:
        super().__init__(experts, hidden, width)
        self.capacity = capacity

    def forward(self, hidden_states, top_k_index, top_k_weights):
        flat = top_k_index.view(-1)
        buffer = hidden_states.new_zeros(self.num_experts, self.capacity, hidden_states.shape[-1])
        slots = [0] * self.num_experts
        kept = []
        for token, expert in enumerate(flat.tolist()):
            if slots[expert] < self.capacity:
                buffer[expert, slots[expert]] = hidden_states[token]
                kept.append((token, expert, slots[expert]))
                slots[expert] += 1
        out = torch.bmm(torch.relu(torch.bmm(buffer, self.up)), self.down)
        result = torch.zeros_like(hidden_states)
        for token, expert, slot in kept:
            result[token] = out[expert, slot]
        return result


class MoEBlock(nn.Module):
    """A residual block around an experts module, with a fixed assignment."""

    def __init__(self, experts: nn.Module, assignment) -> None:
        super().__init__()
        self.experts = experts
        self.assignment = torch.as_tensor(assignment).view(-1, 1)

    def forward(self, x):
        weights = torch.ones(self.assignment.shape, dtype=x.dtype)
        return x + self.experts(x, self.assignment, weights)
