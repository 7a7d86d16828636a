"""MFU for ``lightning.pytorch.Trainer``: :class:`MFUCallback`.

The same figures, keys and FLOP policy as the ``transformers.Trainer``
callback (:mod:`mfu_tracker.integrations.hf_trainer`), written to every
logger of the Trainer (``TensorBoardLogger``, ``CSVLogger``, ``WandbLogger``,
``MLFlowLogger``, ...) every ``log_every_n_steps`` optimizer steps, covering
the last ``window`` optimizer steps: ``{prefix}/mfu`` (model FLOPs / time /
(peak x num_gpus), unclamped), ``hfu`` (executed FLOPs, recompute
included), ``mbu``, ``tokens_per_sec``, ``achieved_tflops``,
``step_time_s`` (the mean optimizer-step period, end to end) and
``peak_tflops`` (the MFU denominator), default prefix ``throughput`` -- the
keys, units and meanings of :data:`mfu_tracker.timing._metrics.KEYS`, the one table.

Under a multi-process strategy (DDP, FSDP, DeepSpeed: a ``torch.distributed``
process group) the figures are global and the same on every rank -- the
step tracker's aggregation (:class:`~mfu_tracker.Tracker`, one all-gather of
a small row on a side gloo group, at logging steps only) -- with the per-rank
spread added (``mfu_rank_min`` / ``mean`` / ``max``, ``slowest_rank``, ...).
The loggers write on rank 0 (Lightning's rule); ``history`` holds them on
every rank.

A figure that cannot be had is left out (a CPU or an unknown GPU without
``peak_tflops`` / ``spec``: no ``mfu``, after one warning from the peak lookup).

How the numbers are made:

* **Time**: one step-tracker boundary per optimizer step, at the
  ``on_train_batch_end`` of the batch whose optimizer step ran (the Trainer's
  ``global_step`` moved); the first at the first ``on_train_batch_start``.
  A step's period is end to end (data loading, every micro-batch, the
  optimizer, logging, validation when it falls inside). GPU events on the
  current stream, never a synchronization: nothing waits per batch.
* **FLOPs**: the integrations' one step-FLOPs policy
  (:mod:`mfu_tracker.integrations._step_flops`). On every ``count_every``-th optimizer
  step a :class:`~mfu_tracker.FlopCounter` runs from each micro-batch's
  ``on_train_batch_start`` to its ``on_train_batch_end`` (the last one's:
  to ``on_before_optimizer_step``), so with ``accumulate_grad_batches``
  every micro-batch of the step is counted on its real shapes, and neither
  data loading nor the optimizer is; steps in between are scaled from the
  last counted step by their tokens. Without counting (``count_every=0``): the analytic count when
  the LightningModule has a supported transformer ``config`` attribute, else
  the ``sample_batch`` profile.
* **Tokens**: from each batch (``on_train_batch_start``, already on the
  device): a mapping's ``attention_mask`` ones, else its ``input_ids`` (or
  ``inputs_embeds``) positions; an integer tensor (or a tuple / list starting
  with one) counts its elements. Other batches have no token count (no
  ``tokens_per_sec``; FLOPs are still counted). Mask sums stay on the device
  until the logging step reads a whole window in one transfer.
* **Peak**: ``peak_tflops`` > ``spec`` > the datasheet table for the device,
  for ``dtype`` (default: the Trainer's precision plugin --
  "bf16-mixed"/"bf16-true" bf16, "16-mixed"/"16-true" fp16,
  "transformer-engine[-float16]" fp8, "64-true" fp64, bitsandbytes its
  compute dtype, "32-true" fp32, or tf32 on CUDA when matmuls may use it;
  see :func:`~mfu_tracker.integrations._lightning_precision.dtype_from_precision`).
* **Phases** (``phases=True``): data from a batch's end to the next batch's
  start, forward from ``on_train_batch_start`` to ``on_before_backward``,
  backward to ``on_after_backward``, optimizer from
  ``on_before_optimizer_step`` -- one mark each on the tracker's clock -- so
  the logged figures carry the waterfall (``mfu_lost/*``, ``phase_s/*``).
  Under the DDP and FSDP strategies the tracker observes the strategy's
  collectives itself (:mod:`mfu_tracker.distributed._comm_observer`): their
  exposed part is ``mfu_lost/communication`` (``comm_s/<kind>``,
  ``comm_bytes/<kind>``) and the straggler keys name a slow rank, whatever
  communication hook the strategy uses.

* **The job** (docs/goodput.md): the tracker's run starts at ``trainer.global_step``
  (after ``fit(ckpt_path=...)`` restored it), so a resumed run's log shows
  which steps an earlier run re-does. Validation during ``fit()`` is the
  badput phase ``eval`` (``on_validation_start`` to ``on_validation_end``),
  saving a checkpoint ``checkpoint`` (around ``trainer.save_checkpoint``,
  which ``ModelCheckpoint`` calls: the callback wraps it on the Trainer for
  the fit and restores it after), and a compiled module's first step
  ``compile``: none is charged to a step's MFU; ``mfu-tracker goodput``
  books them.

Nothing in the callback raises into ``fit()``: a failing hook gives one
warning and its figures are left out, and a logger whose ``log_metrics``
raises gets one warning and is skipped (the others still receive the
figures). Configuration errors raise at construction, naming the argument.
"""
from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any, Optional

from lightning.pytorch.callbacks import Callback

from .._dtypes import normalize_dtype
from .._validate import WINDOW_MAX, check_int
from ..distributed._comm_hook import attach_ddp_or_warn
from ._callback import CallbackCore, guarded
from ._step_flops import StepRecord
from ._lightning_precision import dtype_from_precision

__all__ = ["MFUCallback"]

#: Lightning's default ``log_every_n_steps``, when the Trainer has none.
_DEFAULT_LOG_EVERY = 50


class MFUCallback(CallbackCore, Callback):
    """Log MFU, HFU, MBU, tokens/s, achieved TFLOP/s and the peak to the
    Trainer's loggers (see the module docstring for the keys)::

        from mfu_tracker.integrations.lightning import MFUCallback

        trainer = Trainer(precision="bf16-mixed", callbacks=[MFUCallback()])
        MFUCallback(peak_tflops=989.4)       # explicit per-device peak (TFLOP/s)

    Args:
        sample_batch: a representative batch, profiled when steps are not
            counted and the module has no supported ``config``.
        dtype: the peak's dtype; ``None`` detects it from the precision plugin.
        num_gpus: devices the counted FLOPs ran on (keep 1: per-rank counts).
        hfu_backward_factor: executed FLOPs = forward x (1 + factor) (the
            peer's knob); ``None``: counted, recompute included.
        metric_prefix: key prefix (``""`` for bare ``mfu``, ...).
        device: the device whose peak and clock to use (default: the module's).
        peak_tflops: per-device peak in TFLOP/s (CPUs, unknown GPUs).
        spec: a :class:`~mfu_tracker.GPUSpec` (e.g. ``measured_gpu_spec()``).
        backward_factor: executed = forward x factor (exclusive with the above).
        count_every: count FLOPs on every N-th optimizer step (0: never).
        log_every_n_steps: optimizer steps between logs (default: the
            Trainer's ``log_every_n_steps``).
        window: optimizer steps the figures cover (default: ``log_every_n_steps``,
            so each log covers the steps since the previous one).
        warmup: first optimizer steps left out (compilation, warm-up).
        causal_attention: "full" (PaLM, default) or "half" (Megatron).
        clock: "auto", "cuda", "hip" or "cpu".
        phases: mark the step's phases for the waterfall (``mfu_lost/*``,
            ``phase_s/*``) from the Trainer's hooks: data from a batch's end
            to the next batch's start, forward from there to
            ``on_before_backward``, backward to ``on_after_backward``,
            optimizer from ``on_before_optimizer_step``; time between them
            (gradient clipping, zero_grad) is ``other``. Under a
            multi-process strategy the exposed part of every collective is
            ``communication`` (observed by the tracker; see above).
        log_path: append each logged dict to this JSONL file, with ``step``
            (``trainer.global_step``) and ``time`` (rank 0 only; the input of
            ``mfu-tracker report``). None: no file.
        telemetry: NVML telemetry and the hardware counters (``hw/*``) of the
            device: None (on for a CUDA device), True, False, or an NVML
            device id (:class:`~mfu_tracker.Tracker`'s ``telemetry``).
        memory: the caching allocator's headroom (``memory/*``): None (on for
            a CUDA / ROCm device), True, False, or "window" for per-window
            peaks (resets the allocator's peak statistics at each log, so
            ``torch.cuda.max_memory_allocated()`` restarts there too).
        profile_steps: profile chosen optimizer steps with ``torch.profiler``
            and break each down by kernel class (``kernel_share/*``,
            ``kernel_tflops/*``, ``kernel_gbs/*`` in the next log entry; a
            ``breakdown`` record in ``log_path``): None (off, the default),
            N (the first step after the warm-up, then every N-th), True (every
            500th) or a collection of global step numbers
            (:class:`~mfu_tracker.Tracker`'s ``profile_steps``; docs/kernel-breakdown.md).
        profile_trace_dir: keep each profiled step's raw Kineto trace there
            (None: the trace is reduced in memory and dropped).

    Attributes:
        history: one dict per log (``step``, ``steps``, ``window_s``,
            ``model_flops``, ``executed_flops``, ``tokens``, ``step_flops``,
            ``peak_flops_per_sec``, ``dtype``, ``metrics``), the last 1000.
        resolved_dtype: the dtype of the peak, once training started.
    """

    def __init__(self, *args: Any, log_every_n_steps: Optional[int] = None, **kwargs: Any) -> None:
        self.log_every_n_steps = (None if log_every_n_steps is None
                                  else check_int(log_every_n_steps, "log_every_n_steps", 1, WINDOW_MAX))
        super().__init__(*args, **kwargs)   # the arguments every callback shares (above)

    def _reset(self) -> None:
        CallbackCore._reset(self)
        self._saving: Any = None          # (trainer, its save_checkpoint) while wrapped
        self._step_opened_at = 0          # trainer.global_step when the open step began
        self._log_every = _DEFAULT_LOG_EVERY
        self._last_log = 0                # global_step // log_every at the last log

    # ---- helpers -----------------------------------------------------------------

    def _resolve_dtype(self, trainer: Any, pl_module: Any) -> str:
        if self.dtype is not None:
            return self.dtype
        strategy = getattr(trainer, "strategy", None)
        plugin = getattr(strategy, "precision_plugin", None) or getattr(strategy, "precision", None)
        if plugin is None:
            plugin = getattr(trainer, "precision", None)
        device = self.device if self.device is not None else getattr(pl_module, "device", None)
        if isinstance(device, str):
            import torch

            device = torch.device(device)
        dtype = dtype_from_precision(plugin, device=device)
        if dtype is not None:
            return dtype
        param = next(pl_module.parameters(), None) if pl_module is not None else None
        return normalize_dtype(param.dtype) if param is not None and param.is_floating_point() else "fp32"

    def _record_batch(self, step: StepRecord, batch: Any) -> None:
        """One micro-batch's tokens and shapes (no synchronization)."""
        import torch

        if isinstance(batch, Mapping) and (isinstance(batch.get("input_ids"), torch.Tensor)
                                           or isinstance(batch.get("inputs_embeds"), torch.Tensor)):
            step.record_inputs((), batch)
            return
        first = batch[0] if isinstance(batch, (tuple, list)) and batch else batch
        if isinstance(first, torch.Tensor) and not first.is_floating_point() \
                and not first.is_complex() and first.dim() >= 1:
            step.record_inputs((first,), {})
            return
        step.add_block(None)   # no token count for this batch

    # ---- Trainer hooks -------------------------------------------------------------

    @guarded
    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        self._unwrap_save()
        self._stop()
        self._reset()
        if self._is_model(pl_module, "on_train_start"):
            device = self.device if self.device is not None else getattr(pl_module, "device", None)
            self._start(pl_module, dtype=self._resolve_dtype(trainer, pl_module),
                        window=self._logging_window(trainer), device=device,
                        start_step=int(getattr(trainer, "global_step", 0) or 0))
            self._attach_ddp(getattr(getattr(trainer, "strategy", None), "model", None))
            self._wrap_save(trainer)

    def _wrap_save(self, trainer: Any) -> None:
        """Mark ``checkpoint`` around ``trainer.save_checkpoint`` (an attribute
        of this Trainer, removed at the end of the fit)."""
        original = getattr(trainer, "save_checkpoint", None)
        if original is None or self._phases is None:
            return

        def save_checkpoint(*args: Any, **kwargs: Any) -> Any:
            self._badput_event("checkpoint", begin=True)
            try:
                return original(*args, **kwargs)
            finally:
                self._badput_event("checkpoint", begin=False)

        trainer.save_checkpoint = save_checkpoint
        self._saving = (trainer, save_checkpoint)

    def _unwrap_save(self) -> None:
        saving, self._saving = getattr(self, "_saving", None), None
        if saving is not None and vars(saving[0]).get("save_checkpoint") is saving[1]:
            del saving[0].save_checkpoint

    @guarded
    def _badput_event(self, phase: str, *, begin: bool) -> None:
        if self._tracker is None or self._tracker.closed:
            return
        if begin:
            self._mark_badput(phase)
        else:
            self._end_badput(phase)

    @guarded
    def on_validation_start(self, trainer: Any, pl_module: Any) -> None:
        if not getattr(trainer, "sanity_checking", False):
            self._badput_event("eval", begin=True)

    @guarded
    def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
        self._badput_event("eval", begin=False)

    def _attach_ddp(self, wrapped: Any) -> None:
        """Exposed communication under the DDP strategy: the strategy wrapped
        the module before ``on_train_start``; its gradient all-reduce runs
        behind the tracker's marking hook (``Tracker.attach_ddp``)."""
        import torch

        if self._phases is None or not isinstance(wrapped, torch.nn.parallel.DistributedDataParallel):
            return
        attach_ddp_or_warn(self._tracker, wrapped, lambda message: self._warn_once("ddp", message),
                           "a DDPStrategy(ddp_comm_hook=...) of your own keeps exposed "
                           "communication inside backward")

    def _logging_window(self, trainer: Any) -> int:
        """Set the logging interval (optimizer steps); the window it implies."""
        log_every = self.log_every_n_steps
        if log_every is None:
            log_every = getattr(trainer, "log_every_n_steps", None)
            if not isinstance(log_every, int) or log_every < 1:
                log_every = _DEFAULT_LOG_EVERY
        self._log_every = log_every
        self._last_log = getattr(trainer, "global_step", 0) // log_every
        return self.window if self.window is not None else min(log_every, WINDOW_MAX)

    @guarded
    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int) -> None:
        if self._tracker is None:
            return
        self._mark(None)  # the data phase ends: the batch is on the device
        if self._step is None:         # the first micro-batch of an optimizer step
            self._open_step()
            self._step_opened_at = trainer.global_step
        elif self._counter is not None:
            self._counter.start()      # the next micro-batch: counting resumes
        self._record_batch(self._step, batch)  # type: ignore[arg-type]
        self._mark("forward")

    @guarded
    def on_before_backward(self, trainer: Any, pl_module: Any, loss: Any) -> None:
        self._mark("backward")

    @guarded
    def on_after_backward(self, trainer: Any, pl_module: Any) -> None:
        self._mark(None)

    @guarded
    def on_before_optimizer_step(self, trainer: Any, pl_module: Any, optimizer: Any) -> None:
        self._stop_counting()          # the optimizer's own ops are not model FLOPs
        self._mark("optimizer")

    @guarded
    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        if self._tracker is None or self._step is None:
            return
        self._mark("data")
        if trainer.global_step == self._step_opened_at:
            self._stop_counting()      # accumulating: the step stays open, data loading
            return                     # is not counted
        self._close_step()
        bucket = trainer.global_step // self._log_every
        if bucket > self._last_log:
            self._last_log = bucket
            self._log(trainer)

    @guarded
    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self._unwrap_save()
        self._mark(None)
        self._stop(int(getattr(trainer, "global_step", 0) or 0))

    @guarded
    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self._unwrap_save()
        self._stop()   # never leave a FLOP counter active after fit() failed

    # ---- figures -----------------------------------------------------------------

    def _log(self, trainer: Any) -> None:
        """A logging step: every rank computes (a collective when distributed);
        each logger gets the dict (Lightning's loggers write on rank 0)."""
        step = trainer.global_step
        out = self._window_metrics(step)
        if out is None:
            return
        for logger in getattr(trainer, "loggers", None) or ():
            try:
                logger.log_metrics(out, step=step)
                logger.save()
            except Exception as error:  # noqa: BLE001 -- a logger never stops training
                self._warn_once(f"logger:{id(logger)}",
                                f"{type(logger).__name__}.log_metrics failed ({error!r}); the MFU "
                                "figures are not sent to it")


def _init_signature() -> inspect.Signature:
    """``MFUCallback.__init__``'s real signature, for ``inspect.signature``
    and ``help()``: every argument the callbacks share (``CallbackCore``'s,
    which it passes on as they are), then ``log_every_n_steps``."""
    shared = inspect.signature(CallbackCore.__init__)
    log_every = inspect.Parameter("log_every_n_steps", inspect.Parameter.KEYWORD_ONLY,
                                  default=None, annotation="Optional[int]")
    return shared.replace(parameters=[*shared.parameters.values(), log_every])


MFUCallback.__init__.__signature__ = _init_signature()  # type: ignore[attr-defined]
