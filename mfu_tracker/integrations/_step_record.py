"""What one optimizer step did, as a training integration saw it.

A :class:`StepRecord` is filled by an adapter (``MFUOptimizerWrapper``, the
framework callbacks) while the step runs: its micro-batches' shapes, real
tokens, VLM grids and -- when the step was counted -- its counted FLOPs. The
step-FLOPs policy (:mod:`._step_flops`) resolves its FLOPs from it.

**Tokens** (:meth:`StepRecord.record_inputs`, a forward pre-hook): the ones of
``attention_mask``, else every position of ``input_ids`` (or of
``inputs_embeds``); a mask's row sums stay on the device (no sync) and are
read for a whole window in one transfer (:func:`read_tokens`) at a logging
step, after the training loop's own loss read.

Units: FLOPs (not FLOP/s), tokens.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence

from ..timing._totals import StepSums

#: warn_once(key, message): one warning per key and run.
WarnOnce = Callable[[str, str], None]


@dataclass(frozen=True)
class Flops:
    """The FLOPs of a step or a block, as counted or estimated: the step
    record's FLOP fields (model, executed, over-compute, ...; a kind not
    given is absent: over-compute then counts 0) and the forward FLOPs the
    HFU knobs scale."""

    sums: StepSums
    forward_flops: float

    @property
    def model_flops(self) -> Optional[float]:
        return self.sums.model_flops

    @property
    def executed_flops(self) -> Optional[float]:
        return self.sums.executed_flops

    def scaled(self, factor: float) -> "Flops":
        """Every count x ``factor``."""
        return Flops(self.sums.scaled(factor), self.forward_flops * factor)

    def minus(self, before: "Flops") -> "Flops":
        """The counts since ``before``."""
        return Flops(self.sums.minus(before.sums), self.forward_flops - before.forward_flops)


class Reference(NamedTuple):
    """The last counted step a step closed uncounted is scaled from."""

    flops: Flops
    work_tokens: Optional[float]   # its tokens whose shapes ran (None: unknown)


class ClosedStep(NamedTuple):
    """A closed step waiting for its work to be booked."""

    step: int                      # its global step (Tracker.book()'s)
    record: "StepRecord"


class MicroBatch(NamedTuple):
    """A micro-batch's shape, for the analytic count."""

    batch: int
    seq_len: int
    lengths: Any                   # the mask's row sums (on the device), or None


def dtype_shares(by_dtype: Mapping[str, float]) -> Optional[Dict[str, float]]:
    """Each dtype's share of ``by_dtype``'s FLOPs (None when it has none)."""
    total = float(sum(by_dtype.values()))
    if not total > 0:
        return None
    return {name: float(flops) / total for name, flops in by_dtype.items() if flops}


def batch_tokens(batch: Any) -> Optional[int]:
    """Tokens of a sample batch: the ``attention_mask`` ones, else the
    ``input_ids`` elements, else the elements of an integer tensor (one sync:
    for a profile, not for training steps)."""
    import torch

    if isinstance(batch, Mapping):
        mask = batch.get("attention_mask")
        if isinstance(mask, torch.Tensor):
            return int(mask.sum())
        ids = batch.get("input_ids")
        if isinstance(ids, torch.Tensor):
            return ids.numel()
    if isinstance(batch, torch.Tensor) and not batch.is_floating_point():
        return batch.numel()
    return None


class StepRecord:
    """What one optimizer step (or one block of it) did, as an adapter saw it.

    ``counted``: its counted FLOPs (None: not counted); ``reference``: the
    last counted step's (:class:`Reference`) when it closed uncounted;
    ``work_tokens``: tokens whose shapes ran (None: unknown); ``tokens``: real
    tokens per micro-batch (ints, floats or 0-d tensors still on the device);
    ``tokens_missing``: a micro-batch without a token count; ``batches``: a
    :class:`MicroBatch` per micro-batch, for the analytic count; ``grids``: a
    VLM batch's image and video grids per micro-batch (the vision tower's
    work); ``micro_batches``.
    """

    __slots__ = ("counted", "reference", "work_tokens", "tokens", "tokens_missing", "batches",
                 "micro_batches", "shares", "grids")

    def __init__(self) -> None:
        self.counted: Optional[Flops] = None
        self.reference: Optional[Reference] = None
        self.work_tokens: Optional[float] = None
        self.tokens: List[Any] = []
        self.tokens_missing = False
        self.batches: List[MicroBatch] = []
        self.micro_batches = 0
        #: each compute dtype's share of the step's model FLOPs (None: unknown)
        self.shares: Optional[Dict[str, float]] = None
        #: per micro-batch, a VLM batch's image_grid_thw and video_grid_thw
        #: tensors (None where absent), read at a logging step
        self.grids: List[Grids] = []

    def add_block(self, num_tokens: Optional[float]) -> None:
        """A micro-batch whose tokens the user gave (``None``: unknown)."""
        self.micro_batches += 1
        if num_tokens is None:
            self.tokens_missing = True
        else:
            self.tokens.append(num_tokens)
            self.work_tokens = (self.work_tokens or 0.0) + num_tokens

    def record_inputs(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
        """A micro-batch from the model's inputs (a forward pre-hook's
        ``args`` / ``kwargs``): its shape, and its real tokens summed on the
        inputs' device (no synchronization)."""
        import torch

        ids = kwargs.get("input_ids")
        if ids is None and args and isinstance(args[0], torch.Tensor):
            ids = args[0]
        if not isinstance(ids, torch.Tensor):
            embeds = kwargs.get("inputs_embeds")
            if not isinstance(embeds, torch.Tensor) or embeds.dim() < 2:
                return
            shape = tuple(embeds.shape[:2])
        else:
            shape = tuple(ids.shape) if ids.dim() == 2 else (1, ids.numel())
        batch, seq = shape
        self.micro_batches += 1
        self.work_tokens = (self.work_tokens or 0) + batch * seq
        self.grids.append(Grids(*(
            g.detach() if isinstance(g, torch.Tensor) and g.dim() == 2 and g.shape[-1] == 3
            else None for g in (kwargs.get("image_grid_thw"), kwargs.get("video_grid_thw")))))
        mask = kwargs.get("attention_mask")
        if isinstance(mask, torch.Tensor) and mask.dim() == 2 and tuple(mask.shape) == shape:
            lengths = mask.detach().sum(-1)      # on the mask's device: no sync
            self.tokens.append(lengths.sum())
            self.batches.append(MicroBatch(batch, seq, lengths))
        else:
            self.tokens.append(batch * seq)
            self.batches.append(MicroBatch(batch, seq, None))


class Grids(NamedTuple):
    """A micro-batch's VLM grids: tensors while recorded, then rows [t, h, w]
    as read (None: absent)."""

    image: Any
    video: Any


class TokenReads(NamedTuple):
    """What :func:`read_tokens` reads per record."""

    tokens: List[Optional[float]]          # real tokens (None: unknown)
    lengths: List[List[List[int]]]         # per micro-batch, its sequences' lengths
    grids: List[List[Grids]]               # per micro-batch, its VLM grids


def read_tokens(records: Sequence[StepRecord]) -> TokenReads:
    """Real tokens of each record (None: unknown), the per-sequence lengths
    of each of its micro-batches (``[]`` without a mask) and their VLM grids,
    read from the device in one transfer."""
    import torch

    tensors = []
    for record in records:
        tensors.extend(t for t in record.tokens if isinstance(t, torch.Tensor))
        tensors.extend(rows for _, _, rows in record.batches if rows is not None)
        tensors.extend(g for pair in record.grids for g in pair if g is not None)
    values: List[Any] = []
    if tensors:
        device = tensors[0].device
        values = torch.cat([t.reshape(-1).to(device=device, dtype=torch.long) for t in tensors]).tolist()
    pos = 0

    def take(n: int) -> List[int]:
        nonlocal pos
        out = values[pos:pos + n]
        pos += n
        return out

    def rows(grid: Any) -> Optional[List[List[int]]]:
        if grid is None:
            return None
        flat = take(grid.numel())
        return [flat[i:i + 3] for i in range(0, len(flat), 3)]

    totals: List[Optional[float]] = []
    lengths: List[List[List[int]]] = []
    grids: List[List[Grids]] = []
    for record in records:
        total = 0.0
        for t in record.tokens:
            total += take(1)[0] if isinstance(t, torch.Tensor) else t
        totals.append(None if record.tokens_missing or not record.tokens else total)
        lengths.append([take(rows.numel()) if rows is not None else [] for _, _, rows in record.batches])
        grids.append([Grids(rows(image), rows(video)) for image, video in record.grids])
    return TokenReads(totals, lengths, grids)
