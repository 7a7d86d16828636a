"""MFU for ``transformers.Trainer``: :class:`MFUCallback`.

Drop-in for the pure-Python mfu-tracker's callback (same constructor); every
argument is optional. Its figures go into the Trainer's own log dict at the
Trainer's logging steps, ahead of the ``report_to`` callbacks, so TensorBoard,
MLflow, WandB (and the console) receive them.

=================================  ==========================================================
key (``metric_prefix="throughput"``)  meaning (over the last ``window`` optimizer steps)
=================================  ==========================================================
``throughput/mfu``                 model FLOPs / time / (peak x num_gpus); unclamped
``throughput/hfu``                 executed FLOPs (recompute included) / time / peak
``throughput/mbu``                 parameter bytes per step / step time / peak bandwidth
``throughput/tokens_per_sec``      real tokens (``attention_mask`` ones; else all) / time
``throughput/achieved_tflops``     model TFLOP/s over all ``num_gpus`` devices
``throughput/step_time_s``         mean optimizer-step period, end to end
``throughput/peak_tflops``         the MFU denominator (peak x num_gpus)
=================================  ==========================================================

A figure that cannot be had is left out (CPU or unknown GPU without
``peak_tflops`` / ``spec``: no ``mfu``, after one warning from the peak lookup).

How the numbers are made:

* **Time**: the step tracker (:class:`~mfu_tracker.Tracker`) marks a
  boundary at every ``on_step_end``; the first at the first ``on_step_begin``.
  A step's period is end to end: data loading, every micro-batch's forward and
  backward, clipping, the optimizer, logging -- evaluation and checkpoint
  saving too when they fall inside it. GPU events, never a synchronization.
* **FLOPs**: the integrations' one step-FLOPs policy
  (:mod:`mfu_tracker.integrations._step_flops`). A :class:`~mfu_tracker.FlopCounter` is
  active from ``on_step_begin`` to ``on_pre_optimizer_step`` on every
  ``count_every``-th optimizer step, so every micro-batch of the step is
  counted exactly on its real shapes (padding included: it ran). Steps in
  between are scaled from the last counted step by their padded tokens.
  Without the counter (``count_every=0``), FLOPs are analytic
  (``transformer_flops`` on ``model.config``, ``formula="matmul"``, each
  sequence at its real length), else the ``sample_batch`` profile scaled by
  tokens. A compiled model (``torch_compile=True``) is counted like the
  eager one: its model FLOPs equal the eager model's.
* **Tokens**: from the model's inputs (a forward pre-hook): the ones of
  ``attention_mask``, else every position of ``input_ids``. On a GPU they are
  summed on the device and read at the logging step, after the Trainer's own
  loss read has synchronized it: no extra stall.
* **Peak**: ``peak_tflops`` > ``spec`` > the datasheet table for the device,
  for ``dtype`` (default: bf16 / fp16 from the Trainer's mixed precision, else
  the model's parameter dtype, else tf32 when CUDA matmuls allow TF32, else fp32).

* **The job** (docs/goodput.md): the tracker's run starts at the Trainer's
  ``state.global_step`` (after ``resume_from_checkpoint`` loaded it), so a
  resumed run's log shows which steps an earlier run re-does. Evaluation is
  the badput phase ``eval`` (from the first prediction step to
  ``on_evaluate``), saving a checkpoint ``checkpoint`` (from the end of the
  step's logging / evaluation to ``on_save``; a second, tail callback placed
  after the Trainer's flow callback reads the ``should_*`` flags it sets),
  and a compiled model's first step ``compile``: none of them is charged to
  a step's MFU, and ``mfu-tracker goodput`` books them.

Nothing in the callback raises during ``train()``: a failing hook gives one
warning and its figures are left out. Configuration errors raise at
construction, naming the argument.
"""
from __future__ import annotations

import sys
from typing import Any, Dict, Optional

from transformers import TrainerCallback

from .._dtypes import normalize_dtype
from ._callback import CallbackCore, guarded

__all__ = ["MFUCallback", "trainer_dtype"]


def trainer_dtype(args: Any, model: Any) -> str:
    """The peak's dtype of a ``transformers.Trainer`` run: bf16 / fp16 from
    its mixed precision, else the model's parameter dtype, else tf32 when
    CUDA matmuls allow TF32, else fp32."""
    if getattr(args, "bf16", False):
        return "bf16"
    if getattr(args, "fp16", False):
        return "fp16"
    import torch

    param = next(model.parameters(), None) if model is not None else None
    if param is not None and param.dtype in (torch.bfloat16, torch.float16):
        return normalize_dtype(param.dtype)
    on_cuda = getattr(getattr(args, "device", None), "type", None) == "cuda"
    if on_cuda and (getattr(args, "tf32", None) or torch.backends.cuda.matmul.allow_tf32
                    or torch.get_float32_matmul_precision() != "highest"):
        return "tf32"
    return "fp32"


class _AfterFlow(TrainerCallback):
    """The callback's tail, last in the Trainer's list: it sees the
    ``should_log`` / ``should_evaluate`` / ``should_save`` flags that the
    Trainer's flow callback sets in ``on_step_end`` (after the head ran), and
    starts the badput phase of what the Trainer does next: the save begins
    after the step's log and evaluation."""

    def __init__(self, head: "MFUCallback") -> None:
        self.head = head

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.head._tail_event("step_end", control)

    def on_log(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.head._tail_event("log", control)

    def on_evaluate(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.head._tail_event("evaluate", control)


class MFUCallback(CallbackCore, TrainerCallback):
    """Log MFU, HFU, MBU, tokens/s, achieved TFLOP/s and the peak at every
    Trainer logging step (see the module docstring for the keys)::

        trainer = Trainer(model=model, args=args, train_dataset=ds,
                          callbacks=[MFUCallback()])          # everything detected

        MFUCallback(dtype="bf16", peak_tflops=989.4)          # explicit peak (TFLOP/s)

    Args:
        sample_batch: a representative batch (dict, tensor, or tuple / list of
            inputs); profiled when steps are not counted and ``model.config``
            is not a supported transformer (the peer profiled it once; real
            batches are counted here).
        dtype: the peak's dtype; ``None`` detects it (module docstring).
        num_gpus: devices the counted FLOPs ran on (keep 1: per-rank counts).
        hfu_backward_factor: override executed FLOPs as forward x (1 + factor)
            (the peer's knob); ``None``: counted, recompute included.
        metric_prefix: key prefix (``""`` for bare ``mfu``, ...).
        device: the device whose peak and clock to use (default: the Trainer's).
        peak_tflops: per-device peak in TFLOP/s (CPUs, unknown GPUs).
        spec: a :class:`~mfu_tracker.GPUSpec` (e.g. ``measured_gpu_spec()``).
        backward_factor: the peer README's spelling: executed = forward x factor.
        count_every: count FLOPs on every N-th optimizer step (0: never).
        window: optimizer steps the figures cover (default: the Trainer's
            logging steps, so each log covers the steps since the previous one).
        warmup: first optimizer steps left out (compilation, warm-up).
        causal_attention: "full" (PaLM, default) or "half" (Megatron).
        clock: "auto", "cuda", "hip" or "cpu".
        phases: mark the step's phases for the waterfall (``mfu_lost/*``,
            ``phase_s/*``; :mod:`mfu_tracker.integrations._auto_phases`): data from the step
            boundary to the first training forward (the Trainer prefetches a
            step's micro-batches there) and between micro-batches
            (``on_substep_end``), forward / backward per micro-batch from the
            model's forward hooks (backward runs to the next event: loss,
            backward, gradient clipping), optimizer from
            ``on_pre_optimizer_step`` to ``on_optimizer_step``. Evaluation
            ends the running phase at its first prediction step. Under DDP
            or FSDP the tracker observes the Trainer's collectives itself
            (:mod:`mfu_tracker.distributed._comm_observer`): exposed
            communication is its own share, with no hook on the wrapped
            model.
        log_path: append each log entry's MFU keys to this JSONL file, one
            line per logging step with ``step`` (``state.global_step``) and
            ``time`` (rank 0 only; the input of ``mfu-tracker report``; a
            failing write warns once and stops the logging). None: no file.
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
        history: one dict per emitted log (``step``, ``steps``, ``window_s``,
            ``model_flops``, ``executed_flops``, ``tokens``, ``step_flops`` per
            step, ``peak_flops_per_sec``, ``metrics``), the last 1000.
    """

    def _reset(self) -> None:
        CallbackCore._reset(self)
        self._hook: Any = None
        self._ordered = False
        self._tail = _AfterFlow(self)
        self._after_step: Optional[bool] = None   # after a step's end: its log still pending

    # ---- helpers -----------------------------------------------------------------

    def _move_first(self) -> bool:
        """Put this callback first in the Trainer's CallbackHandler, so its keys
        are in the log dict before the report_to callbacks (added before the
        user's) see it. Found by walking up to the handler's call_event frame;
        the list is replaced, not mutated, so the running loop is unaffected."""
        from transformers.trainer_callback import CallbackHandler

        frame = sys._getframe(1)
        while frame is not None:
            handler = frame.f_locals.get("self")
            if isinstance(handler, CallbackHandler):
                callbacks = handler.callbacks
                tail = getattr(self, "_tail", None)
                if callbacks and callbacks[0] is self and (tail is None or callbacks[-1] is tail):
                    return True
                others = [c for c in callbacks if c is not self and not isinstance(c, _AfterFlow)]
                handler.callbacks = [self] + others + ([tail] if tail is not None else [])
                return True
            frame = frame.f_back
        return False

    def _resolve_dtype(self, args: Any, model: Any) -> str:
        return self.dtype if self.dtype is not None else trainer_dtype(args, model)

    # ---- Trainer hooks -------------------------------------------------------------

    @guarded
    def on_init_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._ordered = self._move_first()

    @guarded
    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None,
                       **kwargs: Any) -> None:
        self._remove_hook()
        self._reset()
        if not self._move_first():
            self._warn_once("order", "could not move MFUCallback ahead of the report_to "
                            "callbacks; their logs may lack the MFU keys")
        if getattr(state, "max_steps", 1) == 0:
            self._warn_once("max_steps", "the Trainer has no training steps (max_steps=0): no MFU")
            return
        if not self._is_model(model, "on_train_begin"):
            return
        dtype = self._resolve_dtype(args, model)
        window = self.window
        if window is None:
            steps = getattr(state, "logging_steps", None)
            strategy = getattr(args, "logging_strategy", "steps")
            strategy = str(getattr(strategy, "value", strategy)).lower()
            window = int(steps) if isinstance(steps, (int, float)) and steps >= 1 \
                and strategy == "steps" else 100
        device = self.device if self.device is not None else getattr(args, "device", None)
        recompute = "full" if getattr(args, "gradient_checkpointing", False) else "none"
        self._start(model, dtype=dtype, window=window, device=device, recompute=recompute,
                    start_step=int(getattr(state, "global_step", 0) or 0))
        from ..flops.counter._compiled import run_eagerly

        run_eagerly(MFUCallback._record_inputs)  # under torch.compile(model): never compiled
        self._hook = model.register_forward_pre_hook(self._record_inputs, with_kwargs=True)
        if self._phases is not None:
            self._phases.attach(model)   # forward / backward from the model's hooks
            self._phases.compiled(model, declared=bool(getattr(args, "torch_compile", False)))

    def _record_inputs(self, module: Any, args: Any, kwargs: Any) -> None:
        """Forward pre-hook: the tokens and shapes of a training micro-batch."""
        import torch

        if torch.compiler.is_compiling():  # traced inside a compiled region: tokens unknown
            return
        step = self._step
        if step is None or not module.training:
            return
        try:
            step.record_inputs(args, kwargs)
        except Exception as error:  # noqa: BLE001
            self._warn_once("hook:inputs", f"reading the model inputs failed ({error!r}); "
                            "tokens/s is left out")

    @guarded
    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._after_step = None
        if self._tracker is not None:
            self._end_badput()          # a phase a skipped save left running
            self._open_step()

    @guarded
    def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._stop_counting()
        self._mark("optimizer")

    @guarded
    def on_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._mark(None)

    @guarded
    def on_substep_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._mark("data")              # the next micro-batch's input

    @guarded
    def on_prediction_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._mark_badput("eval")       # evaluation: a badput phase, not the step's data wait

    @guarded
    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._end_badput("checkpoint")

    @guarded
    def _tail_event(self, event: str, control: Any) -> None:
        """The tail's events (:class:`_AfterFlow`): after a step's end, its log
        and its evaluation, the Trainer evaluates and saves as the flags say."""
        if self._tracker is None or self._tracker.closed:
            return
        if event == "step_end":
            self._after_step = bool(control.should_log)
            if not control.should_log:
                self._next_badput(control)
        elif event == "log" and self._after_step and self._badput is None:
            self._after_step = False             # the step's own log ran
            self._next_badput(control)
        elif event == "evaluate":
            if control.should_save and self._after_step is not None:
                self._mark_badput("checkpoint")  # evaluation done: the save follows
            else:
                self._end_badput("eval")

    def _next_badput(self, control: Any) -> None:
        """The evaluation or the save the Trainer runs next starts now."""
        if control.should_evaluate:
            self._mark_badput("eval")
        elif control.should_save:
            self._mark_badput("checkpoint")

    @guarded
    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._tracker is not None and self._step is not None:
            self._close_step()

    @guarded
    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._remove_hook()
        self._stop(int(getattr(state, "global_step", 0) or 0))

    def _remove_hook(self) -> None:
        hook, self._hook = getattr(self, "_hook", None), None
        if hook is not None:
            hook.remove()

    # ---- figures -----------------------------------------------------------------

    @guarded
    def on_log(self, args: Any, state: Any, control: Any, logs: Optional[Dict[str, Any]] = None,
               **kwargs: Any) -> None:
        if logs is None or self._tracker is None:
            return
        out = self._window_metrics(state.global_step)
        if out is None:
            return
        logs.update(out)
        history = getattr(state, "log_history", None)
        if history and history[-1].get("step") == state.global_step:
            history[-1].update(out)  # the Trainer copied logs there before on_log
