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
   sums) -- where the integration sees the inputs and transformers can build
   the config (a type without a formula: its exact meta-device count, the
   same path).
4. **Profiled**: ``sample_batch`` counted once (forward + backward) and scaled
   by the step's real tokens over the sample's, or x the step's micro-batches
   without token counts. Profiled before the clock starts when it is the only
   source (``count_every=0`` and no analytic config), else when first needed.

**Compiled models** need no rule of their own: the counter counts a
compiled region's backward as it runs (a custom autograd Function's
backward, csrc/core/ops/ops.h "Sites") and its recompute as HFU only, so a
counted compiled step's model FLOPs equal the eager model's.

**A step's FLOPs** are a :class:`Flops`: the step record's FLOP fields (a
:class:`~mfu_tracker.timing._totals.StepSums`: every kind the counter counts
-- model, executed and over-compute FLOPs, executed beyond the model
convention that are not recompute, e.g. the math SDPA path under
``causal_attention="half"``, which the waterfall books to compute) and the
forward FLOPs. Counted steps carry the counter's; scaled steps scale them;
analytic and profiled steps have model and executed FLOPs only (no
over-compute: 0).

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

**Tokens** are the step record's (:mod:`._step_record`): the attention mask's
ones, read for all the steps since the previous log in one transfer.

**Booking.** A step's FLOPs are known at its boundary only when counted;
the others need its tokens, which stay on the device until a logging step.
So at each log the integration books every step closed since the previous
one onto its record in the step engine (``Tracker.book()``,
:meth:`StepFlops.step_work`): its real tokens, model / executed /
over-compute FLOPs, ideal seconds and language FLOPs. The window's figures
and the job ledger read them there, as they read the work a loop gives at
``step()``: the integrations keep no window of their own.

Nothing here raises into a training loop: failures become one warning (the
adapter's ``warn_once``) and a missing figure.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .._native import _C
from ..timing._totals import StepSums
from ._step_counter import StepCounter
from ._step_record import (ClosedStep, Flops, Grids, MicroBatch, Reference, StepRecord,
                           WarnOnce, batch_tokens, read_tokens)

__all__ = ["StepFlops", "StepCounter", "StepRecord", "Flops"]


def _model_and_executed(model: float, executed: float, forward: float) -> Flops:
    """A step's FLOPs known as model and executed counts only."""
    return Flops(StepSums(model_flops=model, executed_flops=executed), forward)



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
        self.reference: Optional[Reference] = None  # the last counted step's
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
            from ..flops.counter import hold_counting_key

            self._key_holder = hold_counting_key()   # kept while the integration lives
        config = getattr(model, "config", None) if analytic else None
        if config is not None:
            from ..flops._analytic import counting_config, transformer_flops

            try:
                # once: the analytic count (or, without a formula, the exact
                # meta-device count) reuses it
                read = counting_config(config)
                transformer_flops(read, seq_len=1, batch_size=1, formula="matmul")
                self.config = read
                self.vision = getattr(read, "vision", None) is not None or \
                    getattr(read, "has_tower", False)
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
        self.profile = _model_and_executed(float(full.flops), float(full.hfu_flops),
                                           float(forward))
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
            self.reference = Reference(record.counted, record.work_tokens)
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
        """The FLOPs of a closed step (or block), the HFU knobs applied; None
        when no source has them. ``tokens``: its real tokens; ``lengths``,
        ``grids``: its micro-batches' sequence lengths and VLM grids
        (:func:`read_tokens`)."""
        flops = record.counted
        if flops is None and record.reference is not None:
            ref, ref_tokens = record.reference
            work = record.work_tokens
            flops = ref.scaled(work / ref_tokens) if work is not None and ref_tokens else ref
        if flops is None and self.config is not None and record.batches:
            flops = self._analytic(record.batches, lengths, grids)[0]
        if flops is None:
            flops = self._profiled(tokens, record.micro_batches)
        if flops is None:
            return None
        if self.hfu_factor is not None:   # executed = forward x the factor: none beyond it
            flops = _model_and_executed(flops.sums.model_flops, flops.forward_flops * self.hfu_factor,  # type: ignore[arg-type]
                                        flops.forward_flops)
        return flops

    def _analytic(self, batches: List[MicroBatch], lengths: Optional[List[List[int]]],
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
        return _model_and_executed(model, executed, forward), language

    def language_share(self, record: StepRecord, lengths: Optional[List[List[int]]],
                       grids: Optional[List[Grids]]) -> Optional[float]:
        """The language model's share of a VLM step's model FLOPs, from the
        analytic count of its micro-batches (the split a counted step's total
        takes too); None without a VLM config or the step's inputs."""
        if not self.vision or not record.batches:
            return None
        try:
            flops, language = self._analytic(record.batches, lengths, grids)
        except (ValueError, TypeError):
            return None
        model = flops.sums.model_flops
        return language / model if model is not None and model > 0 else None

    def _profiled(self, tokens: Optional[float], micro_batches: int) -> Optional[Flops]:
        self.profile_sample()
        if self.profile is None:
            return None
        if tokens is not None and self.profile_tokens:
            return self.profile.scaled(tokens / self.profile_tokens)
        return self.profile.scaled(float(max(1, micro_batches)))

    # ---- booking ------------------------------------------------------------------

    def step_work(self, record: StepRecord, tokens: Optional[float],
                  lengths: Optional[List[List[int]]], grids: Optional[List[Grids]],
                  peaks: Sequence[Optional[float]]) -> StepSums:
        """What a closed step's record in the step engine gets booked
        (``Tracker.book()``): its real ``tokens`` when known, and when a
        source has its FLOPs, each kind of them (model, executed,
        over-compute), its ideal seconds at each dtype's peak (``peaks``:
        :func:`dtype_peaks`; mixed precision) and its language model's FLOPs
        (a VLM). ``lengths``, ``grids``: its micro-batches' sequence lengths
        and VLM grids (:func:`read_tokens`). A step without FLOPs warns once
        per run."""
        real = None if tokens is None else float(tokens)
        flops = self.resolve(record, tokens, lengths, grids)
        if flops is None:
            self.warn_once("noflops", "no FLOPs for some steps (nothing counted, no supported "
                           "model.config, no sample_batch): MFU is left out")
            return StepSums(num_tokens=real)
        model = flops.sums.model_flops
        share = self.language_share(record, lengths, grids)
        return flops.sums.replace(
            num_tokens=real, ideal_s=self._ideal_s(self.flops_by_dtype(record, model), peaks),
            language_flops=None if share is None or model is None else model * share)

    def _ideal_s(self, by_dtype: Optional[Dict[str, float]],
                 peaks: Sequence[Optional[float]]) -> Optional[float]:
        """sum_d F_d / peak_d of a step's split, seconds; None when the split is
        unknown or a dtype has no peak (one warning, unless the device has no
        peak at all: the peak lookup warned)."""
        if by_dtype is None:
            return None
        ideal_s = _C.ideal_seconds(by_dtype, peaks)
        if ideal_s is None and any(p is not None for p in peaks):
            self.warn_once("mixed", "the counted FLOPs include a dtype the device has no "
                           f"peak for ({', '.join(sorted(by_dtype))}): mfu_mixed is left out")
        return ideal_s

    def book(self, tracker: Any, steps: Sequence[ClosedStep],
             peaks: Sequence[Optional[float]]) -> None:
        """Book each closed ``(global step, record)`` of ``steps`` onto its
        record in ``tracker`` (:meth:`step_work`), reading their tokens in
        one transfer. A step the tracker no longer holds is left unbooked
        (the job ledger then counts its FLOPs as unknown)."""
        if not steps:
            return
        tokens, lengths, grids = read_tokens([record for _, record in steps])
        for (step, record), t, l, g in zip(steps, tokens, lengths, grids):
            tracker.book(step, self.step_work(record, t, l, g, peaks))


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


