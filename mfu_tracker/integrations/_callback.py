"""What every framework callback shares: configuration, the step cycle, the window.

``MFUCallback`` for ``transformers.Trainer`` (:mod:`.hf_trainer`) and for
``lightning.Trainer`` (:mod:`.lightning`) are adapters: each maps its
framework's hooks onto the calls below, in this order per optimizer step::

    _start(model, dtype=..., window=..., device=..., start_step=N)  # once, training begins
    _open_step()        # the step's first micro-batch begins (starts the clock once)
    _stop_counting()    # before the optimizer runs: its ops are not model FLOPs
    _mark(phase)        # the waterfall's phase now starting ("optimizer", ...)
    _close_step()       # the step ended: one step-tracker boundary
    _window_metrics(step)   # at a logging step -> the metric dict (or None)
    _stop(step)         # training ended (a last log of the steps since the previous one);
    _stop()             # ... or failed

The FLOPs of a step are the one step-FLOPs policy's
(:mod:`mfu_tracker.integrations._step_flops`), the dict is the one formatter's
(:mod:`mfu_tracker.timing._metrics`), time is the step tracker's
(:class:`~mfu_tracker.Tracker`), the phases are one ``switch_phase()``
mark per event (:mod:`mfu_tracker.integrations._auto_phases`: data from a step boundary
to the first micro-batch's work, the optimizer, no phase at a boundary; the
badput phases checkpoint and eval from the adapters' save and evaluate hooks,
compile for the first compiled step), the JSONL log is the tracker's
(``log_path=``: its run record with ``start_step``, the trainer's global
step, its ledger intervals, its run end; :mod:`mfu_tracker.job`). The steps'
work, which the policy resolves at logging time (their tokens are still on
the device at their boundary), is booked then onto each step's record in the
tracker (:meth:`CallbackCore._book_steps`): the tracker's window and ledger
read it there, and the callback keeps no window of its own. Nothing here
imports a framework.
"""
from __future__ import annotations

import functools
import warnings
from collections import deque
from typing import Any, Callable, Deque, Dict, Optional, TypeVar, Union

from .._dtypes import normalize_dtype
from .._validate import (
    NUM_GPUS_MAX,
    WARMUP_MAX,
    WINDOW_MAX,
    check_causal_attention,
    check_clock,
    check_device,
    check_flag,
    check_hfu_factor,
    check_int,
    check_log_path,
    check_optional_number,
    check_peak_tflops,
    check_prefix,
    check_instance,
    check_sample_batch,
)
from .._native import _C
from ..breakdown._step_profile import check_profile_steps, check_trace_dir
from ..device._hardware import check_memory
from ..flops.counter._compiled import apply_deferred
from ..peaks._resolve import dtype_peaks
from ..peaks._table import GPUSpec, check_spec
from ._auto_phases import AutoPhases
from ._step_flops import StepCounter, StepFlops, StepRecord
from ._step_record import ClosedStep

F = TypeVar("F", bound=Callable[..., Any])


def guarded(hook: F) -> F:
    """A framework hook that never raises: one warning per hook, figures left out."""

    @functools.wraps(hook)
    def wrapper(self: "CallbackCore", *args: Any, **kwargs: Any) -> Any:
        try:
            return hook(self, *args, **kwargs)
        except Exception as error:  # noqa: BLE001 -- never raise into training
            self._warn_once(f"hook:{hook.__name__}",
                            f"MFUCallback.{hook.__name__} failed ({error!r}); its figures are left out")
            return None

    return wrapper  # type: ignore[return-value]


class CallbackCore:
    """The shared state and steps of a framework callback (module docstring).

    Attributes:
        history: one dict per emitted log (``step``, ``steps``, ``window_s``,
            ``model_flops``, ``executed_flops``, ``tokens``, ``step_flops`` per
            step, ``peak_flops_per_sec``, ``dtype``, ``metrics``), the last 1000.
        resolved_dtype: the peak's dtype, once training began.
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
        telemetry: Union[bool, str, None] = None,
        memory: Union[bool, str, None] = None,
        profile_steps: Any = None,
        profile_trace_dir: Any = None,
    ) -> None:
        """The constructor every callback shares (the peer's, plus keyword-only
        options); arguments are documented on the callbacks. Errors name them."""
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
        self.phases = check_flag(phases, "phases")
        self.log_path = check_log_path(log_path)
        if telemetry is not None:
            check_instance(telemetry, "telemetry", (bool, str), "None, a bool or an NVML device id (str)")
        check_memory(memory)
        self.telemetry, self.memory = telemetry, memory
        # The kernel breakdown: checked now, and the tracker built at the
        # start of training takes the checked schedule as it is.
        self.profile_steps = check_profile_steps(profile_steps)
        self.profile_trace_dir = check_trace_dir(profile_trace_dir)
        self.history: Deque[Dict[str, Any]] = deque(maxlen=1000)
        self.resolved_dtype: Optional[str] = None
        self._warned: set = set()
        self._reset()

    def _reset(self) -> None:
        self._tracker: Any = None
        self._phases: Optional[AutoPhases] = None
        self._badput: Optional[str] = None    # the badput phase an adapter marked, running now
        self._policy = StepFlops(count_every=self.count_every, causal_attention=self.causal_attention,
                                 hfu_factor=self._hfu_factor, warn_once=self._warn_once,
                                 sample_batch=self.sample_batch)
        self._param_bytes: Optional[float] = None
        # (global step, record) of the steps closed since the last booking
        self._unbooked: Deque[ClosedStep] = deque()
        self._step: Optional[StepRecord] = None
        self._counter: Optional[StepCounter] = None
        self._steps_done = 0
        self._steps_logged = 0
        self._started = False

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            warnings.warn(f"mfu_tracker: {message}", RuntimeWarning, stacklevel=3)

    # ---- the step cycle -----------------------------------------------------------

    def _is_model(self, model: Any, hook: str) -> bool:
        """Whether ``model`` (given to ``hook``) is a module to measure; one
        warning when not."""
        import torch

        if isinstance(model, torch.nn.Module):
            return True
        self._warn_once("model", f"no model in {hook}: no MFU")
        return False

    def _start(self, model: Any, *, dtype: str, window: int, device: Any,
               recompute: str = "none", start_step: int = 0, **tracker_options: Any) -> None:
        """Training begins: param bytes, the step tracker (its log, the run
        resuming at global step ``start_step``; ``tracker_options``: more of
        ``Tracker``'s keywords, e.g. ``flops_per_step``, ``job``), the FLOP policy."""
        from ..flops._analytic import param_bytes
        from ..tracker._tracker import Tracker

        self.resolved_dtype = dtype
        if next(model.parameters(), None) is None:
            self._warn_once("params", "the model has no parameters: MBU is left out")
        else:
            self._param_bytes = float(param_bytes(model))
        # the tracker holds a step's record this long after it left the window
        self._unbooked = deque(maxlen=window + _C.LIMIT_STEPS_KEPT)
        self._tracker = Tracker(dtype=dtype, window=window, warmup=self.warmup,
                                param_bytes=self._param_bytes, num_gpus=self.num_gpus,
                                device=device, spec=self.spec, peak_tflops=self.peak_tflops,
                                clock=self.clock, log_path=self.log_path,
                                start_step=max(0, int(start_step)), telemetry=self.telemetry,
                                memory=self.memory, profile_steps=self.profile_steps,
                                profile_trace_dir=self.profile_trace_dir, **tracker_options)
        if self.phases:
            self._phases = AutoPhases(self._tracker)
            self._phases.compiled(model)
        self._policy.attach(model, analytic=True, recompute=recompute)
        self._policy.prepare()

    def _mark(self, phase: Optional[str]) -> None:
        """The waterfall's phase ``phase`` starts now (None: no phase runs),
        when phases are on: one mark on the tracker's clock, never a sync."""
        auto = self._phases
        if auto is None:
            return
        self._badput = None
        if phase is None:
            auto.end()
        else:
            auto.switch(phase)

    def _mark_badput(self, phase: str) -> None:
        """A badput phase (checkpoint, eval) starts now, unless it runs already."""
        if self._phases is not None and self._badput != phase and self._tracker is not None:
            self._mark(phase)
            self._badput = phase

    def _end_badput(self, phase: Optional[str] = None) -> None:
        """The running badput phase (or only ``phase``) ended: back to data, the
        next step's input (until the next training forward or boundary)."""
        if self._badput is not None and phase in (None, self._badput):
            self._mark("data")

    def _open_step(self) -> None:
        """An optimizer step's first micro-batch begins (the first starts the clock)."""
        apply_deferred()  # the hooks run eagerly under a torch.compile started since
        if not self._started:
            self._started = True
            self._mark(None)            # nothing marked before the clock counts
            self._tracker.step()
            self._mark("data")
        self._step = StepRecord()
        self._counter = self._policy.step_counter()
        if self._counter is not None:
            self._counter.start()

    def _stop_counting(self) -> None:
        if self._counter is not None:
            self._counter.stop()

    def _close_step(self) -> None:
        """The open step ended: its FLOPs are settled, one tracker boundary."""
        step, self._step = self._step, None
        counter, self._counter = self._counter, None
        try:
            self._policy.close(step, counter)   # stops a counter still running (custom loops)
        finally:
            self._mark(None)
            self._tracker.step()
            self._mark("data")              # the next step's input
            self._unbooked.append(ClosedStep(self._tracker.global_step, step))  # type: ignore[arg-type]
            self._steps_done += 1

    def _stop(self, step: Optional[int] = None) -> None:
        """Training ended (or failed): no counter left active, every step
        resolved. With ``step`` (the global step at a normal end), the steps
        since the last log are logged first -- on every rank, a collective
        when distributed -- so the job ledger has their FLOPs."""
        if step is not None and self._tracker is not None and not self._tracker.closed \
                and self._steps_done != self._steps_logged:   # the same on every rank
            try:
                self._mark(None)
                self._tracker.flush()
                self._window_metrics(step)
            except Exception as error:  # noqa: BLE001 -- the log's failure, warned once
                self._warn_once("hook:on_log", f"MFUCallback's last log failed ({error!r}); "
                                "its figures are left out")
        counter, self._counter = self._counter, None
        self._step = None
        if counter is not None:
            counter.stop()
        auto, self._phases = self._phases, None
        if auto is not None:
            auto.detach()
        if self._tracker is not None:
            self._tracker.close()

    # ---- figures -----------------------------------------------------------------

    def _window_metrics(self, step: int) -> Optional[Dict[str, float]]:
        """The metric dict of a logging step (``step``: the framework's global
        step), recorded in ``history``; None when there is nothing new. When
        distributed, a collective: every rank calls it at every logging step."""
        tracker = self._tracker
        new_steps = self._steps_done != self._steps_logged
        self._steps_logged = self._steps_done
        self._book_steps()
        if not new_steps:
            if tracker.distributed:
                tracker.metrics(self.metric_prefix)  # this rank's part of the others' collective
            return None
        out = tracker.metrics(self.metric_prefix)
        if not out:
            return None
        self.history.append(self._history_entry(step, out))
        return out

    def _history_entry(self, step: int, out: Dict[str, float]) -> Dict[str, Any]:
        """``history``'s entry of a log: the window's steps as the tracker
        holds them, their sums (None where a step's is unknown)."""
        steps = self._tracker.window_steps()
        peak = self._tracker.peak

        def total(field: str) -> Optional[float]:
            values = [s[field] for s in steps]
            return None if any(v is None for v in values) else sum(values)

        return {
            "step": step, "steps": len(steps), "window_s": total("period_s"),
            "model_flops": total("model_flops"), "executed_flops": total("executed_flops"),
            "tokens": total("num_tokens"), "step_flops": [s["model_flops"] for s in steps],
            "peak_flops_per_sec": peak.flops_per_sec, "dtype": peak.dtype, "metrics": out,
        }

    def _book_steps(self) -> None:
        """Book the work of every step closed since the last booking onto its
        record in the tracker (the policy resolves it only now)."""
        steps, self._unbooked = list(self._unbooked), deque(maxlen=self._unbooked.maxlen)
        self._policy.book(self._tracker, steps, dtype_peaks(self._tracker.peak))
