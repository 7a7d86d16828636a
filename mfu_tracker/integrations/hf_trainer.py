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

* **Time**: the step tracker (:class:`~mfu_tracker.step.Tracker`) marks a
  boundary at every ``on_step_end``; the first at the first ``on_step_begin``.
  A step's period is end to end: data loading, every micro-batch's forward and
  backward, clipping, the optimizer, logging -- evaluation and checkpoint
  saving too when they fall inside it. GPU events, never a synchronization.
* **FLOPs**: a :class:`~mfu_tracker.counter.FlopCounter` is active from
  ``on_step_begin`` to ``on_pre_optimizer_step`` on every ``count_every``-th
  optimizer step, so every micro-batch of the step is counted exactly on its
  real shapes (padding included: it ran). Steps in between are scaled from the
  last counted step by their padded tokens. Without the counter
  (``count_every=0``), FLOPs are analytic (``transformer_flops`` on
  ``model.config``, ``formula="matmul"``, each sequence at its real length),
  else the ``sample_batch`` profile scaled by tokens.
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
from collections.abc import Mapping
from typing import Any, Callable, Deque, Dict, List, Optional, Tuple, TypeVar

from transformers import TrainerCallback

from .._dtypes import normalize_dtype
from .._validate import check_clock, check_int, check_optional_number, check_peak_tflops
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


class _Step:
    """What one optimizer step did: counted FLOPs and its micro-batches' inputs."""

    __slots__ = ("flops", "padded_tokens", "tokens", "batches")

    def __init__(self) -> None:
        self.flops: Optional[Tuple[float, float, float]] = None  # model, executed, forward
        self.padded_tokens = 0
        self.tokens: List[Any] = []     # ints or 0-d tensors (summed on the device)
        self.batches: List[Tuple[int, int, Any]] = []  # (batch, seq_len, row lengths or None)


class MFUCallback(TrainerCallback):
    """Log MFU, HFU, MBU, tokens/s, achieved TFLOP/s and the peak at every
    Trainer logging step (see the module docstring for the keys)::

        trainer = Trainer(model=model, args=args, train_dataset=ds,
                          callbacks=[MFUCallback()])          # everything detected

        MFUCallback(dtype="bf16", peak_tflops=989.4)          # explicit peak (TFLOP/s)

    Args:
        sample_batch: a representative batch (dict or tensor); used only when
            steps are not counted and ``model.config`` is not a supported
            transformer (the peer profiled it once; real batches are counted here).
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
    ) -> None:
        if sample_batch is not None and not isinstance(sample_batch, Mapping):
            if type(sample_batch).__name__ != "Tensor" or "torch" not in type(sample_batch).__module__:
                raise TypeError("sample_batch must be a dict of model inputs, a tensor or None, "
                                f"not {type(sample_batch).__name__}")
        self.sample_batch = sample_batch
        self.dtype = None if dtype is None else normalize_dtype(dtype)
        self.num_gpus = check_int(num_gpus, "num_gpus", 1)
        factor = check_optional_number(hfu_backward_factor, "hfu_backward_factor", 0.0)
        total = check_optional_number(backward_factor, "backward_factor", 1.0)
        if factor is not None and total is not None:
            raise ValueError("give hfu_backward_factor or backward_factor, not both")
        self.hfu_backward_factor = factor
        self._hfu_factor = 1.0 + factor if factor is not None else total
        if not isinstance(metric_prefix, str):
            raise TypeError(f"metric_prefix must be a str, not {type(metric_prefix).__name__}")
        self.metric_prefix = metric_prefix
        if device is not None:
            from .._validate import check_device

            check_device(device)  # a bad device is a configuration error, raised now
        self.device = device
        self.peak_tflops = None if peak_tflops is None else check_peak_tflops(peak_tflops)
        if spec is not None and not isinstance(spec, GPUSpec):
            raise TypeError(f"spec must be a GPUSpec, not {type(spec).__name__}")
        self.spec = spec
        self.count_every = check_int(count_every, "count_every", 0)
        self.window = None if window is None else check_int(window, "window", 1)
        self.warmup = check_int(warmup, "warmup", 0)
        if causal_attention not in ("full", "half"):
            raise ValueError(f"causal_attention must be 'full' or 'half', not {causal_attention!r}")
        self.causal_attention = causal_attention
        self.clock = check_clock(clock)
        self.history: Deque[Dict[str, Any]] = deque(maxlen=1000)
        self._warned: set = set()
        self._reset()

    def _reset(self) -> None:
        self._tracker: Any = None
        self._model: Any = None
        self._hook: Any = None
        self._config: Any = None        # a transformer_flops-capable config, or None
        self._profile: Optional[Tuple[Tuple[float, float, float], Optional[int]]] = None
        self._param_bytes: Optional[float] = None
        self._recompute = "none"
        self._records: Deque[_Step] = deque(maxlen=100)
        self._step: Optional[_Step] = None
        self._counter: Any = None
        self._counter_usable = True
        self._reference: Optional[Tuple[Tuple[float, float, float], int]] = None
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

        from ..flops import param_bytes, transformer_flops
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
        self._model = model
        dtype = self._resolve_dtype(args, model)
        self.resolved_dtype = dtype
        if next(model.parameters(), None) is None:
            self._warn_once("params", "the model has no parameters: MBU is left out")
        else:
            self._param_bytes = float(param_bytes(model))
        if getattr(args, "gradient_checkpointing", False):
            self._recompute = "full"
        window = self.window
        if window is None:
            steps = getattr(state, "logging_steps", None)
            strategy = getattr(args, "logging_strategy", "steps")
            strategy = str(getattr(strategy, "value", strategy)).lower()
            window = int(steps) if isinstance(steps, (int, float)) and steps >= 1 \
                and strategy == "steps" else 100
        self._records = deque(maxlen=window)
        device = self.device if self.device is not None else getattr(args, "device", None)
        self._tracker = Tracker(None, dtype=dtype, window=window, warmup=self.warmup,
                                param_bytes=self._param_bytes, num_gpus=self.num_gpus,
                                device=device, spec=self.spec, peak_tflops=self.peak_tflops,
                                clock=self.clock)
        config = getattr(model, "config", None)
        if config is not None:
            try:
                transformer_flops(config, seq_len=1, batch_size=1, formula="matmul")
                self._config = config
            except Exception:  # noqa: BLE001 -- not a supported transformer
                self._config = None
        if self.count_every == 0 and self._config is None and self.sample_batch is not None:
            self._profile_sample(model)
        self._hook = model.register_forward_pre_hook(self._record_inputs, with_kwargs=True)

    def _profile_sample(self, model: Any) -> None:
        import torch

        from ..counter import profile_flops_with_hfu

        batch = self.sample_batch
        device = next(model.parameters()).device
        if isinstance(batch, Mapping):
            batch = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}
            args, kwargs = None, batch
        else:
            args, kwargs = batch.to(device), None
        was_training = model.training
        try:
            full = profile_flops_with_hfu(model, args, kwargs, with_backward=True,
                                          causal_attention=self.causal_attention)
            forward = profile_flops_with_hfu(model, args, kwargs, with_backward=False,
                                             causal_attention=self.causal_attention).flops
        finally:
            model.train(was_training)
        tokens = None
        if isinstance(batch, Mapping):
            mask, ids = batch.get("attention_mask"), batch.get("input_ids")
            tokens = int(mask.sum()) if isinstance(mask, torch.Tensor) else \
                (ids.numel() if isinstance(ids, torch.Tensor) else None)
        elif not batch.is_floating_point():
            tokens = batch.numel()
        self._profile = ((float(full.flops), float(full.hfu_flops), float(forward)), tokens)

    def _record_inputs(self, module: Any, args: Any, kwargs: Any) -> None:
        """Forward pre-hook: the tokens and shapes of a training micro-batch."""
        step = self._step
        if step is None or not module.training:
            return
        try:
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
            step.padded_tokens += batch * seq
            mask = kwargs.get("attention_mask")
            if isinstance(mask, torch.Tensor) and mask.dim() == 2 and tuple(mask.shape) == shape:
                lengths = mask.detach().sum(-1)      # on the mask's device: no sync
                step.tokens.append(lengths.sum())
                step.batches.append((batch, seq, lengths))
            else:
                step.tokens.append(batch * seq)
                step.batches.append((batch, seq, None))
        except Exception as error:  # noqa: BLE001
            self._warn_once("hook:inputs", f"reading the model inputs failed ({error!r}); "
                            "tokens/s is left out")

    @_guarded
    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._tracker is None:
            return
        if not self._started:
            self._started = True
            self._tracker.step()       # starts the clock
        self._step = _Step()
        if self.count_every and self._counter_usable and self._steps_done % self.count_every == 0:
            try:
                from ..counter import FlopCounter

                counter = FlopCounter(causal_attention=self.causal_attention, modules=False)
                counter.__enter__()
                self._counter = counter
            except Exception as error:  # noqa: BLE001
                self._counter_usable = False
                self._warn_once("counter", f"the FLOP counter is unavailable ({error!r}); "
                                "FLOPs are analytic or from sample_batch")

    def _stop_counter(self) -> None:
        counter, self._counter = self._counter, None
        if counter is None or self._step is None:
            return
        problem = counter.stop(warn=False)
        if problem is not None:  # every counted step would repeat it: once per run
            self._warn_once("uncounted", f"FlopCounter: {problem}; the MFU of such steps is low (not warned again)")
        model, executed, forward = (float(counter.model_flops), float(counter.executed_flops),
                                    float(counter.forward_flops))
        if executed > forward and model <= forward:
            # A backward ran but model FLOPs hold only the forward: a compiled
            # model (AOTAutograd runs its forward without grad).
            self._warn_once("compiled", "the model runs compiled: model FLOPs are taken as the "
                            "executed FLOPs (recompute cannot be told apart)")
            model = executed
        self._step.flops = (model, executed, forward)

    @_guarded
    def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._stop_counter()

    @_guarded
    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._tracker is None or self._step is None:
            return
        try:
            self._stop_counter()   # without on_pre_optimizer_step (custom loops)
        finally:
            step, self._step = self._step, None
            self._tracker.step()
            self._records.append(step)
            self._steps_done += 1
            if step.flops is not None:
                self._reference = (step.flops, step.padded_tokens)

    @_guarded
    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._counter is not None:
            self._counter.__exit__(None, None, None)
            self._counter = None
        self._remove_hook()
        if self._tracker is not None:
            self._tracker.close()

    def _remove_hook(self) -> None:
        hook, self._hook = getattr(self, "_hook", None), None
        if hook is not None:
            hook.remove()

    # ---- figures -----------------------------------------------------------------

    def _step_flops(self, step: _Step, lengths: Dict[int, List[int]]) -> Optional[Tuple[float, float, float]]:
        """(model, executed, forward) FLOPs of a recorded step."""
        if step.flops is not None:
            flops = step.flops
        elif self.count_every and self._reference is not None and self._reference[1]:
            ref, ref_tokens = self._reference
            flops = tuple(f * step.padded_tokens / ref_tokens for f in ref)  # type: ignore[assignment]
        elif self._config is not None and step.batches:
            from ..flops import transformer_flops

            model = executed = forward = 0.0
            for i, (batch, seq, rows) in enumerate(step.batches):
                if rows is not None:
                    f = transformer_flops(self._config, seq_lens=[n for n in lengths[id(step)][i] if n > 0]
                                          or [0], formula="matmul",
                                          causal_attention=self.causal_attention,
                                          activation_recompute=self._recompute)
                else:
                    f = transformer_flops(self._config, seq_len=seq, batch_size=batch, formula="matmul",
                                          causal_attention=self.causal_attention,
                                          activation_recompute=self._recompute)
                model += f.model_flops
                executed += f.hardware_flops
                forward += f.forward_flops
            flops = (model, executed, forward)
        elif self._profile is not None:
            ref, ref_tokens = self._profile
            tokens = sum(int(t) for t in step.tokens)
            scale = tokens / ref_tokens if ref_tokens and tokens else 1.0
            flops = tuple(f * scale for f in ref)  # type: ignore[assignment]
        else:
            return None
        if self._hfu_factor is not None:
            flops = (flops[0], flops[2] * self._hfu_factor, flops[2])
        return flops

    @_guarded
    def on_log(self, args: Any, state: Any, control: Any, logs: Optional[Dict[str, Any]] = None,
               **kwargs: Any) -> None:
        if logs is None or self._tracker is None:
            return
        new_steps = self._steps_done != self._steps_logged
        self._steps_logged = self._steps_done
        window = self._window_work() if new_steps else None
        prefix = f"{self.metric_prefix}/" if self.metric_prefix else ""
        if self._tracker.distributed:
            # A collective: every rank reaches it at every logging step, whatever
            # its own window holds, so no rank is left waiting at the gather.
            model_flops = executed_flops = tokens = None
            if window is not None and window["known"]:
                model_flops, executed_flops = window["model_flops"], window["executed_flops"]
            if window is not None:
                tokens = window["tokens"]
            figures = self._tracker.aggregate(model_flops=model_flops, executed_flops=executed_flops,
                                              num_tokens=tokens)
            if figures is None or window is None:
                return
            # Global figures (sum of work / sum of peaks) plus the per-rank spread.
            out = figures.metrics(self.metric_prefix)
        elif window is None:
            return
        else:
            out = self._local_metrics(window, prefix)
        logs.update(out)
        history = getattr(state, "log_history", None)
        if history and history[-1].get("step") == state.global_step:
            history[-1].update(out)  # the Trainer copied logs there before on_log
        peak = self._tracker.peak
        self.history.append({
            "step": state.global_step, "steps": window["steps"], "window_s": window["window_s"],
            "model_flops": window["model_flops"] if window["known"] else None,
            "executed_flops": window["executed_flops"], "tokens": window["tokens"],
            "step_flops": window["step_flops"], "peak_flops_per_sec": peak.flops_per_sec,
            "dtype": peak.dtype, "metrics": out,
        })

    def _window_work(self) -> Optional[Dict[str, Any]]:
        """The work of the steps now in the tracker's window: steps, window_s,
        model / executed FLOPs (if every step's are known), real tokens; None
        when the window is empty or reaches past the recorded steps."""
        summary = self._tracker.summary()
        steps, pending = int(summary.get("steps") or 0), int(summary.get("steps_pending") or 0)
        window_s = summary.get("window_s")
        if steps == 0 or not window_s or window_s <= 0:
            return None
        records = list(self._records)
        end = len(records) - pending
        chosen = records[max(0, end - steps):end]
        if len(chosen) != steps:  # the window reaches past what is recorded (dropped steps)
            return None
        tokens, lengths = self._resolve(chosen)
        step_flops = [self._step_flops(s, lengths) for s in chosen]
        known = all(f is not None for f in step_flops)
        if not known:
            self._warn_once("noflops", "no FLOPs for some steps (no counter, no supported "
                            "model.config, no sample_batch): MFU is left out")
        return {
            "steps": steps, "window_s": window_s, "known": known, "tokens": tokens,
            "model_flops": sum(f[0] for f in step_flops) if known else 0.0,  # type: ignore[index]
            "executed_flops": sum(f[1] for f in step_flops) if known else None,  # type: ignore[index]
            "step_flops": [f[0] if f else None for f in step_flops],
        }

    def _local_metrics(self, window: Dict[str, Any], prefix: str) -> Dict[str, float]:
        """This process's figures over ``window`` (no process group)."""
        from .. import _C

        peak = self._tracker.peak
        steps, window_s, known = window["steps"], window["window_s"], window["known"]
        executed, tokens = window["executed_flops"], window["tokens"]
        figures = _C.compute_metrics(
            window["model_flops"], window_s, executed_flops=executed,
            param_bytes=None if self._param_bytes is None else self._param_bytes * steps,
            num_tokens=tokens, peak_flops_per_sec=peak.flops_per_sec,
            peak_bytes_per_sec=peak.bytes_per_sec, num_gpus=self.num_gpus)
        out: Dict[str, float] = {}
        if known and figures.get("mfu") is not None:
            out[f"{prefix}mfu"] = figures["mfu"]
        if known and executed is not None and figures.get("hfu") is not None:
            out[f"{prefix}hfu"] = figures["hfu"]
        if figures.get("mbu") is not None:
            out[f"{prefix}mbu"] = figures["mbu"]
        if tokens is not None and figures.get("tokens_per_sec") is not None:
            out[f"{prefix}tokens_per_sec"] = figures["tokens_per_sec"]
        if known and figures.get("achieved_flops_per_sec") is not None:
            out[f"{prefix}achieved_tflops"] = figures["achieved_flops_per_sec"] * 1e-12
        out[f"{prefix}step_time_s"] = window_s / steps
        if peak.flops_per_sec is not None:
            out[f"{prefix}peak_tflops"] = peak.flops_per_sec * self.num_gpus * 1e-12
        return out

    def _resolve(self, steps: List[_Step]) -> Tuple[Optional[float], Dict[int, List[List[int]]]]:
        """Real tokens of ``steps`` and per-sequence lengths of their padded batches,
        read from the device in one transfer (after the Trainer's own loss read)."""
        import torch

        tensors = []
        for step in steps:
            tensors.extend(t for t in step.tokens if isinstance(t, torch.Tensor))
            tensors.extend(rows for _, _, rows in step.batches if rows is not None)
        values: List[Any] = []
        if tensors:
            device = tensors[0].device
            flat = torch.cat([t.reshape(-1).to(device=device, dtype=torch.long) for t in tensors])
            values = flat.tolist()
        pos = 0

        def take(n: int) -> List[int]:
            nonlocal pos
            out = values[pos:pos + n]
            pos += n
            return out

        total = 0.0
        missing = False
        lengths: Dict[int, List[List[int]]] = {}
        for step in steps:
            if not step.tokens:
                missing = True
            for t in step.tokens:
                total += take(1)[0] if isinstance(t, torch.Tensor) else t
            lengths[id(step)] = [take(rows.numel()) if rows is not None else [] for _, _, rows in step.batches]
        return (None if missing else total), lengths
