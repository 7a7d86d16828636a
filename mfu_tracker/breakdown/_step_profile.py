"""The sampled profiled step: ``Tracker(profile_steps=...)``.

At chosen step boundaries the tracker runs ``torch.profiler`` (CPU + CUDA
activities, operand shapes recorded) and a FLOP counter over exactly one
step, reduces the trace in memory to a :class:`~._record.Breakdown`
(:mod:`._reduce`) and drops the trace; the breakdown goes to the log (a
``breakdown`` record), to the next ``metrics()`` (the ``kernel_*`` keys,
once) and to :attr:`Tracker.last_breakdown`.

Which steps (``profile_steps``, :func:`check_profile_steps`):

* ``None`` / ``False`` / ``0``: never (the default);
* an int N >= 1: the first step after the warm-up, then every N-th;
* ``True``: the same with N = :data:`DEFAULT_EVERY`;
* a collection of ints: exactly those global steps (a step is numbered as
  the log numbers it: the global step once it completed).

The rules:

* never more than one step at a time (a profile opens at one boundary and
  closes at the next);
* a profiler already running -- the user's own, or another tracker's -- is
  left alone: that step is not profiled and one warning says so (the FLOP
  counter's dispatch key and RecordFunction callbacks, and the
  communication observer's hooks, are not profilers: they never count);
* the profiler's start, and its stop, trace reduction and logging after the
  closing boundary, are the tracker's own time (left out of the steps like
  ``metrics()``'s); what the profiler adds *inside* the step is its cost,
  and stays in that step's period (benchmarks/README.md measures it);
* any failure is one warning and no breakdown; profiling then stops and
  the run goes on.

The raw trace is written only when asked (``profile_trace_dir``): one
Kineto JSON per profiled step, ``step<N>_rank<R>.json``.
"""
from __future__ import annotations

import os
import threading
import warnings
from typing import Any, Callable, Dict, FrozenSet, Optional

from ._record import Breakdown
from ._reduce import MARKER, reduce_events
from ._trace import kineto_events

__all__ = ["DEFAULT_EVERY", "ProfileSchedule", "StepProfiler", "check_profile_steps",
           "check_trace_dir"]

#: ``profile_steps=True``: one profiled step every this many steps.
DEFAULT_EVERY = 500

#: The tracker that is profiling now, if any (one profile per process).
_ACTIVE_LOCK = threading.Lock()
_ACTIVE: Dict[str, Any] = {"owner": None}

#: Profiler starts seen in this process (:func:`_watch_profiler_starts`).
_STARTS: Dict[str, Any] = {"count": 0, "watching": False}


class ProfileSchedule:
    """Which steps to profile: every ``every``-th from the first step after
    the warm-up, or exactly ``steps`` (global step numbers)."""

    __slots__ = ("every", "steps")

    def __init__(self, every: Optional[int] = None, steps: FrozenSet[int] = frozenset()) -> None:
        self.every = every
        self.steps = steps

    def due(self, step: int, first: int) -> bool:
        """Whether global step ``step`` is profiled (``first``: the first
        step after the warm-up)."""
        if self.every is None:
            return step in self.steps
        return step >= first and (step - first) % self.every == 0

    def __repr__(self) -> str:
        return (f"ProfileSchedule(every={self.every})" if self.every is not None
                else f"ProfileSchedule(steps={sorted(self.steps)})")


def check_profile_steps(value: Any, argument: str = "profile_steps") -> Optional[ProfileSchedule]:
    """``profile_steps`` as a schedule (None: off); TypeError / ValueError
    naming the argument and the value otherwise. A schedule this function
    made (a callback checked its argument when it was built) is returned as
    it is."""
    if isinstance(value, ProfileSchedule):
        return value
    if value is None or value is False:
        return None
    if value is True:
        return ProfileSchedule(every=DEFAULT_EVERY)
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"{argument}: {value} is negative; give N >= 1 (every N-th step), "
                             f"True (every {DEFAULT_EVERY}), or 0 / None (off)")
        return ProfileSchedule(every=value) if value else None
    if isinstance(value, (str, bytes, float)) or not hasattr(value, "__iter__"):
        raise TypeError(f"{argument}: expected None, a bool, an int or a collection of global "
                        f"step numbers, got {type(value).__name__} {value!r}")
    steps = list(value)
    for step in steps:
        if isinstance(step, bool) or not isinstance(step, int):
            raise TypeError(f"{argument}: step numbers must be ints, got "
                            f"{type(step).__name__} {step!r}")
        if step < 1:
            raise ValueError(f"{argument}: step {step} is not a global step number (>= 1)")
    return ProfileSchedule(steps=frozenset(steps)) if steps else None


def check_trace_dir(value: Any) -> Optional[str]:
    """``profile_trace_dir``: None, or a directory path (created when a
    trace is first written)."""
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"profile_trace_dir: expected a directory path, got "
                        f"{type(value).__name__} {value!r}")
    path = os.fspath(value)
    if os.path.exists(path) and not os.path.isdir(path):
        raise ValueError(f"profile_trace_dir: {path!r} exists and is not a directory")
    return str(path)


def _user_profiler_active(torch: Any) -> bool:
    """Whether a torch profiler is running in this process (the kineto or
    legacy profiler's state, not RecordFunction callbacks)."""
    import torch.autograd.profiler as autograd_profiler

    if getattr(autograd_profiler, "_is_profiler_enabled", False):
        return True
    try:
        return bool(torch._C._autograd._profiler_enabled())
    except Exception:  # noqa: BLE001 -- a torch without it: the flag above decides
        return False


class StepProfiler:
    """The profiled-step component of one tracker (module docstring).

    Args:
        schedule: which steps.
        kind: the tracker's clock ("cpu", "cuda" or "hip"); a GPU clock
            profiles the device's timeline.
        index: the device index (GPU clocks), for its kernels only.
        peak: the tracker's :class:`~mfu_tracker.peaks._resolve.Peak`.
        first_step: the first global step after the warm-up.
        start_step: the global step the run resumed from.
        trace_dir: keep each raw trace there (None: never written).
        sink: called with each breakdown (the tracker logs it); never raises.
        rank: this process's rank (the trace file's name).
        owner: the warning's subject ("Tracker").
    """

    def __init__(self, schedule: ProfileSchedule, *, kind: str, index: Optional[int], peak: Any,
                 first_step: int, start_step: int, trace_dir: Optional[str],
                 sink: Callable[[Breakdown], None], rank: int = 0, owner: str = "Tracker") -> None:
        self.schedule = schedule
        self.kind = kind
        self.index = index
        self.peak = peak
        self.first_step = first_step
        self.trace_dir = trace_dir
        self.sink = sink
        self.rank = rank
        self.owner = owner
        self.last: Optional[Breakdown] = None
        self._boundaries = 0
        self._start_step = start_step
        self._open: Optional[Dict[str, Any]] = None   # the profile in progress
        self._figures: Optional[Dict[str, Any]] = None
        self._warned: set = set()
        self.failed: Optional[str] = None
        # kept while the profiler lives (None: no counter can run, and the
        # breakdowns carry no FLOPs)
        from ..flops.counter import hold_counting_key   # lazy: the counter loads its extension

        self._key_holder = hold_counting_key()

    # ---- at each boundary ---------------------------------------------------------

    def boundary(self, tracker: Any) -> None:
        """After each step boundary: close the profile of the step that just
        ended, open one for the step now starting when it is due. Never raises."""
        self._boundaries += 1
        if self._open is not None:
            self._excluded(tracker, self._finish)
        if self.failed is None:
            step = self._start_step + self._boundaries   # the step now opening, once completed
            if self.schedule.due(step, self.first_step):
                self._excluded(tracker, lambda: self._begin(step))

    def _excluded(self, tracker: Any, work: Callable[[], None]) -> None:
        tracker._exclude_begin()
        try:
            work()
        except Exception as error:  # noqa: BLE001 -- a failure never reaches the loop
            self._fail(error)
        finally:
            tracker._exclude_end()

    def _begin(self, step: int) -> None:
        import torch

        with _ACTIVE_LOCK:
            if _ACTIVE["owner"] is not None or _user_profiler_active(torch):
                other = "another tracker's" if _ACTIVE["owner"] is not None else "a"
                self._warn_once("aside", f"{other} torch profiler is running at step {step}: the "
                                "kernel breakdown steps aside for the steps it is running "
                                "(not warned again)")
                return
            _ACTIVE["owner"] = self
        try:
            self._open = _start(torch, step, self.kind, self._key_holder is not None)
        except BaseException:
            _release(self)
            raise

    def _finish(self) -> None:
        opened, self._open = self._open, None
        try:
            results, flops_by_op = _stop(opened)
        finally:
            _release(self)
        step = opened["step"]
        if results is None:              # a profiler started inside the step took it over
            self._warn_once("aside", f"a torch profiler is running since step {step}: the "
                            "kernel breakdown steps aside for the steps it is running "
                            "(not warned again)")
            return
        trace = self._keep_trace(opened, step)
        breakdown = reduce_events(
            kineto_events(results, device=self.index if self.kind != "cpu" else None),
            timeline="host" if self.kind == "cpu" else "device", flops_by_op=flops_by_op,
            step=step, peak_flops_per_sec=self.peak.flops_per_sec,
            peak_bytes_per_sec=self.peak.bytes_per_sec, dtype=self.peak.dtype)
        breakdown.trace = trace
        del opened, results                       # the trace's memory goes with them
        self.last = breakdown
        self._figures = breakdown.metric_figures()
        self.sink(breakdown)

    def _keep_trace(self, opened: Dict[str, Any], step: int) -> Optional[str]:
        if self.trace_dir is None:
            return None
        os.makedirs(self.trace_dir, exist_ok=True)
        path = os.path.join(self.trace_dir, f"step{step}_rank{self.rank}.json")
        opened["profiler"].export_chrome_trace(path)
        return path

    # ---- what the tracker reads -------------------------------------------------------

    def take_figures(self) -> Dict[str, Any]:
        """The last breakdown's metric figures, once ({} until a new one)."""
        figures, self._figures = self._figures, None
        return figures or {}

    def close(self) -> None:
        """A profile still open (training ended inside it) is dropped."""
        opened, self._open = self._open, None
        if opened is not None:
            try:
                _stop(opened)
            except Exception:  # noqa: BLE001 -- closing: nothing to report
                pass
            finally:
                _release(self)

    # ---- failures -------------------------------------------------------------------

    def _fail(self, error: BaseException) -> None:
        opened, self._open = self._open, None
        if opened is not None:
            try:
                _stop(opened)
            except Exception:  # noqa: BLE001 -- already failing
                pass
        _release(self)
        self.failed = f"{type(error).__name__}: {error}"
        warnings.warn(f"mfu_tracker: {self.owner}: the profiled step failed ({self.failed}); "
                      f"no kernel breakdown, and no step is profiled again (the run goes on)",
                      RuntimeWarning, stacklevel=4)

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            warnings.warn(f"mfu_tracker: {self.owner}: {message}", RuntimeWarning, stacklevel=5)


def _watch_profiler_starts(torch: Any) -> None:
    """Count every profiler start in this process, so a profiler started
    inside a profiled step is seen. Kineto holds one session: a profiler
    started while ours runs takes the session over, and stopping ours then
    would end the user's (its trace lost). ``torch.autograd.profiler`` calls
    its module-level ``_run_on_profiler_start`` at every start (kineto, ITT,
    NVTX); the count wraps it once. A torch without it: no count, and a
    takeover shows as a step with no host op (one warning)."""
    import torch.autograd.profiler as autograd_profiler

    original = getattr(autograd_profiler, "_run_on_profiler_start", None)
    if _STARTS["watching"] or original is None:
        return

    def counted_start(*args: Any, **kwargs: Any) -> Any:
        _STARTS["count"] += 1
        return original(*args, **kwargs)

    autograd_profiler._run_on_profiler_start = counted_start
    _STARTS["watching"] = True


def _start(torch: Any, step: int, kind: str, counting: bool) -> Dict[str, Any]:
    """Open a profile: the counter, the profiler, then the marker span."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU]
    if kind != "cpu":
        activities.append(ProfilerActivity.CUDA)   # HIP on ROCm builds
    opened: Dict[str, Any] = {"step": step, "counter": None, "profiler": None, "marker": None}
    if counting:
        from ..flops.counter import FlopCounter

        opened["counter"] = FlopCounter(modules=False)
        opened["counter"].__enter__()
    try:
        _watch_profiler_starts(torch)
        opened["profiler"] = profile(activities=activities, record_shapes=True)
        opened["profiler"].start()
        opened["starts"] = _STARTS["count"]
        opened["marker"] = torch.autograd.profiler.record_function(MARKER)
        opened["marker"].__enter__()
    except BaseException:
        _stop(opened)
        raise
    return opened


def _stop(opened: Dict[str, Any]) -> Any:
    """Close a profile (marker, profiler, counter, each only if opened):
    (kineto results, the counter's by_op or None). A profiler started since
    ours (:func:`_watch_profiler_starts`) owns the session now: ours is not
    stopped (that would end the other's) and the results are None."""
    marker, profiler, counter = opened["marker"], opened["profiler"], opened["counter"]
    flops_by_op = None
    taken_over = opened.get("starts", _STARTS["count"]) != _STARTS["count"]
    try:
        if marker is not None:
            marker.__exit__(None, None, None)
        if profiler is not None and not taken_over:
            profiler.stop()
    finally:
        if counter is not None:
            counter.stop(warn=False)
            flops_by_op = counter.by_op
    results = None if profiler is None or taken_over else profiler.profiler.kineto_results
    return results, flops_by_op


def _release(owner: Any) -> None:
    with _ACTIVE_LOCK:
        if _ACTIVE["owner"] is owner:
            _ACTIVE["owner"] = None

