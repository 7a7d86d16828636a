"""MFUOptimizerWrapper: an optimizer that measures the MFU of the loop driving it.

Drop-in for the pure-Python mfu-tracker's wrapper (same constructor, ``profile()``,
``track_step()``, ``step()``, ``zero_grad()``, attribute forwarding) and a real
``torch.optim.Optimizer``: LR schedulers, ``state_dict()`` / ``load_state_dict()``,
``step(closure)`` returning the loss and ``param_groups`` all reach the wrapped
optimizer.

Where the peer profiles one sample batch and reuses it, times only the block and
syncs the GPU to read it, this wrapper

* counts the exact FLOPs of the real steps (:class:`~mfu_tracker.counter.FlopCounter`
  around each ``track_step()`` block and ``step(closure)`` closure, every
  ``count_every``-th optimizer step; steps in between are scaled from the last
  counted step by their tokens);
* times optimizer steps end to end with the step tracker
  (:class:`~mfu_tracker.step.Tracker`): one boundary per ``step()``, so the period
  covers data loading, forward, backward *and* the optimizer, with GPU events that
  never synchronize;
* sums FLOPs and tokens over every micro-batch of an optimizer step (gradient
  accumulation: ``track_step(zero_grad=False)`` around each micro-batch, or one
  block around all of them).
"""
from __future__ import annotations

import warnings
from collections.abc import Mapping
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterator, Optional, Tuple

import torch

from . import _C
from ._validate import check_int, check_optional_number
from ._dtypes import normalize_dtype
from .flops import param_bytes as _param_bytes
from .gpu import GPUSpec
from ._clock import block_clock
from ._peak import Peak
from .tracker import Tracker

__all__ = ["MFUOptimizerWrapper", "StepResult"]

# (model FLOPs, executed FLOPs, forward FLOPs) of a step or a block
_Flops = Tuple[float, float, float]


def _warn(message: str) -> None:
    warnings.warn(f"mfu_tracker: {message}", RuntimeWarning, stacklevel=3)


def _check_batch(batch: Any, argument: str) -> Any:
    if batch is None or isinstance(batch, (Mapping, torch.Tensor, tuple, list)):
        return batch
    raise TypeError(f"{argument} must be a dict of model inputs, a tensor, a tuple / list of "
                    f"inputs or None, not {type(batch).__name__}")


def _batch_tokens(batch: Any) -> Optional[int]:
    """Tokens of a sample batch: ``attention_mask`` ones, else ``input_ids`` elements."""
    if isinstance(batch, Mapping):
        mask = batch.get("attention_mask")
        if isinstance(mask, torch.Tensor) and mask.dim() == 2:
            return int(mask.sum())
        ids = batch.get("input_ids")
        if isinstance(ids, torch.Tensor):
            return ids.numel()
    if isinstance(batch, torch.Tensor) and not batch.is_floating_point():
        return batch.numel()
    return None


class StepResult:
    """What ``track_step()`` yields: the figures of the block, filled in when it exits.

    The same fields as :class:`~mfu_tracker.UtilizationResult` (``mfu``, ``hfu``,
    ``mbu``, ``elapsed_sec``, ``achieved_tflops``, ``achieved_tbs``,
    ``tokens_per_sec``, ``peak_flops_per_sec``, ``model_flops``,
    ``executed_flops``, ``ready``, ``dtype``, ``gpu_spec``, ``clock``), ``None``
    until the block has exited (and ``mfu`` ``None`` without a peak). The time is
    the block's own (its compute window), GPU time on a GPU: reading a figure before
    the GPU got there waits for it once; ``ready`` asks without waiting. The
    wrapper's end-to-end figures (optimizer included) are in
    :meth:`MFUOptimizerWrapper.metrics`.
    """

    __slots__ = ("_timer", "_start", "_end", "_flops", "_tokens", "_param_bytes",
                 "_peak", "_num_gpus", "_elapsed", "_figures")

    def __init__(self, timer: "_C.MarkTimer", start: int, peak: Peak, num_gpus: int,
                 param_bytes: Optional[float]) -> None:
        self._timer = timer
        self._start = start
        self._end: Optional[int] = None
        self._flops: Optional[_Flops] = None
        self._tokens: Optional[float] = None
        self._param_bytes = param_bytes
        self._peak = peak
        self._num_gpus = num_gpus
        self._elapsed: Optional[float] = None
        self._figures: Optional[Dict[str, Optional[float]]] = None

    def _close(self, end: int, flops: Optional[_Flops], tokens: Optional[float]) -> None:
        self._end = end
        self._flops = flops
        self._tokens = tokens

    @property
    def ready(self) -> bool:
        if self._end is None:
            return False
        try:
            return bool(self._timer.ready(self._end))
        except Exception:
            return True

    @property
    def elapsed_sec(self) -> Optional[float]:
        if self._elapsed is None and self._end is not None:
            try:
                self._elapsed = self._timer.elapsed_s(self._start, self._end, wait=True)
            except Exception:  # too old for the timer's history, or the driver failed
                return None
        return self._elapsed

    def _get(self, key: str) -> Optional[float]:
        if self._figures is None:
            elapsed = self.elapsed_sec
            if elapsed is None or elapsed <= 0:
                return None
            model, executed = (self._flops[0], self._flops[1]) if self._flops else (0.0, None)
            self._figures = _C.compute_metrics(
                model, elapsed, executed_flops=executed, param_bytes=self._param_bytes,
                num_tokens=self._tokens, peak_flops_per_sec=self._peak.flops_per_sec,
                peak_bytes_per_sec=self._peak.bytes_per_sec, num_gpus=self._num_gpus)
            if self._flops is None:
                self._figures.update(mfu=None, hfu=None, achieved_flops_per_sec=None)
        return self._figures.get(key)

    @property
    def mfu(self) -> Optional[float]:
        return self._get("mfu")

    @property
    def hfu(self) -> Optional[float]:
        return self._get("hfu")

    @property
    def mbu(self) -> Optional[float]:
        return self._get("mbu")

    @property
    def tokens_per_sec(self) -> Optional[float]:
        return self._get("tokens_per_sec")

    @property
    def achieved_flops_per_sec(self) -> Optional[float]:
        return self._get("achieved_flops_per_sec")

    @property
    def achieved_tflops(self) -> Optional[float]:
        value = self._get("achieved_flops_per_sec")
        return None if value is None else value * 1e-12

    @property
    def achieved_tbs(self) -> Optional[float]:
        value = self._get("achieved_bytes_per_sec")
        return None if value is None else value * 1e-12

    @property
    def peak_flops_per_sec(self) -> Optional[float]:
        peak = self._peak.flops_per_sec
        return None if peak is None else peak * self._num_gpus

    @property
    def model_flops(self) -> Optional[float]:
        return None if self._flops is None else self._flops[0]

    @property
    def executed_flops(self) -> Optional[float]:
        return None if self._flops is None else self._flops[1]

    @property
    def num_tokens(self) -> Optional[float]:
        return self._tokens

    @property
    def dtype(self) -> str:
        return self._peak.dtype

    @property
    def gpu_spec(self) -> Optional[GPUSpec]:
        return self._peak.spec

    @property
    def clock(self) -> str:
        return self._timer.clock

    def __repr__(self) -> str:
        if self._end is None:
            return "StepResult(pending)"
        return (f"StepResult(mfu={self.mfu!r}, elapsed_sec={self.elapsed_sec!r}, "
                f"model_flops={self.model_flops!r}, dtype={self.dtype!r})")


class MFUOptimizerWrapper(torch.optim.Optimizer):
    """Wrap an optimizer to measure MFU / HFU / MBU, tokens/s and step time::

        optimizer = MFUOptimizerWrapper(torch.optim.AdamW(model.parameters(), lr=3e-4),
                                        model, dtype="bf16")
        for batch in loader:
            with optimizer.track_step(num_tokens=batch["input_ids"].numel()) as r:
                loss = model(**batch).loss      # zero_grad() ran at block entry
                loss.backward()
            optimizer.step()                    # closes the optimizer step
            if step % 10 == 0:
                print(optimizer.metrics())      # end to end; never blocks
                print(r.mfu)                    # this block only (may wait for the GPU)

    FLOPs (DESIGN §3): the ops run inside ``track_step()`` blocks (and inside a
    ``step(closure)`` closure) are counted exactly on every ``count_every``-th
    optimizer step; other steps are scaled from the last counted one by their
    tokens (or taken equal to it without ``num_tokens``). Without any counted
    block, ``profile()`` counts ``sample_batch`` once (forward + backward) and
    each step is that x ``gradient_accumulation_steps`` (or scaled by tokens).
    Under ``torch.compile`` the counter cannot tell model FLOPs from recompute;
    call ``profile()`` before compiling (as with the peer) and the wrapper takes
    the model / executed split from the profile.

    Time: one step-tracker boundary per ``step()`` (after the wrapped optimizer
    ran), the first at the first ``track_step()`` / ``zero_grad()`` / ``step()``;
    figures via :meth:`metrics` / :meth:`summary` cover the last ``window``
    optimizer steps after ``warmup``.

    Gradient accumulation: everything between two ``step()`` calls is one
    optimizer step. Use one ``track_step()`` around all micro-batches, or
    ``track_step(zero_grad=False)`` around each.

    Args:
        optimizer: the ``torch.optim.Optimizer`` to wrap.
        model: the model it trains (for ``profile()`` and ``param_bytes``).
        sample_batch: a representative batch (dict of inputs, tensor or tuple) for
            ``profile()``; optional when steps are counted.
        dtype: compute dtype selecting the peak ("bf16", "fp16", "tf32", "fp32"...).
        num_gpus: devices the FLOPs per step ran on (keep 1 for per-rank counts).
        hfu_backward_factor: override the executed (HFU) FLOPs as
            forward x (1 + factor) -- the peer's knob (3.0 for full activation
            checkpointing). ``None``: executed FLOPs as counted (recompute seen).
        device: the device whose peak and clock to use.
        backward_factor: the peer README's spelling: executed FLOPs as forward x
            factor (3.0 without, 4.0 with full checkpointing). Exclusive with
            ``hfu_backward_factor``. Model FLOPs (MFU) never change with it.
        count_every: count FLOPs on every N-th optimizer step (1 = every step,
            0 = never: ``profile()`` / ``sample_batch`` only).
        gradient_accumulation_steps: micro-batches per optimizer step, used only
            when FLOPs come from the sample batch without token counts.
        window, warmup: the step tracker's window and warm-up (steps).
        spec, peak_tflops: a :class:`GPUSpec` or a per-device peak (TFLOP/s)
            instead of the table (CPUs, unknown GPUs).
        clock: "auto", "cuda", "hip" or "cpu" (see :class:`~mfu_tracker.step.Tracker`).
        causal_attention: "full" (default, PaLM) or "half" (Megatron).
        distributed: False (default): ``metrics()`` is this rank's own figures;
            True / None: global figures by a collective at each ``metrics()``
            call (see :class:`~mfu_tracker.step.Tracker`).

    Bad arguments raise ``TypeError`` / ``ValueError`` naming them. In the loop
    the wrapper never raises from its own bookkeeping: a failure gives one
    warning and a missing figure; the wrapped optimizer's own errors propagate.
    """

    def __init__(
        self,
        optimizer: torch.optim.Optimizer,
        model: torch.nn.Module,
        sample_batch: Any = None,
        dtype: Any = "bf16",
        num_gpus: int = 1,
        hfu_backward_factor: Optional[float] = None,
        device: Any = None,
        *,
        backward_factor: Optional[float] = None,
        count_every: int = 1,
        gradient_accumulation_steps: int = 1,
        window: int = 100,
        warmup: int = 1,
        spec: Optional[GPUSpec] = None,
        peak_tflops: Optional[float] = None,
        clock: str = "auto",
        causal_attention: str = "full",
        distributed: Optional[bool] = False,
    ) -> None:
        # NB: torch.optim.Optimizer.__init__ is deliberately not called: the
        # param groups, state and defaults are the wrapped optimizer's
        # (properties below), never copies.
        if isinstance(optimizer, MFUOptimizerWrapper):
            raise TypeError("optimizer is already an MFUOptimizerWrapper")
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError(f"optimizer must be a torch.optim.Optimizer, not {type(optimizer).__name__}")
        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, not {type(model).__name__}")
        if next(model.parameters(), None) is None:
            raise ValueError("model has no parameters: there is nothing for the optimizer to train "
                             "(pass the model whose parameters the optimizer updates)")
        hfu_backward_factor = check_optional_number(hfu_backward_factor, "hfu_backward_factor", 0.0)
        backward_factor = check_optional_number(backward_factor, "backward_factor", 1.0)
        if hfu_backward_factor is not None and backward_factor is not None:
            raise ValueError("give hfu_backward_factor or backward_factor, not both")
        if causal_attention not in ("full", "half"):
            raise ValueError(f"causal_attention must be 'full' or 'half', not {causal_attention!r}")
        d = self.__dict__
        d["optimizer"] = optimizer
        d["_model"] = model
        d["_sample_batch"] = _check_batch(sample_batch, "sample_batch")
        d["_dtype"] = normalize_dtype(dtype)
        d["_num_gpus"] = num_gpus
        d["_hfu_factor"] = (1.0 + hfu_backward_factor if hfu_backward_factor is not None
                            else backward_factor)
        d["_count_every"] = check_int(count_every, "count_every", 0)
        d["_accumulation"] = check_int(gradient_accumulation_steps, "gradient_accumulation_steps", 1)
        d["_causal"] = causal_attention
        d["_param_bytes"] = float(_param_bytes(model))
        d["_tracker"] = Tracker(None, dtype=dtype, window=window, warmup=warmup,
                                param_bytes=d["_param_bytes"], num_gpus=num_gpus, device=device,
                                spec=spec, peak_tflops=peak_tflops, clock=clock,
                                distributed=distributed)
        timer, index, current = block_clock(clock, device)
        d["_timer"] = timer if timer is not None else _C.MarkTimer("cpu")
        d["_stream"] = (lambda: current(index)) if current is not None else (lambda: 0)
        d["_started"] = False
        d["_steps"] = 0            # optimizer steps closed
        d["_profile"] = None       # (model, executed, forward) FLOPs of sample_batch
        d["_profile_failed"] = False
        d["_sample_tokens"] = None
        d["_reference"] = None     # (flops, tokens or None) of the last counted step
        d["_warned"] = set()
        self._reset_step()

    # ---- the wrapped optimizer -------------------------------------------------

    # param_groups / state / defaults are the wrapped optimizer's own objects
    # (load_state_dict replaces them there, so they are looked up every time).
    @property
    def param_groups(self) -> Any:  # type: ignore[override]
        return self.optimizer.param_groups

    @param_groups.setter
    def param_groups(self, value: Any) -> None:
        self.optimizer.param_groups = value

    @property
    def state(self) -> Any:  # type: ignore[override]
        return self.optimizer.state

    @state.setter
    def state(self, value: Any) -> None:
        self.optimizer.state = value

    @property
    def defaults(self) -> Any:  # type: ignore[override]
        return self.optimizer.defaults

    @defaults.setter
    def defaults(self, value: Any) -> None:
        self.optimizer.defaults = value

    def __getattr__(self, name: str) -> Any:
        # Only reached for names the wrapper lacks: the wrapped optimizer's
        # (its hooks' dicts, extra attributes of custom optimizers).
        if name == "optimizer" or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.__dict__["optimizer"], name)

    def __getstate__(self) -> Dict[str, Any]:
        raise TypeError("MFUOptimizerWrapper cannot be pickled; save optimizer.state_dict() instead")

    def __repr__(self) -> str:
        return f"MFUOptimizerWrapper({self.optimizer!r}, dtype={self._dtype!r})"

    def state_dict(self) -> Dict[str, Any]:  # type: ignore[override]
        return self.optimizer.state_dict()

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:  # type: ignore[override]
        self.optimizer.load_state_dict(state_dict)

    def add_param_group(self, param_group: Dict[str, Any]) -> None:  # type: ignore[override]
        self.optimizer.add_param_group(param_group)

    def zero_grad(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        self._start_clock()
        self.optimizer.zero_grad(*args, **kwargs)

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:  # type: ignore[override]
        """Step the wrapped optimizer (its return value, e.g. the closure's loss),
        then close the optimizer step on the tracker."""
        first = not self._started
        self._start_clock()
        if closure is not None and self._counting():
            closure = self._counted_closure(closure)
        loss = self.optimizer.step() if closure is None else self.optimizer.step(closure)
        if not first or self._step_blocks:
            self._close_step()
        else:
            self._reset_step()  # this call only started the clock
        return loss

    # ---- FLOPs ------------------------------------------------------------------

    def profile(self) -> None:
        """Count ``sample_batch`` once (forward + backward, on the current model).

        Call it before ``torch.compile`` (the peer's pattern). Needed only when
        steps are not counted (``count_every=0``, or ``step()`` without
        ``track_step()``); idempotent. A failure gives one warning.
        """
        if self._profile is not None or self._sample_batch is None or self._profile_failed:
            return
        from .counter import profile_flops_with_hfu  # lazy: the counter loads its extension

        batch = self._sample_batch
        args, kwargs = (None, batch) if isinstance(batch, Mapping) else (batch, None)
        was_training = self._model.training
        try:
            counted = profile_flops_with_hfu(self._model, args, kwargs, with_backward=True,
                                             causal_attention=self._causal)
            forward = profile_flops_with_hfu(self._model, args, kwargs, with_backward=False,
                                             causal_attention=self._causal).flops
        except Exception as error:  # noqa: BLE001 -- never raise into the loop
            self.__dict__["_profile_failed"] = True  # not retried at every step
            self._warn_once("profile", f"profiling sample_batch failed ({error!r}); MFU needs "
                            "counted steps (track_step()) instead")
            return
        finally:
            self._model.train(was_training)
        self.__dict__["_profile"] = (float(counted.flops), float(counted.hfu_flops), float(forward))
        self.__dict__["_sample_tokens"] = _batch_tokens(batch)

    def _counting(self) -> bool:
        return self._count_every > 0 and self._steps % self._count_every == 0

    def _new_counter(self) -> Any:
        if self._counter is None:
            from .counter import FlopCounter  # lazy

            self.__dict__["_counter"] = FlopCounter(causal_attention=self._causal, modules=False)
        return self._counter

    def _counted_closure(self, closure: Callable[[], Any]) -> Callable[[], Any]:
        def counted() -> Any:
            try:
                counter = self._new_counter()
                counter.__enter__()
            except Exception as error:  # noqa: BLE001
                self._warn_once("counter", f"FLOP counting failed ({error!r})")
                return closure()
            try:
                return closure()
            finally:
                self._exit_counter(counter)
                self.__dict__["_step_blocks"] += 1
                self.__dict__["_step_counted"] = True

        return counted

    @contextmanager
    def track_step(self, num_tokens: Optional[float] = None, *,
                   zero_grad: bool = True) -> Iterator[StepResult]:
        """Count and time one block of the step (forward + backward).

        ``zero_grad()`` runs at block entry (the peer's behaviour); pass
        ``zero_grad=False`` to wrap each micro-batch of a gradient-accumulation
        step. ``num_tokens`` (tokens in the block) gives tokens/s. Yields a
        :class:`StepResult` filled in when the block exits. An exception in the
        block propagates unchanged.
        """
        if num_tokens is not None:
            num_tokens = check_optional_number(num_tokens, "num_tokens", 0.0)
        if self._count_every == 0:
            self.profile()
        if zero_grad:
            self.optimizer.zero_grad()
        self._start_clock()
        counter = None
        before = (0.0, 0.0, 0.0)
        if self._counting():
            try:
                counter = self._new_counter()
                before = (counter.model_flops, counter.executed_flops, counter.forward_flops)
                counter.__enter__()
            except Exception as error:  # noqa: BLE001
                self._warn_once("counter", f"FLOP counting failed ({error!r}); steps are estimated")
                counter = None
        start = self._mark()
        result = StepResult(self._timer, start, self._tracker.peak, self._num_gpus, self._param_bytes)
        try:
            yield result
        finally:
            end = self._mark()
            flops: Optional[_Flops] = None
            if counter is not None:
                try:
                    self._exit_counter(counter)
                    flops = (counter.model_flops - before[0], counter.executed_flops - before[1],
                             counter.forward_flops - before[2])
                    self.__dict__["_step_counted"] = True
                except Exception as error:  # noqa: BLE001
                    self._warn_once("counter", f"FLOP counting failed ({error!r})")
            d = self.__dict__
            d["_step_blocks"] += 1
            if num_tokens is not None:
                d["_step_tokens"] = (d["_step_tokens"] or 0.0) + num_tokens
            else:
                d["_step_tokens_missing"] = True
            if flops is None:
                flops = self._estimate(num_tokens, 1)
            result._close(end, self._adjust(flops) if flops else None, num_tokens)

    def _mark(self) -> int:
        """A mark on the block clock. A GPU driver failure gives one warning and
        the CPU clock from then on (a block it cut through has no elapsed time)."""
        try:
            return self._timer.mark(self._stream())
        except Exception as error:  # noqa: BLE001 -- never raise into the loop
            if not getattr(self._timer, "failed", False):  # a failed MarkTimer warned already
                self._warn_once("clock", f"track_step(): {error}; timing falls back to the CPU clock")
            self.__dict__["_timer"] = _C.MarkTimer("cpu")
            self.__dict__["_stream"] = lambda: 0
            return self._timer.mark()

    def _exit_counter(self, counter: Any) -> None:
        """Exit the step's counter; ops it could not count warn once per run."""
        problem = counter.stop(warn=False)
        if problem is not None:
            self._warn_once("uncounted", f"FlopCounter: {problem}; the MFU of such steps is low (not warned again)")

    def _adjust(self, flops: _Flops) -> _Flops:
        """Compiled models and the peer's HFU factors."""
        model, executed, forward = flops
        if executed > forward and model <= forward:
            # A backward ran but the model FLOPs hold only the forward:
            # AOTAutograd (torch.compile) runs the compiled forward without
            # grad, so the split is the profile's (or the executed count).
            ratio = self._profile[0] / self._profile[1] if self._profile and self._profile[1] else 1.0
            if self._profile is None:
                self._warn_once("compiled", "the counted steps ran a compiled forward, whose model "
                                "FLOPs the counter cannot split from recompute: MFU uses the "
                                "executed FLOPs; call profile() before torch.compile for the exact split")
            model = executed * ratio
        if self._hfu_factor is not None:
            executed = forward * self._hfu_factor
        return (model, executed, forward)

    def _estimate(self, tokens: Optional[float], blocks: int) -> Optional[_Flops]:
        """FLOPs of an uncounted step (or block) with ``tokens`` tokens."""
        if self._reference is not None:
            flops, ref_tokens = self._reference
            if tokens is not None and ref_tokens:
                return tuple(f * tokens / ref_tokens for f in flops)  # type: ignore[return-value]
            return flops
        if self._profile is not None:
            if tokens is not None and self._sample_tokens:
                return tuple(f * tokens / self._sample_tokens for f in self._profile)  # type: ignore[return-value]
            scale = self._accumulation if blocks != 1 else 1
            return tuple(f * scale for f in self._profile)  # type: ignore[return-value]
        return None

    # ---- steps ------------------------------------------------------------------

    def _reset_step(self) -> None:
        d = self.__dict__
        d["_counter"] = None
        d["_step_counted"] = False
        d["_step_blocks"] = 0
        d["_step_tokens"] = None
        d["_step_tokens_missing"] = False

    def _start_clock(self) -> None:
        if not self._started:
            self.__dict__["_started"] = True
            try:
                self._tracker.step()
            except Exception as error:  # noqa: BLE001
                self._warn_once("tracker", f"the step tracker failed ({error!r})")

    def _close_step(self) -> None:
        try:
            tokens = None if self._step_tokens_missing else self._step_tokens
            flops: Optional[_Flops] = None
            if self._step_counted and self._counter is not None:
                c = self._counter
                flops = self._adjust((float(c.model_flops), float(c.executed_flops),
                                      float(c.forward_flops)))
                self.__dict__["_reference"] = (flops, tokens)
            else:
                if self._count_every == 0 or not self._step_blocks:
                    self.profile()
                flops = self._estimate(tokens, self._step_blocks or self._accumulation)
                if flops is not None:
                    flops = self._adjust(flops)  # idempotent on counted references
            if flops is None:
                self._warn_once("noflops", "no FLOPs for this step: run forward/backward inside "
                                "track_step() (counted), or give sample_batch; MFU is left out")
                self._tracker.step(num_tokens=tokens)
            else:
                self._tracker.step(num_tokens=tokens, model_flops=flops[0], executed_flops=flops[1])
            self.__dict__["_last_step_flops"] = flops
        except Exception as error:  # noqa: BLE001 -- never raise into the loop
            self._warn_once("close", f"closing the step failed ({error!r}); it is left out")
        finally:
            self.__dict__["_steps"] += 1
            self._reset_step()

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            _warn(message)

    # ---- figures ----------------------------------------------------------------

    @property
    def tracker(self) -> Tracker:
        """The step tracker (end-to-end optimizer-step periods)."""
        return self._tracker

    @property
    def last_step_flops(self) -> Optional[Tuple[float, float]]:
        """(model, executed) FLOPs of the last closed optimizer step, or None."""
        flops = self.__dict__.get("_last_step_flops")
        return None if flops is None else (flops[0], flops[1])

    def metrics(self, prefix: str = "throughput") -> Dict[str, float]:
        """End-to-end figures of the last ``window`` optimizer steps
        (:meth:`mfu_tracker.step.Tracker.metrics`); never blocks.

        With ``distributed=True`` (or None under an initialized process group)
        it is a collective giving global figures: every rank must call it at
        the same steps. The default, False, keeps it local, so calling it on
        rank 0 alone is safe."""
        return self._tracker.metrics(prefix)

    def summary(self) -> Dict[str, Any]:
        """:meth:`mfu_tracker.step.Tracker.summary` of the optimizer steps."""
        return self._tracker.summary()

    def close(self) -> None:
        """Resolve every pending step and release the tracker's GPU events."""
        self._tracker.close()
