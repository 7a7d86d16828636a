"""The step tracker: end-to-end MFU of a training run, one call per step.

``Tracker.step()`` marks a step boundary. A step's *period* is the time from
one boundary to the next, so it covers everything the loop does -- data
loading, forward, backward, optimizer, logging: the utilization the run
actually gets. (``track()`` times a block instead: its ``elapsed_sec`` is that
block's compute window.) On a CUDA / ROCm device the boundaries are GPU events
on the device's stream, resolved without ever synchronizing; elsewhere the
monotonic CPU clock. The hot path and the windowed statistics are in C
(``_C.StepTracker``, ``csrc/core/stats.h``).
"""
from __future__ import annotations

import math
from typing import Any, Dict, Optional, Union

from . import _C
from .gpu import GPUSpec
from .tracker import (
    Peak,
    _check_clock,
    _current_stream_getter,
    _mark_timer,
    _resolve_clock,
    _stream_handle,
    resolve_peak,
)

__all__ = ["Tracker"]


def _count(value: Any, argument: str) -> Optional[float]:
    """A FLOP / byte count per step: None, or a finite number >= 0."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{argument} must be a number or None, not {type(value).__name__}")
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{argument} must be a finite number >= 0, got {value!r}")
    return float(value)


def _int(value: Any, argument: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{argument} must be an int, not {type(value).__name__}")
    if not low <= value <= high:
        raise ValueError(f"{argument} must be between {low} and {high}, got {value!r}")
    return value


class Tracker(_C.StepTracker):
    """End-to-end MFU / HFU / MBU, tokens/s and step time of a training loop::

        tracker = Tracker(flops_per_step, dtype="bf16", param_bytes=param_bytes(model))
        for batch in loader:
            loss = model(**batch).loss
            loss.backward()
            opt.step(); opt.zero_grad()
            tracker.step(num_tokens=batch["input_ids"].numel())
            log(tracker.metrics())          # e.g. every step: never blocks

    The first ``step()`` starts the clock; each later call closes one step
    (what the call's arguments describe) whose period runs from the previous
    boundary. Figures cover the last ``window`` resolved steps after the first
    ``warmup`` steps, as *sums over the window*: tokens/s = total tokens /
    total time, MFU = total model FLOPs / total time / peak -- not a mean of
    per-step ratios. With a GPU clock a step resolves once the GPU has passed
    its closing boundary, so read every step the figures lag by about one step;
    nothing ever waits except :meth:`flush` / :meth:`close`.

    ``metrics(prefix="throughput")`` returns (figures that are unavailable are
    left out, never None or NaN; ``{}`` before the first resolved step):

    ===============================  =====================================================
    key                              meaning
    ===============================  =====================================================
    ``{prefix}/mfu``                 model FLOPs / window time / peak (unclamped)
    ``{prefix}/hfu``                 executed FLOPs / window time / peak
    ``{prefix}/mbu``                 param_bytes per step / step time / peak bandwidth
    ``{prefix}/tokens_per_sec``      tokens / window time (needs ``num_tokens``)
    ``{prefix}/achieved_tflops``     model TFLOP/s over all ``num_gpus`` devices
    ``{prefix}/step_time_s``         mean step period, seconds (end to end)
    ``{prefix}/step_time_min_s``     shortest step period in the window
    ``{prefix}/step_time_max_s``     longest step period in the window
    ``{prefix}/peak_tflops``         the MFU denominator: peak TFLOP/s x ``num_gpus``
    ===============================  =====================================================

    Args:
        flops_per_step: model FLOPs of one step on this rank (the MFU
            numerator), or None to give them per step (``step(model_flops=)``).
        dtype: compute dtype selecting the peak ("bf16", torch.bfloat16, ...).
        window: steps the figures cover (1 .. 2**24).
        warmup: timed steps ignored at the start (compilation, warm-up).
        param_bytes: bytes of weights read per step (the MBU numerator).
        executed_flops_per_step: executed FLOPs per step for HFU (recompute
            included), or None.
        num_gpus: devices the FLOPs per step ran on; the peak is multiplied by it.
        device: the device whose peak and clock to use (default: torch's
            current CUDA device, else the CPU).
        spec: a :class:`GPUSpec` to use instead of looking the device up.
        peak_tflops: per-device peak in TFLOP/s, overriding the table.
        clock: "auto" (GPU events on a CUDA / ROCm device, else the CPU clock),
            "cuda", "hip" (pin the GPU clock) or "cpu".
        stream: the stream the boundary events go on: a ``torch.cuda.Stream``,
            a raw handle (int) or None (torch's current stream of the device
            when the tracker is created; the null stream without torch CUDA).

    Bad arguments raise ``TypeError`` / ``ValueError`` naming them. After
    construction nothing raises into the loop: a GPU driver failure gives one
    warning and the CPU clock (steps in flight are dropped); a bad per-step
    value gives one warning and leaves the figures that need it out.
    """

    __slots__ = ("_peak", "_dtype")

    def __init__(
        self,
        flops_per_step: Optional[float] = None,
        *,
        dtype: Any = "bf16",
        window: int = 100,
        warmup: int = 1,
        param_bytes: Optional[float] = None,
        executed_flops_per_step: Optional[float] = None,
        num_gpus: int = 1,
        device: Any = None,
        spec: Optional[GPUSpec] = None,
        peak_tflops: Optional[float] = None,
        clock: str = "auto",
        stream: Any = None,
    ) -> None:
        model_flops = _count(flops_per_step, "flops_per_step")
        executed_flops = _count(executed_flops_per_step, "executed_flops_per_step")
        bytes_per_step = _count(param_bytes, "param_bytes")
        window = _int(window, "window", 1, 1 << 24)
        warmup = _int(warmup, "warmup", 0, 10**12)
        num_gpus = _int(num_gpus, "num_gpus", 1, 10**9)
        _check_clock(clock)
        handle = None if stream is None else _stream_handle(stream)
        peak = resolve_peak(dtype, device=device, spec=spec, peak_tflops=peak_tflops)

        kind, index, torch = _resolve_clock(clock, device)
        if kind != "cpu":
            # The shared timer's creation makes the device's context current
            # and tells, once per process and device, whether the GPU clock works.
            if _mark_timer(kind, index, torch, "Tracker") is None:
                kind = "cpu"  # warned already
            elif handle is None:
                getter = _current_stream_getter(torch, index)
                handle = getter(index) if getter is not None else 0
        super().__init__(
            clock=kind,
            stream=handle or 0,
            model_flops=model_flops,
            executed_flops=executed_flops,
            param_bytes=bytes_per_step,
            peak_flops_per_sec=peak.flops_per_sec,
            peak_bytes_per_sec=peak.bytes_per_sec,
            num_gpus=num_gpus,
            window=window,
            warmup=warmup,
        )
        self._peak = peak
        self._dtype = peak.dtype

    @property
    def peak(self) -> Peak:
        """The per-device peak the figures are measured against."""
        return self._peak

    def summary(self) -> Dict[str, Union[float, int, str, None]]:
        """Every windowed figure, None where unavailable.

        Keys: ``steps`` (in the window), ``steps_seen`` (resolved, warm-up
        included), ``steps_skipped`` (warm-up), ``steps_pending`` (not resolved
        yet), ``steps_dropped`` (lost to a failure), ``boundaries`` (step()
        calls), ``window_s``, ``step_time_s`` / ``_min_s`` / ``_max_s`` (step
        periods, end to end), ``tokens_per_sec``, ``achieved_flops_per_sec``,
        ``achieved_tflops``, ``mfu``, ``hfu``, ``mbu``, ``peak_flops_per_sec``
        and ``peak_tflops`` (the MFU denominator, x num_gpus), ``peak_source``
        ("datasheet", "measured", "user" or "unknown"), ``dtype``, ``clock``.
        """
        out: Dict[str, Union[float, int, str, None]] = super().summary()
        out["peak_source"] = self._peak.source
        out["dtype"] = self._dtype
        return out

    def __enter__(self) -> "Tracker":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"Tracker(dtype={self._dtype!r}, clock={self.clock!r}, window={self.window}, "
                f"warmup={self.warmup}, peak_source={self._peak.source!r})")
