"""A tracker's run in the job: its run record, ledger intervals, run end and
Prometheus values (docs/goodput.md).

A :class:`RunBook` belongs to one :class:`~mfu_tracker.Tracker`. It writes
the run record when the tracker is created, turns the step engine's running
totals (``_C.StepTracker.ledger()``, ``csrc/core/steps/steps.h``) into one ledger
interval per logged ``metrics()`` -- the difference from the previous one --
writes the run-end record when the tracker closes (or the interpreter exits)
and hands each metrics dict to the Prometheus endpoint. The record format is
:mod:`mfu_tracker.job._records`'s, the arithmetic over them
:mod:`mfu_tracker.job._ledger`'s.

A step's model FLOPs reach the ledger one way: from its record in the step
engine, whether given at its boundary or booked onto it later
(``Tracker.book()``: the integrations resolve a step's FLOPs at logging
time). Integrations count here the steps whose compile phase holds a whole
compiled call (:meth:`RunBook.compile_call`).
"""
from __future__ import annotations

import atexit
import os
import threading
import weakref
from typing import Any, Dict, List, Mapping, Optional

from .._version import __version__
from ._log import MetricsLog, rank_world
from ._prometheus import Endpoint
from ._records import (
    PEAK_CHECK,
    RUN,
    RUN_END,
    host_name,
    job_name,
    new_run_id,
    peak_disagrees,
    process_start_time,
)

#: Runs whose trackers are open: closed at the interpreter's exit, so a clean
#: exit writes the run-end record even without close().
_OPEN: "weakref.WeakSet[Any]" = weakref.WeakSet()
_OPEN_LOCK = threading.Lock()


def _close_open_trackers() -> None:
    with _OPEN_LOCK:
        trackers = list(_OPEN)
    for tracker in trackers:
        try:
            tracker.close()
        except Exception:  # noqa: BLE001 -- the interpreter is exiting
            pass


atexit.register(_close_open_trackers)


class RunBook:
    """The run's running state for the ledger (module docstring)."""

    __slots__ = ("run_id", "job", "start_step", "timed_from", "rank", "log", "endpoint", "ranks",
                 "_mark", "_calls", "_calls_mark", "_untimed", "_ended", "_peak_tflops")

    def __init__(self, *, start_step: int, log: Optional[MetricsLog],
                 endpoint: Optional[Endpoint], job: Optional[str] = None) -> None:
        self.run_id = new_run_id()
        self.job = job_name(self.run_id, job)
        self.start_step = start_step
        self.timed_from = start_step    # the global step of the step engine's first step
        self.rank = rank_world()[0]
        self.log = log
        self.endpoint = endpoint
        self.ranks: Any = None      # the last aggregation's rank rows (served per rank)
        self._mark: Optional[Dict[str, Any]] = None   # the engine's totals at the last record
        self._calls = self._calls_mark = 0
        self._untimed: List[Optional[float]] = []   # untimed steps not yet logged: their FLOPs
        self._ended = False
        self._peak_tflops: Optional[float] = None

    def start(self, tracker: Any, *, peak: Any, num_gpus: int,
              model: Optional[Mapping[str, Any]] = None) -> None:
        """The run begins: the engine's zero totals, the run record (rank 0);
        ``model``: what it says about the model (:mod:`._model_info`)."""
        self._mark = tracker.ledger()
        self._peak_tflops = None if peak.flops_per_sec is None else peak.flops_per_sec * 1e-12
        if self.log is not None:
            world = rank_world()[1]
            extra = {} if model is None else {"model": dict(model)}
            self.log.write_record(RUN, {
                "run_id": self.run_id, "job": self.job, "host": host_name(), "pid": os.getpid(),
                "ranks": world, "devices": world * num_gpus,
                "process_start": process_start_time(), "start_step": self.start_step,
                "peak_tflops": self._peak_tflops, "peak_source": peak.source,
                "dtype": peak.dtype, "device": None if peak.spec is None else peak.spec.name,
                "version": __version__, **extra,
            })
        if self.log is not None or self.endpoint is not None:
            with _OPEN_LOCK:
                _OPEN.add(tracker)

    # ---- what integrations tell ---------------------------------------------------

    def compile_call(self) -> None:
        """A step whose compile phase holds a whole (first) compiled call."""
        self._calls += 1

    def untimed_step(self, model_flops: Optional[float]) -> None:
        """A step whose work ran before the clock started (the optimizer
        wrapper's first ``step()`` came after its forward and backward, with
        no hook to start the clock at the forward): numbered -- the engine's
        steps are the global steps after it -- but not timed; its model FLOPs
        (None: unknown) go to the next interval."""
        self.timed_from += 1
        self._untimed.append(model_flops)

    # ---- intervals ----------------------------------------------------------------

    def interval(self, tracker: Any) -> Dict[str, Any]:
        """The ledger interval since the last record (this rank's FLOPs), with
        the engine's totals now under ``"_now"`` for :meth:`commit`."""
        now, mark = tracker.ledger(), self._mark or {}
        steps = now["steps"] - mark.get("steps", 0)
        dropped = now["dropped"] - mark.get("dropped", 0)
        unknown = now["unknown_flops_steps"] - mark.get("unknown_flops_steps", 0)
        flops_steps = steps - dropped - unknown
        before = mark.get("phase_s", {})
        phase_s = {name: seconds - before.get(name, 0.0)
                   for name, seconds in now["phase_s"].items() if seconds != before.get(name, 0.0)}
        flops = now["model_flops"] - mark.get("model_flops", 0.0)
        untimed = self._untimed
        known = [f for f in untimed if f is not None]
        return {
            # the untimed steps first: the interval's range is contiguous with the last one's
            "from_step": self.timed_from + mark.get("steps", 0) - len(untimed),
            "to_step": self.timed_from + now["steps"],
            "step_s": now["step_s"] - mark.get("step_s", 0.0), "phase_s": phase_s,
            "own_s": now["own_s"] - mark.get("own_s", 0.0), "dropped": dropped,
            "model_flops": flops if flops_steps > 0 or steps == dropped else None,
            "flops_steps": flops_steps, "flops_ranks": 1,
            "compile_calls": self._calls - self._calls_mark,
            "first_boundary": now["first_boundary_unix_s"],
            "first_step_s": now.get("first_step_s"), "untimed_steps": len(untimed),
            "untimed_flops": float(sum(known)) if len(known) == len(untimed) else None,
            "_now": now, "_untimed": len(untimed),
        }

    def commit(self, interval: Mapping[str, Any]) -> None:
        """The interval was logged: the next one starts where it ended."""
        self._mark = interval["_now"]
        self._calls_mark = self._calls
        del self._untimed[:interval["_untimed"]]

    @staticmethod
    def record(interval: Mapping[str, Any]) -> Dict[str, Any]:
        """The interval as the log holds it."""
        return {key: value for key, value in interval.items() if not key.startswith("_")}

    def logged(self, out: Mapping[str, float], interval: Optional[Dict[str, Any]], *,
               prefix: str, step: int) -> None:
        """A non-empty ``metrics()`` dict: its line (rank 0), its interval
        committed (every rank; None: neither logged nor aggregated), its
        values to the endpoint."""
        if interval is not None:
            self.commit(interval)
            if self.log is not None:
                self.log.write(out, step=step, ledger=self.record(interval))
        if self.endpoint is not None:
            self.endpoint.update(out, prefix=prefix, step=step, job=self.job, rank=self.rank,
                                 ranks=self.ranks)

    # ---- the end ------------------------------------------------------------------

    def end(self, tracker: Any, step: int) -> None:
        """The run ends (the tracker closed, after its flush): the run-end
        record with the last interval (this rank's FLOPs: no collective here)."""
        if self._ended:
            return
        self._ended = True
        with _OPEN_LOCK:
            _OPEN.discard(tracker)
        if self.log is None:
            return
        interval = self.interval(tracker)
        self.commit(interval)
        self.log.write_record(RUN_END, {"step": step, "ledger": self.record(interval)})
        self.log.close()

    def peak_check(self, remeasured_flops_per_sec: float) -> bool:
        """Log a second measurement of the peak; True when the two disagree
        (:func:`~mfu_tracker.job._records.peak_disagrees`)."""
        again = float(remeasured_flops_per_sec) * 1e-12
        busy = peak_disagrees(self._peak_tflops, again)
        if self.log is not None:
            self.log.write_record(PEAK_CHECK, {"peak_tflops": self._peak_tflops,
                                               "remeasured_tflops": again, "busy": busy})
        return busy
