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
  (:class:`~mfu_tracker.Tracker`): one boundary per ``step()``, so the period
  covers data loading, forward, backward *and* the optimizer, with GPU events that
  never synchronize;
* sums FLOPs and tokens over every micro-batch of an optimizer step (gradient
  accumulation: ``track_step(zero_grad=False)`` around each micro-batch, or one
  block around all of them).
"""
from __future__ import annotations

import warnings
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterator, Optional, Tuple

import torch

from .._native import _C
from .._validate import (
    check_causal_attention,
    check_flag,
    check_hfu_factor,
    check_instance,
    check_int,
    check_optional_number,
    check_sample_batch,
)
from ..distributed._comm_hook import attach_ddp_or_warn
from ..flops._analytic import param_bytes as count_param_bytes
from ..flops.counter._compiled import apply_deferred
from ..peaks._table import GPUSpec
from ..timing._clock import block_clock
from ..timing._track import UtilizationResult
from ..tracker._tracker import Tracker
from ._auto_phases import AutoPhases
from ._step_flops import Flops, StepCounter, StepFlops, StepRecord

__all__ = ["MFUOptimizerWrapper"]

#: What ``track_step()`` yields: the result type of every timed block
#: (:class:`~mfu_tracker.UtilizationResult`). Kept under its earlier name.
StepResult = UtilizationResult


def _forwarded(name: str) -> Any:
    """A property reading and writing attribute ``name`` of the wrapped optimizer."""
    return property(lambda self: getattr(self.optimizer, name),
                    lambda self, value: setattr(self.optimizer, name, value))


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

    FLOPs (docs/conventions.md), by the integrations' one step-FLOPs policy
    (:mod:`mfu_tracker.integrations._step_flops`): the ops run inside ``track_step()``
    blocks (and inside a ``step(closure)`` closure) are counted exactly on
    every ``count_every``-th optimizer step; other steps are scaled from the
    last counted one by their tokens (or taken equal to it without
    ``num_tokens``). Without any counted block, ``profile()`` counts
    ``sample_batch`` once (forward + backward) and each step is that scaled by
    its tokens, or x its micro-batches (``track_step()`` blocks, else
    ``gradient_accumulation_steps``). Under ``torch.compile`` the counter
    cannot tell model FLOPs from recompute: the model / executed split is the
    ``sample_batch`` profile's, counted on the eager model (call
    ``profile()`` before compiling, as with the peer; it is taken when first
    needed otherwise), or the executed FLOPs with one warning.

    Time: one step-tracker boundary per ``step()`` (after the wrapped optimizer
    ran); the clock starts at the first ``track_step()`` / ``zero_grad()`` /
    ``step(closure)``, or at the model's first training forward (its hooks,
    ``phases=True``), so a loop whose first call is the forward (forward,
    backward, ``step()``, ``zero_grad()``) times its first step too. Without
    the hooks such a first step is numbered but untimed: its FLOPs go to the
    job ledger, its time is startup (docs/goodput.md). Figures via
    :meth:`metrics` / :meth:`summary` cover the last ``window`` optimizer
    steps after ``warmup``.

    Gradient accumulation: everything between two ``step()`` calls is one
    optimizer step. Use one ``track_step()`` around all micro-batches, or
    ``track_step(zero_grad=False)`` around each.

    Args:
        optimizer: the ``torch.optim.Optimizer`` to wrap.
        model: the model it trains (for ``profile()`` and ``param_bytes``).
        sample_batch: a representative batch (dict of inputs, tensor or tuple /
            list of inputs) for ``profile()``; optional when steps are counted.
        dtype: compute dtype selecting the peak ("bf16", "fp16", "tf32", "fp32"...;
            None: bf16, or fp16 on a device without bf16 (docs/conventions.md)).
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
        clock: "auto", "cuda", "hip" or "cpu" (see :class:`~mfu_tracker.Tracker`).
        causal_attention: "full" (default, PaLM) or "half" (Megatron).
        distributed: False (default): ``metrics()`` is this rank's own figures;
            True / None: global figures by a collective at each ``metrics()``
            call (see :class:`~mfu_tracker.Tracker`).
        phases: mark the step's phases automatically for the waterfall
            (:mod:`mfu_tracker.integrations._auto_phases`): data from the step boundary to
            the model's first forward, forward and backward from the model's
            forward hooks (each micro-batch; a new ``track_step()`` block goes
            back to data), optimizer around the wrapped ``step()``. Exposed
            communication needs no mark: under a process group the tracker
            observes every collective (:mod:`mfu_tracker.distributed._comm_observer`;
            with ``comm=False`` a ``DistributedDataParallel`` model gets the
            marking hook of ``Tracker.attach_ddp``). False: no marks (mark
            them yourself with ``wrapper.tracker.phase()``).
        log_path: append each non-empty ``metrics()`` dict to this JSONL file
            (rank 0 only; the input of ``mfu-tracker report`` and
            ``mfu-tracker goodput``): the tracker's ``log_path`` (see
            :class:`~mfu_tracker.Tracker`).
        start_step: the global step this run resumes from (the tracker's
            ``start_step``: after loading a checkpoint, the optimizer steps
            earlier runs trained). A compiled model's first step is marked
            ``compile`` (:mod:`mfu_tracker.integrations._auto_phases`).
        profile_steps: profile chosen optimizer steps with ``torch.profiler``
            and break each down by kernel class (``kernel_share/*``,
            ``kernel_tflops/*``, ``kernel_gbs/*`` in the next ``metrics()``; a
            ``breakdown`` record in ``log_path``): None (off, the default),
            N (the first step after the warm-up, then every N-th), True (every
            500th) or a collection of global step numbers
            (:class:`~mfu_tracker.Tracker`'s ``profile_steps``; docs/kernel-breakdown.md).
        profile_trace_dir: keep each profiled step's raw Kineto trace there
            (None: the trace is reduced in memory and dropped).

    Bad arguments raise ``TypeError`` / ``ValueError`` naming them. In the loop
    the wrapper never raises from its own bookkeeping: a failure gives one
    warning and a missing figure; the wrapped optimizer's own errors propagate.
    """

    def __init__(
        self,
        optimizer: torch.optim.Optimizer,
        model: torch.nn.Module,
        sample_batch: Any = None,
        dtype: Any = None,
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
        phases: bool = True,
        log_path: Any = None,
        start_step: int = 0,
        profile_steps: Any = None,
        profile_trace_dir: Any = None,
    ) -> None:
        # NB: torch.optim.Optimizer.__init__ is deliberately not called: the
        # param groups, state and defaults are the wrapped optimizer's
        # (properties below), never copies.
        if isinstance(optimizer, MFUOptimizerWrapper):
            raise TypeError("optimizer is already an MFUOptimizerWrapper")
        check_instance(optimizer, "optimizer", torch.optim.Optimizer, "a torch.optim.Optimizer")
        check_instance(model, "model", torch.nn.Module, "a torch.nn.Module")
        if next(model.parameters(), None) is None:
            raise ValueError("model has no parameters: there is nothing for the optimizer to train "
                             "(pass the model whose parameters the optimizer updates)")
        check_flag(phases, "phases")
        hfu_factor = check_hfu_factor(hfu_backward_factor, backward_factor)
        # A non-str causal_attention is a ValueError here (as it always was).
        causal = check_causal_attention(causal_attention, type_error=False)
        d = self.__dict__
        d["optimizer"] = optimizer
        d["_num_gpus"] = num_gpus
        d["_accumulation"] = check_int(gradient_accumulation_steps, "gradient_accumulation_steps", 1)
        policy = StepFlops(count_every=check_int(count_every, "count_every", 0),
                           causal_attention=causal, hfu_factor=hfu_factor,
                           warn_once=self._warn_once,
                           sample_batch=check_sample_batch(sample_batch))
        d["_policy"] = policy
        d["_param_bytes"] = float(count_param_bytes(model))
        d["_tracker"] = Tracker(None, dtype=dtype, window=window, warmup=warmup,
                                param_bytes=d["_param_bytes"], num_gpus=num_gpus, device=device,
                                spec=spec, peak_tflops=peak_tflops, clock=clock,
                                distributed=distributed, log_path=log_path,
                                start_step=start_step, profile_steps=profile_steps,
                                profile_trace_dir=profile_trace_dir)
        d["_dtype"] = d["_tracker"].peak.dtype   # checked and resolved by the tracker
        policy.attach(model)   # once every argument passed its check (the tracker's too)
        block = block_clock(clock, device, "track_step()")
        current, index = block.current_stream, block.index
        d["_timer"] = block.timer
        d["_stream"] = (lambda: current(index)) if current is not None else (lambda: 0)
        d["_started"] = False
        d["_warned"] = set()
        d["_last_step_flops"] = None
        d["_phases"] = None
        if phases:
            d["_phases"] = AutoPhases(d["_tracker"])
            d["_phases"].attach(model)
            d["_phases"].compiled(model)
            # a loop whose first call is step() (forward, backward, step(), zero_grad())
            # has its first step timed from its forward, like the others
            d["_phases"].before_first_forward = self._start_clock
            if isinstance(model, torch.nn.parallel.DistributedDataParallel):
                self._attach_ddp(model)
        self._open_step()

    def _attach_ddp(self, model: torch.nn.Module) -> None:
        """Exposed communication of a DDP model (``Tracker.attach_ddp``); a
        model with its own communication hook keeps it (one warning)."""
        attach_ddp_or_warn(self._tracker, model, lambda message: self._warn_once("ddp", message),
                           "use wrapper.tracker.attach_ddp(model, hook=your_hook) before "
                           "registering yours")

    # ---- the wrapped optimizer -------------------------------------------------

    # param_groups / state / defaults are the wrapped optimizer's own objects
    # (load_state_dict replaces them there, so they are looked up every time).
    param_groups = _forwarded("param_groups")
    state = _forwarded("state")
    defaults = _forwarded("defaults")

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
        if first and closure is None and not self._record.micro_batches:
            return self._untimed_first_step()
        self._start_clock()
        if closure is not None:
            closure = self._counted_closure(closure)
        auto = self._phases
        if auto is not None and closure is None:
            auto.optimizer()
        loss = self.optimizer.step() if closure is None else self.optimizer.step(closure)
        if auto is not None:
            auto.end()
        if not first or self._record.micro_batches:
            self._close_step()
        else:
            self._open_step()  # this call only started the clock
        return loss

    # ---- FLOPs ------------------------------------------------------------------

    def profile(self) -> None:
        """Count ``sample_batch`` once (forward + backward, on the eager model).

        Call it before ``torch.compile`` (the peer's pattern). Needed only when
        steps are not counted (``count_every=0``, or ``step()`` without
        ``track_step()``); idempotent. A failure gives one warning.
        """
        self._policy.profile_sample()

    def _counter(self) -> Optional[StepCounter]:
        """The open step's counter (created by its first counted region), or None."""
        if self._step_counter is None and self._policy.counting():
            self.__dict__["_step_counter"] = self._policy.step_counter()
        return self._step_counter

    def _counted_closure(self, closure: Callable[[], Any]) -> Callable[[], Any]:
        def counted() -> Any:
            counter = self._counter()
            if counter is not None:
                counter.start()
            try:
                return closure()
            finally:
                if counter is not None:
                    counter.stop()
                self._record.add_block(None)

        return counted

    @contextmanager
    def track_step(self, num_tokens: Optional[float] = None, *,
                   zero_grad: bool = True) -> Iterator[UtilizationResult]:
        """Count and time one block of the step (forward + backward).

        ``zero_grad()`` runs at block entry (the peer's behaviour); pass
        ``zero_grad=False`` to wrap each micro-batch of a gradient-accumulation
        step. ``num_tokens`` (tokens in the block) gives tokens/s. Yields a
        :class:`~mfu_tracker.UtilizationResult` (as ``track()`` does) whose
        FLOPs and tokens are set when the block exits; its time is the block's
        own (GPU time on a GPU, resolved without a sync), and it keeps its
        value however late it is read. An exception in the block propagates
        unchanged.
        """
        if num_tokens is not None:
            num_tokens = check_optional_number(num_tokens, "num_tokens", 0.0)
        if self._policy.count_every == 0:
            self._policy.prepare()
        if zero_grad:
            self.optimizer.zero_grad()
        self._start_clock()
        if self._phases is not None:
            self._phases.data()
        counter = self._counter()
        if counter is not None:
            counter.start()
        result = self._new_result()
        result.__enter__()
        try:
            yield result
        finally:
            result.__exit__(None, None, None)
            block = StepRecord()
            block.add_block(num_tokens)
            if counter is not None:
                raw = counter.stop()
                block.counted = raw
            block.reference = self._policy.reference
            self._record.add_block(num_tokens)
            flops = self._flops_or_none(block, num_tokens)
            try:
                result.set_work(None if flops is None else flops.model_flops,
                                None if flops is None else flops.executed_flops, num_tokens)
            except Exception as error:  # noqa: BLE001 -- never raise into the loop
                self._warn_once("result", f"track_step(): the block's figures are left out ({error!r})")

    def _new_result(self) -> UtilizationResult:
        """A block result on the block clock, its work unknown until it exits."""
        peak = self._tracker.peak
        values = (0.0, self._param_bytes, None, None, peak.flops_per_sec, peak.bytes_per_sec,
                  self._num_gpus, peak.dtype, peak.spec)
        timer = self._timer
        try:
            stream = self._stream() if timer is not None else 0
        except Exception as error:  # noqa: BLE001 -- never raise into the loop
            self._warn_once("stream", f"track_step(): the current stream is unknown ({error!r}); "
                            "the block is timed on the CPU clock")
            timer, stream = None, 0
        result = _C.new_track(*values, timer, stream)
        result.set_work(None)
        return result

    def _flops_or_none(self, record: StepRecord, tokens: Optional[float]) -> Optional[Flops]:
        try:
            return self._policy.resolve(record, tokens)
        except Exception as error:  # noqa: BLE001 -- never raise into the loop
            self._warn_once("flops", f"the step's FLOPs could not be had ({error!r}); MFU is left out")
            return None

    # ---- steps ------------------------------------------------------------------

    def _open_step(self) -> None:
        apply_deferred()  # the hooks run eagerly under a torch.compile started since
        d = self.__dict__
        d["_record"] = StepRecord()
        d["_step_counter"] = None

    def _start_clock(self) -> None:
        if not self._started:
            self.__dict__["_started"] = True
            try:
                if self._phases is not None:
                    self._phases.end()  # a forward before the first step marked one
                self._tracker.step()
                if self._phases is not None:
                    self._phases.data()
            except Exception as error:  # noqa: BLE001
                self._warn_once("tracker", f"the step tracker failed ({error!r})")

    def _untimed_first_step(self) -> Any:
        """The first ``step()``, its forward and backward already run with
        nothing to start the clock (no model hook: ``phases=False``, or hooks
        inside a compiled region): the step is numbered and its FLOPs go to the
        job ledger, untimed (:meth:`Tracker._untimed_step`); the clock starts
        at its end."""
        loss = self.optimizer.step()
        self._start_clock()
        try:
            tokens, flops = self._settle(self._record)
            self._tracker._untimed_step(None if flops is None else flops.model_flops)
            self.__dict__["_last_step_flops"] = flops
        except Exception as error:  # noqa: BLE001 -- never raise into the loop
            self._warn_once("close", f"closing the step failed ({error!r}); it is left out")
        finally:
            self._open_step()
        return loss

    def _settle(self, record: StepRecord) -> Tuple[Optional[float], Optional[Flops]]:
        """The closed step's tokens and FLOPs (None: unknown; one warning)."""
        if not record.micro_batches:  # step() without blocks
            record.micro_batches = self._accumulation
            record.tokens_missing = True
        self._policy.close(record, self._step_counter)
        tokens = None if record.tokens_missing or not record.tokens else float(sum(record.tokens))
        flops = self._flops_or_none(record, tokens)
        if flops is None:
            self._warn_once("noflops", "no FLOPs for this step: run forward/backward inside "
                            "track_step() (counted), or give sample_batch; MFU is left out")
        return tokens, flops

    def _close_step(self) -> None:
        record = self._record
        try:
            tokens, flops = self._settle(record)
            if self._phases is not None:
                self._phases.end()  # a profile() forward just now may have marked one
            if flops is None:
                self._tracker.step(num_tokens=tokens)
            else:
                self._tracker.step(
                    flops_by_dtype=self._policy.flops_by_dtype(record, flops.model_flops),
                    **flops.sums.replace(num_tokens=tokens).kwargs())
            self.__dict__["_last_step_flops"] = flops
        except Exception as error:  # noqa: BLE001 -- never raise into the loop
            self._warn_once("close", f"closing the step failed ({error!r}); it is left out")
        finally:
            self._open_step()
            if self._phases is not None:
                self._phases.data()

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            warnings.warn(f"mfu_tracker: {message}", RuntimeWarning, stacklevel=3)

    # ---- figures ----------------------------------------------------------------

    @property
    def tracker(self) -> Tracker:
        """The step tracker (end-to-end optimizer-step periods)."""
        return self._tracker

    @property
    def last_step_flops(self) -> Optional[Tuple[float, float]]:
        """(model, executed) FLOPs of the last closed optimizer step, or None."""
        flops = self._last_step_flops
        return None if flops is None else (flops.model_flops, flops.executed_flops)

    def metrics(self, prefix: str = "throughput") -> Dict[str, float]:
        """End-to-end figures of the last ``window`` optimizer steps
        (:meth:`mfu_tracker.Tracker.metrics`); never blocks. ``{}`` until a
        measured optimizer step has closed (after the ``warmup`` ones), as
        there.

        With ``distributed=True`` (or None under an initialized process group)
        it is a collective giving global figures: every rank must call it at
        the same steps. The default, False, keeps it local, so calling it on
        rank 0 alone is safe."""
        return self._tracker.metrics(prefix)

    def summary(self) -> Dict[str, Any]:
        """:meth:`mfu_tracker.Tracker.summary` of the optimizer steps."""
        return self._tracker.summary()

    def close(self) -> None:
        """Resolve every pending step and release the tracker's GPU events."""
        if self._phases is not None:
            self._phases.detach()
        self._tracker.close()
