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
  (:mod:`mfu_tracker._step_flops`). A :class:`~mfu_tracker.FlopCounter` is
  active from ``on_step_begin`` to ``on_pre_optimizer_step`` on every
  ``count_every``-th optimizer step, so every micro-batch of the step is
  counted exactly on its real shapes (padding included: it ran). Steps in
  between are scaled from the last counted step by their padded tokens.
  Without the counter (``count_every=0``), FLOPs are analytic
  (``transformer_flops`` on ``model.config``, ``formula="matmul"``, each
  sequence at its real length), else the ``sample_batch`` profile scaled by
  tokens. A compiled model's model FLOPs follow the policy's one rule.
* **Tokens**: from the model's inputs (a forward pre-hook): the ones of
  ``attention_mask``, else every position of ``input_ids``. On a GPU they are
  summed on the device and read at the logging step, after the Trainer's own
  loss read has synchronized it: no extra stall.
* **Peak**: ``peak_tflops`` > ``spec`` > the datasheet table for the device,
  for ``dtype`` (default: bf16 / fp16 from the Trainer's mixed precision, else
  the model's parameter dtype, else tf32 when CUDA matmuls allow TF32, else fp32).

Nothing in the callback raises during ``train()``: a failing hook gives one
warning and its figures are left out. Configuration errors raise at
construction, naming the argument.
"""
from __future__ import annotations

import functools
import sys
import warnings
from collections import deque
from typing import Any, Callable, Deque, Dict, Optional, TypeVar

from transformers import TrainerCallback

from .._auto_phases import AutoPhases
from .._dtypes import normalize_dtype
from .._metrics_log import MetricsLog, check_log_path
from .._step_flops import (
    StepCounter,
    StepFlops,
    StepRecord,
    StepRecords,
    WindowWork,
    window_metrics,
)
from .._validate import (
    NUM_GPUS_MAX,
    WARMUP_MAX,
    WINDOW_MAX,
    check_causal_attention,
    check_clock,
    check_device,
    check_hfu_factor,
    check_int,
    check_optional_number,
    check_peak_tflops,
    check_prefix,
    check_sample_batch,
    check_spec,
)
from ..gpu import GPUSpec

__all__ = ["MFUCallback"]

_F = TypeVar("_F", bound=Callable[..., Any])


def _guarded(hook: _F) -> _F:
    """A Trainer hook that never raises: one warning per hook, figures left out."""

    @functools.wraps(hook)
    def wrapper(self: "MFUCallback", *args: Any, **kwargs: Any) -> Any:
        try:
            return hook(self, *args, **kwargs)
        except Exception as error:  # noqa: BLE001 -- never raise into train()
            self._warn_once(f"hook:{hook.__name__}",
                            f"MFUCallback.{hook.__name__} failed ({error!r}); its figures are left out")
            return None

    return wrapper  # type: ignore[return-value]


class MFUCallback(TrainerCallback):
    """Log MFU, HFU, MBU, tokens/s, achieved TFLOP/s and the peak at every
    Trainer logging step (see the module docstring for the keys)::

        trainer = Trainer(model=model, args=args, train_dataset=ds,
                          callbacks=[MFUCallback()])          # everything detected

        MFUCallback(dtype="bf16", peak_tflops=989.4)          # explicit peak (TFLOP/s)

    Args:
        sample_batch: a representative batch (dict, tensor, or tuple / list of
            inputs); profiled when steps are not counted and ``model.config``
            is not a supported transformer, or for a compiled model's model /
            executed split (the peer profiled it once; real batches are counted
            here).
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
            ``phase_s/*``; :mod:`mfu_tracker._auto_phases`): data from the step
            boundary to the first training forward (the Trainer prefetches a
            step's micro-batches there) and between micro-batches
            (``on_substep_end``), forward / backward per micro-batch from the
            model's forward hooks (backward runs to the next event: loss,
            backward, gradient clipping), optimizer from
            ``on_pre_optimizer_step`` to ``on_optimizer_step``. Evaluation
            ends the running phase at its first prediction step. Exposed DDP
            communication needs ``Tracker.attach_ddp`` on the wrapped model,
            which a callback cannot reach: under DDP it stays in backward.
        log_path: append each log entry's MFU keys to this JSONL file, one
            line per logging step with ``step`` (``state.global_step``) and
            ``time`` (rank 0 only; the input of ``mfu-tracker report``; a
            failing write warns once and stops the logging). None: no file.

    Attributes:
        history: one dict per emitted log (``step``, ``steps``, ``window_s``,
            ``model_flops``, ``executed_flops``, ``tokens``, ``step_flops`` per
            step, ``peak_flops_per_sec``, ``metrics``), the last 1000.
    """

    def __init__(
        self,
        sample_batch: Any = None,
        dtype: Any = None,
        num_gpus: int = 1,
        hfu_backward_factor: Optional[float] = None,
        metric_prefix: str = "throughput",
        device: Any = None,
        *,
        peak_tflops: Optional[float] = None,
        spec: Optional[GPUSpec] = None,
        backward_factor: Optional[float] = None,
        count_every: int = 1,
        window: Optional[int] = None,
        warmup: int = 1,
        causal_attention: str = "full",
        clock: str = "auto",
        phases: bool = True,
        log_path: Any = None,
    ) -> None:
        if not isinstance(phases, bool):
            raise TypeError(f"phases must be a bool, not {type(phases).__name__}")
        self.phases = phases
        self.log_path = check_log_path(log_path)
        self.sample_batch = check_sample_batch(sample_batch)
        self.dtype = None if dtype is None else normalize_dtype(dtype)
        self.num_gpus = check_int(num_gpus, "num_gpus", 1, NUM_GPUS_MAX)
        self._hfu_factor = check_hfu_factor(hfu_backward_factor, backward_factor)
        self.hfu_backward_factor = check_optional_number(hfu_backward_factor, "hfu_backward_factor", 0.0)
        self.metric_prefix = check_prefix(metric_prefix, "metric_prefix")
        if device is not None:
            check_device(device)  # a bad device is a configuration error, raised now
        self.device = device
        self.peak_tflops = None if peak_tflops is None else check_peak_tflops(peak_tflops)
        self.spec = check_spec(spec)
        self.count_every = check_int(count_every, "count_every", 0)
        self.window = None if window is None else check_int(window, "window", 1, WINDOW_MAX)
        self.warmup = check_int(warmup, "warmup", 0, WARMUP_MAX)
        self.causal_attention = check_causal_attention(causal_attention)
        self.clock = check_clock(clock)
        self.history: Deque[Dict[str, Any]] = deque(maxlen=1000)
        self._warned: set = set()
        self._reset()

    def _reset(self) -> None:
        self._tracker: Any = None
        self._hook: Any = None
        self._phases: Optional[AutoPhases] = None
        self._log: Optional[MetricsLog] = None
        self._policy = StepFlops(count_every=self.count_every, causal_attention=self.causal_attention,
                                 hfu_factor=self._hfu_factor, warn_once=self._warn_once,
                                 sample_batch=self.sample_batch)
        self._param_bytes: Optional[float] = None
        self._records = StepRecords(100)
        self._step: Optional[StepRecord] = None
        self._counter: Optional[StepCounter] = None
        self._steps_done = 0
        self._steps_logged = 0
        self._started = False
        self._ordered = False

    # ---- helpers -----------------------------------------------------------------

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            warnings.warn(f"mfu_tracker: {message}", RuntimeWarning, stacklevel=3)

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
                if callbacks and callbacks[0] is self:
                    return True
                handler.callbacks = [self] + [c for c in callbacks if c is not self]
                return True
            frame = frame.f_back
        return False

    def _resolve_dtype(self, args: Any, model: Any) -> str:
        if self.dtype is not None:
            return self.dtype
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

    # ---- Trainer hooks -------------------------------------------------------------

    @_guarded
    def on_init_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._ordered = self._move_first()

    @_guarded
    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None,
                       **kwargs: Any) -> None:
        import torch

        from ..flops import param_bytes
        from ..tracker import Tracker

        self._remove_hook()
        self._reset()
        if not self._move_first():
            self._warn_once("order", "could not move MFUCallback ahead of the report_to "
                            "callbacks; their logs may lack the MFU keys")
        if getattr(state, "max_steps", 1) == 0:
            self._warn_once("max_steps", "the Trainer has no training steps (max_steps=0): no MFU")
            return
        if not isinstance(model, torch.nn.Module):
            self._warn_once("model", "no model in on_train_begin: no MFU")
            return
        dtype = self._resolve_dtype(args, model)
        self.resolved_dtype = dtype
        if next(model.parameters(), None) is None:
            self._warn_once("params", "the model has no parameters: MBU is left out")
        else:
            self._param_bytes = float(param_bytes(model))
        window = self.window
        if window is None:
            steps = getattr(state, "logging_steps", None)
            strategy = getattr(args, "logging_strategy", "steps")
            strategy = str(getattr(strategy, "value", strategy)).lower()
            window = int(steps) if isinstance(steps, (int, float)) and steps >= 1 \
                and strategy == "steps" else 100
        self._records = StepRecords(window)
        device = self.device if self.device is not None else getattr(args, "device", None)
        self._tracker = Tracker(None, dtype=dtype, window=window, warmup=self.warmup,
                                param_bytes=self._param_bytes, num_gpus=self.num_gpus,
                                device=device, spec=self.spec, peak_tflops=self.peak_tflops,
                                clock=self.clock)
        if self.log_path is not None:
            self._log = MetricsLog(self.log_path, owner="MFUCallback")
        recompute = "full" if getattr(args, "gradient_checkpointing", False) else "none"
        self._policy.attach(model, analytic=True, recompute=recompute)
        self._policy.prepare()
        self._hook = model.register_forward_pre_hook(self._record_inputs, with_kwargs=True)
        if self.phases:
            self._phases = AutoPhases(self._tracker)
            self._phases.attach(model)

    def _record_inputs(self, module: Any, args: Any, kwargs: Any) -> None:
        """Forward pre-hook: the tokens and shapes of a training micro-batch."""
        step = self._step
        if step is None or not module.training:
            return
        try:
            step.record_inputs(args, kwargs)
        except Exception as error:  # noqa: BLE001
            self._warn_once("hook:inputs", f"reading the model inputs failed ({error!r}); "
                            "tokens/s is left out")

    @_guarded
    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._tracker is None:
            return
        if not self._started:
            self._started = True
            self._mark("end")          # nothing marked before the clock counts
            self._tracker.step()       # starts the clock
            if self._phases is not None:
                self._phases.data()
        self._step = StepRecord()
        self._counter = self._policy.step_counter()
        if self._counter is not None:
            self._counter.start()

    @_guarded
    def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._counter is not None:
            self._counter.stop()
        self._mark("optimizer")

    def _mark(self, event: str) -> None:
        """An automatic phase mark (``AutoPhases.<event>()``), when phases are on."""
        if self._phases is not None:
            getattr(self._phases, event)()

    @_guarded
    def on_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._mark("end")

    @_guarded
    def on_substep_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._mark("data")              # the next micro-batch's input

    @_guarded
    def on_prediction_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._mark("end")               # evaluation is not the step's data wait

    @_guarded
    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._tracker is None or self._step is None:
            return
        step, self._step = self._step, None
        counter, self._counter = self._counter, None
        try:
            self._policy.close(step, counter)   # stops a counter still running (custom loops)
        finally:
            if self._phases is not None:
                self._phases.end()
            self._tracker.step()
            if self._phases is not None:
                self._phases.data()     # prefetch of the next step's batches
            self._records.append(step)
            self._steps_done += 1

    @_guarded
    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        counter, self._counter = self._counter, None
        if counter is not None:
            counter.stop()
        self._remove_hook()
        if self._tracker is not None:
            self._tracker.close()

    def _remove_hook(self) -> None:
        hook, self._hook = getattr(self, "_hook", None), None
        if hook is not None:
            hook.remove()
        phases = getattr(self, "_phases", None)
        if phases is not None:
            phases.detach()

    # ---- figures -----------------------------------------------------------------

    @_guarded
    def on_log(self, args: Any, state: Any, control: Any, logs: Optional[Dict[str, Any]] = None,
               **kwargs: Any) -> None:
        if logs is None or self._tracker is None:
            return
        new_steps = self._steps_done != self._steps_logged
        self._steps_logged = self._steps_done
        window = self._window_work() if new_steps else None
        out = window_metrics(self._tracker, window, prefix=self.metric_prefix,
                             param_bytes=self._param_bytes, num_gpus=self.num_gpus)
        if out is None or window is None:
            return
        logs.update(out)
        if self._log is not None:
            self._log.write(out, step=state.global_step)
        history = getattr(state, "log_history", None)
        if history and history[-1].get("step") == state.global_step:
            history[-1].update(out)  # the Trainer copied logs there before on_log
        peak = self._tracker.peak
        self.history.append({
            "step": state.global_step, "steps": window.steps, "window_s": window.window_s,
            "model_flops": window.model_flops if window.known else None,
            "executed_flops": window.executed_flops, "tokens": window.tokens,
            "step_flops": window.step_flops, "peak_flops_per_sec": peak.flops_per_sec,
            "dtype": peak.dtype, "metrics": out,
        })

    def _window_work(self) -> Optional[WindowWork]:
        """The work of the steps now in the tracker's window (None when the
        window is empty or reaches past the recorded steps)."""
        return self._policy.window_work(self._records, self._tracker.summary())
