"""The one step-FLOPs policy of the training integrations.

``MFUOptimizerWrapper`` (bare loops), ``MFUCallback`` (``transformers.Trainer``)
and any later integration (Lightning) are adapters: they tell this module
where an optimizer step begins and ends, what ran inside it and what went
into the model; the rules below decide the step's FLOPs, the same way for all
of them. Units: FLOPs (not FLOP/s), tokens.

Which FLOPs a step gets, in order (:meth:`StepFlops.resolve`):

1. **Counted**: every ``count_every``-th optimizer step runs under a
   :class:`~mfu_tracker.counter.FlopCounter` (:class:`StepCounter`) around
   all its micro-batches, on their real shapes. The first counted step runs
   with the counter's audit on: one warning per run names the ops outside
   the FLOP table that look FLOP-heavy and ran uncounted.
2. **Scaled**: a step in between takes the last counted step's FLOPs scaled
   by its work tokens (the tokens whose shapes ran: padded tokens where the
   integration sees the inputs, the user's ``num_tokens`` otherwise); equal
   to it when either has no token count.
3. **Analytic**: ``transformer_flops(model.config, formula="matmul")`` per
   micro-batch, each sequence at its real length (the attention mask's row
   sums) -- where the integration sees the inputs and the config is a
   supported transformer.
4. **Profiled**: ``sample_batch`` counted once (forward + backward) and scaled
   by the step's real tokens over the sample's, or x the step's micro-batches
   without token counts. Profiled before the clock starts when it is the only
   source (``count_every=0`` and no analytic config), else when first needed.

**Compiled models** need no rule of their own: the counter counts a
compiled region's backward as it runs (a custom autograd Function's
backward, csrc/core/ops.h "Sites") and its recompute as HFU only, so a
counted compiled step's model FLOPs equal the eager model's.

**Over-compute** (the 4th figure of a step's FLOPs): executed FLOPs beyond
the model convention that are not recompute (``FlopCounter.overcompute_flops``,
e.g. the math SDPA path under ``causal_attention="half"``); the waterfall
books them to compute. Counted steps carry the counter's; scaled steps scale
it; analytic and profiled steps have none (0).

**Mixed precision** (``mfu_mixed``): a counted step records the share of its
model FLOPs in each compute dtype (``FlopCounter.flops_by_dtype``). A step's
``flops_by_dtype`` is its model FLOPs split by
the shares of its own count, else of the last counted step (scaled,
analytic and profiled steps run the same mix of dtypes); before any step was
counted it is unknown and ``mfu_mixed`` is left out.

**VLMs** (a config with a vision tower, Qwen2.5-VL / Qwen3-VL): the
analytic count takes each micro-batch's ``image_grid_thw`` /
``video_grid_thw`` from the model's inputs (read at a logging step with the
token counts), so the vision tower is in the model FLOPs. The window's
``language_flops`` -- every step's model FLOPs x its language share from the
analytic count of the same batch -- give ``mfu_language``, the convention
that leaves the tower out (lmms-engine's), beside the honest ``mfu``.

**HFU knobs** (the peer's): ``hfu_backward_factor`` f or ``backward_factor``
F replace every step's executed FLOPs with forward x (1 + f) or forward x F;
model FLOPs never change with them.

**Tokens** (:meth:`StepRecord.record_inputs`, a forward pre-hook): the ones of
``attention_mask``, else every position of ``input_ids`` (or of
``inputs_embeds``); a mask's row sums stay on the device (no sync) and are
read for a whole window in one transfer (:func:`read_tokens`) at a logging
step, after the training loop's own loss read.

Nothing here raises into a training loop: failures become one warning (the
adapter's ``warn_once``) and a missing figure.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any, Callable, Deque, Dict, List, Optional, Sequence, Tuple

from .._native import _C
from ..peaks._resolve import dtype_peaks

#: (model, executed, forward, overcompute) FLOPs of a step or a block.
Flops = Tuple[float, float, float, float]
#: warn_once(key, message): one warning per key and run.
WarnOnce = Callable[[str, str], None]


def _scale(flops: Flops, factor: float) -> Flops:
    return (flops[0] * factor, flops[1] * factor, flops[2] * factor, flops[3] * factor)


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

    ``counted``: its counted FLOPs (None: not counted); ``reference``: the last counted step's (FLOPs, work tokens)
    when it closed uncounted; ``work_tokens``: tokens whose shapes ran (None:
    unknown); ``tokens``: real tokens per micro-batch (ints, floats or 0-d
    tensors still on the device); ``tokens_missing``: a micro-batch without a
    token count; ``batches``: (batch, seq_len, row lengths or None) per
    micro-batch, for the analytic count; ``grids``: a VLM batch's image and
    video grids per micro-batch (the vision tower's work); ``micro_batches``.
    """

    __slots__ = ("counted", "reference", "work_tokens", "tokens", "tokens_missing", "batches",
                 "micro_batches", "shares", "grids")

    def __init__(self) -> None:
        self.counted: Optional[Flops] = None
        self.reference: Optional[Tuple[Flops, Optional[float]]] = None
        self.work_tokens: Optional[float] = None
        self.tokens: List[Any] = []
        self.tokens_missing = False
        self.batches: List[Tuple[int, int, Any]] = []
        self.micro_batches = 0
        #: each compute dtype's share of the step's model FLOPs (None: unknown)
        self.shares: Optional[Dict[str, float]] = None
        #: per micro-batch, a VLM batch's (image_grid_thw, video_grid_thw)
        #: tensors (None where absent), read at a logging step
        self.grids: List[Tuple[Any, Any]] = []

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
        self.grids.append(tuple(  # type: ignore[arg-type]
            g.detach() if isinstance(g, torch.Tensor) and g.dim() == 2 and g.shape[-1] == 3
            else None for g in (kwargs.get("image_grid_thw"), kwargs.get("video_grid_thw"))))
        mask = kwargs.get("attention_mask")
        if isinstance(mask, torch.Tensor) and mask.dim() == 2 and tuple(mask.shape) == shape:
            lengths = mask.detach().sum(-1)      # on the mask's device: no sync
            self.tokens.append(lengths.sum())
            self.batches.append((batch, seq, lengths))
        else:
            self.tokens.append(batch * seq)
            self.batches.append((batch, seq, None))


#: A micro-batch's image and video grids, rows [t, h, w] (None: absent).
Grids = Tuple[Optional[List[List[int]]], Optional[List[List[int]]]]


def read_tokens(records: Sequence[StepRecord]) -> Tuple[List[Optional[float]], List[List[List[int]]],
                                                        List[List[Grids]]]:
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
        grids.append([(rows(image), rows(video)) for image, video in record.grids])
    return totals, lengths, grids


class StepCounter:
    """The FLOP counter of one counted optimizer step: started and stopped
    around each region of the step that runs the model (a block, a closure,
    all its micro-batches); its totals cover them all."""

    __slots__ = ("_policy", "_counter", "_active", "_before", "ran", "failed")

    def __init__(self, policy: "StepFlops") -> None:
        self._policy = policy
        self._counter: Any = None
        self._active = False
        self._before: Flops = (0.0, 0.0, 0.0, 0.0)
        self.ran = False      # a region was counted to its end
        self.failed = False   # a region could not be counted: the step is not counted

    def start(self) -> None:
        """Count from here (never raises: a failure warns once)."""
        if self._active or self.failed:
            return
        try:
            if self._counter is None:
                from ..flops.counter import (
                    FlopCounter,  # lazy: the counter loads its extension
                )

                # the first counted step audits what the count does not cover
                self._counter = FlopCounter(causal_attention=self._policy.causal_attention,
                                            modules=False, audit=not self._policy.audited)
            self._before = self.totals()
            self._counter.__enter__()
        except Exception as error:  # noqa: BLE001 -- never raise into the loop
            self.failed = True
            self._policy.warn_once("counter", f"the FLOP counter is unavailable ({error!r}); "
                                   "FLOPs of such steps are estimated")
            return
        self._active = True

    def stop(self) -> Optional[Flops]:
        """Stop counting; the raw FLOPs of the region since :meth:`start`
        (None when it was not counted). Ops that could not be counted warn
        once per run."""
        if not self._active:
            return None
        self._active = False
        try:
            problem = self._counter.stop(warn=False)
            after = self.totals()
        except Exception as error:  # noqa: BLE001
            self.failed = True
            self._policy.warn_once("counter", f"FLOP counting failed ({error!r}); FLOPs of such "
                                   "steps are estimated")
            return None
        if problem is not None:  # every counted step would repeat it: once per run
            self._policy.warn_once("uncounted", f"FlopCounter: {problem}; the MFU of such steps "
                                   "is low (not warned again)")
        self.ran = True
        before = self._before
        return (after[0] - before[0], after[1] - before[1], after[2] - before[2],
                after[3] - before[3])

    def warn_audit(self) -> None:
        """One warning per run naming the FLOP-heavy ops the audited step
        ran without counting them (FlopCounter.audit_warning)."""
        heavy = self._counter.audit_warning() if self._counter is not None else None
        if heavy is not None:
            self._policy.warn_once("audit", f"FlopCounter (first counted step): {heavy}")

    def shares(self) -> Optional[Dict[str, float]]:
        """Each dtype's share of the model FLOPs counted so far."""
        c = self._counter
        if c is None:
            return None
        return dtype_shares(c.flops_by_dtype)

    def totals(self) -> Flops:
        """Raw (model, executed, forward, overcompute) FLOPs counted so far."""
        c = self._counter
        if c is None:
            return (0.0, 0.0, 0.0, 0.0)
        return (float(c.model_flops), float(c.executed_flops), float(c.forward_flops),
                float(c.overcompute_flops))


class StepFlops:
    """The step-FLOPs policy (module docstring), one per integration instance.

    Args:
        count_every: count every N-th optimizer step (0: never).
        causal_attention: "full" or "half" (checked by the adapter).
        hfu_factor: executed = forward x this (the peer's knobs), or None.
        warn_once: the adapter's one-warning-per-key function.
        sample_batch: the batch to profile, or None.
    """

    def __init__(self, *, count_every: int, causal_attention: str, hfu_factor: Optional[float],
                 warn_once: WarnOnce, sample_batch: Any = None) -> None:
        self.count_every = count_every
        self.causal_attention = causal_attention
        self.hfu_factor = hfu_factor
        self.warn_once = warn_once
        self.sample_batch = sample_batch
        self.model: Any = None
        self.config: Any = None            # a transformer_flops-capable config, or None
        self.vision = False                # the config has a vision tower (a VLM)
        self.recompute = "none"            # activation recompute for the analytic count
        self.steps = 0                     # optimizer steps closed
        self.reference: Optional[Tuple[Flops, Optional[float]]] = None  # the last counted step's
        self.reference_shares: Optional[Dict[str, float]] = None  # its dtype shares
        self.profile: Optional[Flops] = None
        self.profile_tokens: Optional[int] = None
        self._profile_failed = False
        self.audited = False               # a counted step ran with the audit on
        self._key_holder: Any = None       # a counter holding the counting key (attach)

    # ---- set-up -------------------------------------------------------------------

    def attach(self, model: Any, *, analytic: bool = False, recompute: str = "none") -> None:
        """The model the steps train; with ``analytic``, its ``config`` is used
        for the analytic count when it is a supported transformer. Steps to
        count: the counting key goes on this thread now, before the model
        can run compiled (an evaluation before training), and stays while
        this policy lives, so torch.compile never recompiles for it
        (FlopCounter docs)."""
        self.model = model
        self.recompute = recompute
        self.config = None
        self.vision = False
        if self.count_every > 0:
            try:
                from ..flops.counter import FlopCounter

                # held while the integration lives: the key stays on this
                # thread between the steps' own counters (it leaves when no
                # counter is alive)
                self._key_holder = FlopCounter(modules=False)
                with self._key_holder:
                    pass
            except Exception:  # noqa: BLE001 -- counting will warn when it fails
                pass
        config = getattr(model, "config", None) if analytic else None
        if config is not None:
            from ..flops._analytic import transformer_flops
            from ..flops._hf_config import dims_from_config

            try:
                read = dims_from_config(config)  # once: the analytic count reuses it
                transformer_flops(read, seq_len=1, batch_size=1, formula="matmul")
                self.config = read
                self.vision = read.vision is not None
            except Exception:  # noqa: BLE001 -- not a supported transformer
                self.config = None

    def prepare(self) -> None:
        """Before the clock starts: profile ``sample_batch`` when it is the only
        source of FLOPs (nothing counted, no analytic config)."""
        if self.count_every == 0 and self.config is None:
            self.profile_sample()

    def profile_sample(self) -> None:
        """Count ``sample_batch`` once (forward + backward, no ``.grad`` left) on
        the eager model; idempotent; a failure warns once and is not retried."""
        if self.profile is not None or self.sample_batch is None or self._profile_failed \
                or self.model is None:
            return
        from ..flops.counter import (
            profile_flops_with_hfu,  # lazy: the counter loads its extension
        )

        model = getattr(self.model, "_orig_mod", self.model)  # a torch.compile wrapper's eager module
        batch = _on_device_of(self.sample_batch, model)
        args, kwargs = (None, batch) if isinstance(batch, Mapping) else (batch, None)
        was_training = model.training
        try:
            full = profile_flops_with_hfu(model, args, kwargs, with_backward=True,
                                          causal_attention=self.causal_attention)
            forward = profile_flops_with_hfu(model, args, kwargs, with_backward=False,
                                             causal_attention=self.causal_attention).flops
            tokens = batch_tokens(batch)
        except Exception as error:  # noqa: BLE001 -- never raise into the loop
            self._profile_failed = True  # two model runs: not retried every step
            self.warn_once("profile", f"profiling sample_batch failed ({error!r}); MFU needs "
                           "counted steps instead")
            return
        finally:
            model.train(was_training)
        self.profile = (float(full.flops), float(full.hfu_flops), float(forward), 0.0)
        self.profile_tokens = tokens

    # ---- counting -----------------------------------------------------------------

    def counting(self) -> bool:
        """Whether the step now open (the ``steps``-th) is counted."""
        return self.count_every > 0 and self.steps % self.count_every == 0

    def step_counter(self) -> Optional[StepCounter]:
        """A counter for the step now open, or None when it is not counted."""
        return StepCounter(self) if self.counting() else None

    def close(self, record: StepRecord, counter: Optional[StepCounter]) -> None:
        """Close the step ``record`` describes: counted (its counter ran to the
        end of every region) or scaled from the last counted step."""
        if counter is not None:
            counter.stop()
        if counter is not None and counter.ran and not self.audited:
            self.audited = True
            counter.warn_audit()
        if counter is not None and counter.ran and not counter.failed:
            record.counted = counter.totals()
            self.reference = (record.counted, record.work_tokens)
            record.shares = self.reference_shares = counter.shares()
        else:
            record.reference = self.reference
            record.shares = self.reference_shares
        self.steps += 1

    @staticmethod
    def flops_by_dtype(record: StepRecord, model_flops: Optional[float]) -> Optional[Dict[str, float]]:
        """The step's model FLOPs split by compute dtype (``Tracker.step(
        flops_by_dtype=)``), None when its shares or FLOPs are unknown."""
        if record.shares is None or model_flops is None:
            return None
        return {name: model_flops * share for name, share in record.shares.items()}

    # ---- resolving ----------------------------------------------------------------

    def resolve(self, record: StepRecord, tokens: Optional[float] = None,
                lengths: Optional[List[List[int]]] = None,
                grids: Optional[List[Grids]] = None) -> Optional[Flops]:
        """(model, executed, forward, overcompute) FLOPs of a closed step (or
        block), the HFU knobs applied; None when no source has them. ``tokens``: its real
        tokens; ``lengths``, ``grids``: its micro-batches' sequence lengths
        and VLM grids (:func:`read_tokens`)."""
        flops = record.counted
        if flops is None and record.reference is not None:
            ref, ref_tokens = record.reference
            work = record.work_tokens
            flops = _scale(ref, work / ref_tokens) if work is not None and ref_tokens else ref
        if flops is None and self.config is not None and record.batches:
            flops = self._analytic(record.batches, lengths, grids)[0]
        if flops is None:
            flops = self._profiled(tokens, record.micro_batches)
        if flops is None:
            return None
        if self.hfu_factor is not None:
            flops = (flops[0], flops[2] * self.hfu_factor, flops[2], 0.0)
        return flops

    def _analytic(self, batches: List[Tuple[int, int, Any]], lengths: Optional[List[List[int]]],
                  grids: Optional[List[Grids]] = None) -> Tuple[Flops, float]:
        """The analytic count of a step's micro-batches (a VLM's images and
        videos included; no MTP layers: transformers builds none), and the
        language model's part of its model FLOPs."""
        from ..flops._analytic import transformer_flops

        model = executed = forward = language = 0.0
        for i, (batch, seq, rows) in enumerate(batches):
            image, video = grids[i] if grids is not None and i < len(grids) else (None, None)
            common = dict(formula="matmul", causal_attention=self.causal_attention,
                          activation_recompute=self.recompute, num_mtp_layers=0,
                          image_grid_thw=image or None, video_grid_thw=video or None)
            if rows is not None and lengths is not None:
                f = transformer_flops(self.config, seq_lens=[n for n in lengths[i] if n > 0] or [0],
                                      **common)
            else:
                f = transformer_flops(self.config, seq_len=seq, batch_size=batch, **common)
            model += f.model_flops
            executed += f.hardware_flops
            forward += f.forward_flops
            language += f.language_flops
        return (model, executed, forward, 0.0), language

    def language_share(self, record: StepRecord, lengths: Optional[List[List[int]]],
                       grids: Optional[List[Grids]]) -> Optional[float]:
        """The language model's share of a VLM step's model FLOPs, from the
        analytic count of its micro-batches (the split a counted step's total
        takes too); None without a VLM config or the step's inputs."""
        if not self.vision or not record.batches:
            return None
        try:
            (model, _, _, _), language = self._analytic(record.batches, lengths, grids)
        except (ValueError, TypeError):
            return None
        return language / model if model > 0 else None

    def _profiled(self, tokens: Optional[float], micro_batches: int) -> Optional[Flops]:
        self.profile_sample()
        if self.profile is None:
            return None
        if tokens is not None and self.profile_tokens:
            return _scale(self.profile, tokens / self.profile_tokens)
        return _scale(self.profile, float(max(1, micro_batches)))

    def steps_model_flops(self, records: Sequence[StepRecord]) -> Optional[float]:
        """The model FLOPs of ``records`` summed (the job ledger's steps: one
        token read for all of them), or None when a step has none."""
        if not records:
            return 0.0
        tokens, lengths, grids = read_tokens(records)
        flops = [self.resolve(r, t, l, g) for r, t, l, g in zip(records, tokens, lengths, grids)]
        if any(f is None for f in flops):
            return None
        return float(sum(f[0] for f in flops))  # type: ignore[index]

    def window_work(self, records: "StepRecords", summary: Mapping[str, Any]) -> Optional["WindowWork"]:
        """The work of the steps now in a tracker's window (its ``summary()``);
        None when the window is empty or reaches past the recorded steps."""
        chosen = records.in_window(summary)
        if chosen is None:
            return None
        tokens, lengths, grids = read_tokens(chosen)
        step_flops = [self.resolve(r, t, l, g) for r, t, l, g in zip(chosen, tokens, lengths, grids)]
        known = all(f is not None for f in step_flops)
        if not known:
            self.warn_once("noflops", "no FLOPs for some steps (nothing counted, no supported "
                           "model.config, no sample_batch): MFU is left out")
        total_tokens = None if any(t is None for t in tokens) else float(sum(tokens))  # type: ignore[arg-type]
        splits = [self.flops_by_dtype(r, f[0] if f else None) for r, f in zip(chosen, step_flops)]
        by_dtype: Optional[Dict[str, float]] = None
        if all(split is not None for split in splits):
            by_dtype = {}
            for split in splits:
                for name, flops in split.items():  # type: ignore[union-attr]
                    by_dtype[name] = by_dtype.get(name, 0.0) + flops
        shares = [self.language_share(r, l, g) for r, l, g in zip(chosen, lengths, grids)]
        language = (sum(f[0] * share for f, share in zip(step_flops, shares))  # type: ignore[index,operator]
                    if known and shares and all(share is not None for share in shares) else None)
        return WindowWork(
            steps=len(chosen), window_s=float(summary["window_s"]), known=known,
            language_flops=language,
            tokens=total_tokens,
            model_flops=sum(f[0] for f in step_flops) if known else 0.0,  # type: ignore[index]
            executed_flops=sum(f[1] for f in step_flops) if known else None,  # type: ignore[index]
            overcompute_flops=sum(f[3] for f in step_flops) if known else None,  # type: ignore[index]
            step_flops=[f[0] if f else None for f in step_flops],
            flops_by_dtype=by_dtype, warn_once=self.warn_once,
        )


def _on_device_of(batch: Any, model: Any) -> Any:
    """``batch`` with its tensors on ``model``'s device."""
    import torch

    param = next(model.parameters(), None)
    if param is None:
        return batch
    device = param.device

    def move(value: Any) -> Any:
        return value.to(device) if isinstance(value, torch.Tensor) else value

    if isinstance(batch, Mapping):
        return {k: move(v) for k, v in batch.items()}
    if isinstance(batch, (tuple, list)):
        return type(batch)(move(v) for v in batch)
    return move(batch)


class StepRecords:
    """The last ``window`` closed steps, for integrations that resolve a
    window's work at logging time (their tracker's window holds as many)."""

    def __init__(self, window: int) -> None:
        self._records: Deque[StepRecord] = deque(maxlen=window)
        self.total = 0   # records ever appended: the next record's index

    def append(self, record: StepRecord) -> None:
        self._records.append(record)
        self.total += 1

    def between(self, first: int, end: int) -> Optional[List[StepRecord]]:
        """The records of steps ``first <= i < end`` (indices in append order);
        None when some are no longer kept."""
        kept_from = self.total - len(self._records)
        if first < kept_from or end > self.total:
            return None
        records = list(self._records)
        return records[first - kept_from:end - kept_from]

    def in_window(self, summary: Mapping[str, Any]) -> Optional[List[StepRecord]]:
        """The records of the steps in the tracker's window (``summary()``:
        ``steps`` resolved in the window, ``steps_pending`` not resolved yet);
        None when it is empty or reaches past the records (dropped steps)."""
        steps, pending = int(summary.get("steps") or 0), int(summary.get("steps_pending") or 0)
        window_s = summary.get("window_s")
        if steps == 0 or not window_s or window_s <= 0:
            return None
        records = list(self._records)
        end = len(records) - pending
        chosen = records[max(0, end - steps):end]
        return chosen if len(chosen) == steps else None


class WindowWork:
    """The work of a tracker's window: ``steps``, ``window_s`` (s), ``known``
    (every step has FLOPs), ``tokens`` (real tokens or None), ``model_flops``
    / ``executed_flops`` / ``overcompute_flops`` (sums, FLOPs), ``step_flops``
    (model FLOPs per step), ``language_flops`` (a VLM's model FLOPs without its vision tower, or
    None: ``mfu_language``)."""

    __slots__ = ("steps", "window_s", "known", "tokens", "model_flops", "executed_flops",
                 "overcompute_flops", "step_flops", "flops_by_dtype", "warn_once",
                 "language_flops")

    def __init__(self, *, steps: int, window_s: float, known: bool, tokens: Optional[float],
                 model_flops: float, executed_flops: Optional[float],
                 step_flops: List[Optional[float]],
                 overcompute_flops: Optional[float] = None,
                 flops_by_dtype: Optional[Dict[str, float]] = None,
                 warn_once: Optional[WarnOnce] = None,
                 language_flops: Optional[float] = None) -> None:
        self.steps = steps
        self.window_s = window_s
        self.known = known
        self.tokens = tokens
        self.model_flops = model_flops
        self.executed_flops = executed_flops
        self.overcompute_flops = overcompute_flops
        self.step_flops = step_flops
        self.flops_by_dtype = flops_by_dtype  # the window's model FLOPs by dtype, or None
        self.warn_once = warn_once
        self.language_flops = language_flops  # a VLM's language-model part, or None

    def ideal_s(self, peaks: Sequence[Optional[float]]) -> Optional[float]:
        """sum_d F_d / peak_d over the window, seconds (``peaks``:
        :func:`dtype_peaks`); None when the split is unknown or a dtype has no
        peak (one warning, unless the device has no peak at all: the peak
        lookup warned)."""
        if self.flops_by_dtype is None or not self.known:
            return None
        ideal_s = _C.ideal_seconds(self.flops_by_dtype, peaks)
        if ideal_s is None and self.warn_once is not None and any(p is not None for p in peaks):
            self.warn_once("mixed", "the counted FLOPs include a dtype the device has no "
                           f"peak for ({', '.join(sorted(self.flops_by_dtype))}): "
                           "mfu_mixed is left out")
        return ideal_s

    def totals(self, peaks: Sequence[Optional[float]]) -> Dict[str, float]:
        """The window's known totals for ``Tracker.metrics()``: model,
        executed and over-compute FLOPs (when every step has FLOPs), real
        tokens and the ideal seconds of :meth:`ideal_s` (``peaks``:
        :func:`dtype_peaks`). An unknown total is left out: the integrations'
        tracker steps carry no work of their own, so its window total stays
        unknown."""
        given = {"num_tokens": self.tokens}
        if self.known:
            given.update(model_flops=self.model_flops, executed_flops=self.executed_flops,
                         overcompute_flops=self.overcompute_flops,
                         ideal_s=self.ideal_s(peaks), language_flops=self.language_flops)
        return {name: value for name, value in given.items() if value is not None}


def window_metrics(tracker: Any, window: Optional[WindowWork], *,
                   prefix: str) -> Optional[Dict[str, float]]:
    """The metric dict of a logging step: the tracker's figures over its
    window with ``window``'s totals (``Tracker.metrics()``, the one metric
    path). With a distributed ``tracker`` a collective: every rank must call
    this at every logging step, with or without a window, so no rank is left
    waiting at the gather. None when there is nothing to log."""
    if window is None:
        if tracker.distributed:
            tracker.metrics(prefix)   # this rank's part of the others' collective
        return None
    return tracker.metrics(prefix, **window.totals(dtype_peaks(tracker.peak)))
