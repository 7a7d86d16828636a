"""Every collective the process issues, observed with no attach call.

A ``Tracker`` created under an initialized ``torch.distributed`` process
group (and ``comm`` not False) subscribes to the process's communication:

* **Launches** are seen by the C++ observer (``csrc/torch/comm.cpp``), a
  dispatch key of its own with a kernel for each c10d collective -- what
  ``ProcessGroup`` dispatches for DDP's reducer, FSDP1 and FSDP2, DTensor's
  functional collectives (TP / SP / CP), all-to-all, broadcast and p2p --
  and a fallthrough for every other op. Each launch records its kind,
  payload bytes, bus bytes and the group's link peak in the tracker's step
  engine; the Work's future marks its completion (the collective's
  duration: bus bandwidth, overlap).
* **Waits** are exposed communication, each marked as its kind's phase
  (``csrc/core/base/phases.h``), so it is taken out of whatever phase it
  interrupts (backward, forward): ``Work.wait`` (replaced while observing
  by an observed method, ``csrc/torch/comm_wait.cpp``), the
  functional collectives' ``wait_tensor`` and the end of a backward pass
  that launched collectives (where DDP's reducer waits for its buckets) in
  C++. On a GPU the marks are events on the compute stream: the time the
  stream waited; on the CPU clock, host time (the launch's own time
  included).
* **Pipelines**: inside a ``torch.distributed.pipelining`` schedule's
  ``step()``, a wait for a p2p transfer is the *pipeline bubble* -- a stage
  waiting for its neighbours -- and only that (``mfu_lost/pipeline_bubble``,
  not also communication).

The observer's dispatch key is borrowed from torch's tests
(docs/dispatch_keys.md): a key the loader refused (the running torch lacks
it, another library registered on it first) or on which another library
registered a kernel over one of ours (checked at each tracker's start) is
not used: collectives are then seen through a TorchDispatchMode
(:mod:`._comm_mode`), with one warning. The key leaves a thread's dispatch
when the last observing tracker closes (or at that thread's next collective
once none observes).

One observer per tracker: ``Tracker.attach_ddp`` then registers the
communication hook it is given without marking anything, so no collective
is counted twice. ``Tracker(comm=False)`` turns all of it off (the DDP hook
then marks exposed communication as before).

Cost: no synchronize, no collective of its own (the links' hosts are
gathered once at construction, :mod:`._links`); per collective a kernel
call and a few marks (``benchmarks/comm_overhead.py``).

Not seen: collectives that bypass ``ProcessGroup`` (NCCL called from custom
kernels), and waits a backend makes inside its own C++ code outside a
backward pass (DDP's one-time bucket rebuild at its second step).
"""
from __future__ import annotations

import contextlib
import sys
import threading
import warnings
import weakref
from typing import Any, Dict, Iterator, Optional, Set

from .._native import _C
from .._native._observer import key_problem
from ._comm_mode import CommMode
from ._links import GroupLinks, process_groups

__all__ = ["CommObservation", "observe", "unobserved"]

_SCHEDULES = "torch.distributed.pipelining.schedules"
_BUBBLE = _C.phase_names().index("pipeline_bubble")
_OTHER = _C.comm_kind_phase("other")
#: Work op types whose waits inside a schedule are the bubble.
_P2P_OP_TYPES = ("SEND", "RECV", "RECVANYSOURCE", "COALESCED")


class _Process:
    """What the process shares: the C++ observer, the observed ``Work.wait``
    (a method descriptor from the C++ observer, ``csrc/torch/comm_wait.cpp``)
    and the pipeline schedules' ``step`` wrappers, installed while any
    tracker observes."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.observations = 0
        self.module: Any = None          # the C++ observer, while installed
        self.work_type: Any = None
        self.original_wait: Any = None   # Work.__dict__["wait"]
        self.schedules: Dict[Any, Any] = {}  # schedule class -> its own step()
        self.cuda: Dict[Any, Dict[str, Any]] = {}  # class -> {method: its own}
        self.threads: Set[int] = set()   # threads whose dispatch has the key
        self.live: "weakref.WeakSet[CommObservation]" = weakref.WeakSet()
        self.mode: Optional[CommMode] = None  # the fallback, while it is pushed
        self.mode_thread = 0
        self.warned = False

    def install(self, module: Any) -> None:
        import torch
        import torch.distributed as dist

        phases: Dict[int, int] = {}
        p2p, unknown = [], -1
        for name, value in torch._C._distributed_c10d.OpType.__members__.items():
            kind = _C.comm_op_type_kind(name)
            phases[int(value)] = _C.comm_kind_phase(kind) if kind else _OTHER
            if name in _P2P_OP_TYPES:
                p2p.append(int(value))
            if name == "UNKNOWN":
                unknown = int(value)
        work_type = dist.distributed_c10d.Work
        original = vars(work_type)["wait"]
        observed = module.comm_wait_descriptor(work_type, original, phases, p2p, unknown)
        self.module, self.work_type, self.original_wait = module, work_type, original
        work_type.wait = observed
        _hops_fall_through(torch, module.COMM_KEY)
        self.patch_schedules()
        self.patch_cuda(torch)

    def observe_thread(self, module: Any) -> None:
        """Observe this thread's collectives: with the C++ kernels while the
        key is ours, else (one warning) through the dispatch mode."""
        problem = key_problem("comm")
        if problem is None and self.mode is None:
            try:
                module.comm_start()  # registers the kernels once (a foreign fallback: refused)
            except RuntimeError as exc:
                problem = str(exc)
            else:
                self.threads.add(threading.get_ident())
                found = module.foreign_kernel(module.COMM_KEY)
                if found is not None:
                    module.comm_stop()
                    problem = (f"another library registered a kernel on the dispatch key "
                               f"{module.COMM_KEY_NAME} for {found}")
        if problem is not None and self.mode is None:
            self.push_mode(problem)

    def push_mode(self, problem: str) -> None:
        from torch.utils._python_dispatch import _push_mode

        self.mode = CommMode(self.sinks)
        self.mode_thread = threading.get_ident()
        _push_mode(self.mode.mode)
        if not self.warned:
            self.warned = True
            warnings.warn(f"mfu_tracker: Tracker: communication is observed through the slower "
                          f"TorchDispatchMode fallback: {problem}", RuntimeWarning, stacklevel=6)

    def sinks(self) -> list:
        return [(obs._tracker(), obs.link_of) for obs in list(self.live)
                if obs._tracker() is not None]

    def leave_threads(self) -> None:
        """The key leaves this thread's dispatch (others: at their next
        collective, csrc/torch/comm.cpp); the mode is popped on its thread."""
        me = threading.get_ident()
        if me in self.threads and self.module is not None:
            self.module.comm_stop()
        self.threads.clear()
        if self.mode is not None and self.mode_thread == me:
            from torch.utils._python_dispatch import _get_current_dispatch_mode, _pop_mode

            if _get_current_dispatch_mode() is self.mode.mode:
                _pop_mode()
            self.mode = None

    def uninstall(self) -> None:
        self.leave_threads()
        if self.work_type is not None:
            self.work_type.wait = self.original_wait
        self.module = self.work_type = self.original_wait = None
        for cls, step in self.schedules.items():
            cls.step = step
        self.schedules.clear()
        for cls, methods in self.cuda.items():
            for name, method in methods.items():
                setattr(cls, name, method)
        self.cuda.clear()

    def patch_cuda(self, torch: Any) -> None:
        """On a CUDA machine: the compute stream waiting on an event recorded
        on a stream a collective ran on, or on that stream itself, is exposed
        communication (FSDP2 and FSDP1 wait for their all-gathers and
        reduce-scatters that way, outside c10d)."""
        cuda = getattr(torch, "cuda", None)
        if cuda is None or not cuda.is_available():
            return
        record, wait_event, wait_stream = cuda_wait_patches(
            cuda.Event.record, cuda.Stream.wait_event, cuda.Stream.wait_stream,
            cuda.current_stream, self.module.comm_stream_phase)
        self.cuda[cuda.Event] = {"record": cuda.Event.record}
        self.cuda[cuda.Stream] = {"wait_event": cuda.Stream.wait_event,
                                  "wait_stream": cuda.Stream.wait_stream}
        cuda.Event.record = record
        cuda.Stream.wait_event = wait_event
        cuda.Stream.wait_stream = wait_stream

    def patch_schedules(self) -> None:
        """Wrap the schedules' ``step`` (once the module is imported: it is not
        imported here, it costs seconds)."""
        module = sys.modules.get(_SCHEDULES)
        if module is None or self.module is None:
            return
        for name in ("PipelineScheduleSingle", "PipelineScheduleMulti"):
            cls = getattr(module, name, None)
            if cls is None or cls in self.schedules or "step" not in vars(cls):
                continue
            self.schedules[cls] = cls.step
            cls.step = _make_step(self.module.comm_schedule, cls.step)


_PROCESS = _Process()


def _hops_fall_through(torch: Any, key_value: int) -> None:
    """Higher-order operators (``flex_attention``, ``cond``, ...) dispatch in
    Python on the thread's keys, and one with no kernel for the observer's
    key (included on the observing thread) fails ("could not find kernel for
    HigherOrderOperator"): every one, and those defined later, falls through
    it. The ops one runs still pass the key: collectives inside are seen."""
    from torch import _ops

    key = torch._C.DispatchKey(key_value)
    later = getattr(_ops, "_HIGHER_ORDER_OP_DEFAULT_FALLTHROUGH_DISPATCH_KEYS", None)
    if later is not None and key not in later:
        later.append(key)
    for hop in list(getattr(_ops, "_higher_order_ops", {}).values()):
        try:
            hop.fallthrough(key)
        except Exception:  # noqa: BLE001 -- an odd op must not stop the observer
            continue


def cuda_wait_patches(record: Any, wait_event: Any, wait_stream: Any, current_stream: Any,
                      stream_phase: Any) -> Any:
    """``(Event.record, Stream.wait_event, Stream.wait_stream)`` observed: an
    event recorded on a stream a device collective was launched on carries
    that collective's phase (``stream_phase(handle)``: the C++ observer's),
    and a stream's wait for such an event, or for such a stream, is
    bracketed by it in this thread's trackers -- on the GPU timeline, the
    time the waiting (compute) stream stalled."""
    begin, end = _C.comm_wait_begin, _C.comm_wait_end

    def observed_record(event: Any, stream: Any = None) -> Any:
        result = record(event, stream)
        phase = stream_phase((stream if stream is not None else current_stream()).cuda_stream)
        event._mfu_comm_phase = phase if phase >= 0 else None
        return result

    def observed_wait_event(stream: Any, event: Any) -> Any:
        phase = getattr(event, "_mfu_comm_phase", None)
        if phase is None:
            return wait_event(stream, event)
        begin(phase)
        try:
            return wait_event(stream, event)
        finally:
            end()

    def observed_wait_stream(stream: Any, other: Any) -> Any:
        phase = stream_phase(other.cuda_stream)
        if phase < 0:
            return wait_stream(stream, other)
        begin(phase)
        try:
            return wait_stream(stream, other)
        finally:
            end()

    observed_record.__doc__, observed_wait_event.__doc__ = record.__doc__, wait_event.__doc__
    observed_wait_stream.__doc__ = wait_stream.__doc__
    return observed_record, observed_wait_event, observed_wait_stream


def _make_step(mark: Any, original: Any) -> Any:
    def step(self: Any, *args: Any, **kwargs: Any) -> Any:  # a schedule's step()
        mark(True)  # its p2p waits are the bubble
        try:
            return original(self, *args, **kwargs)
        finally:
            mark(False)

    step.__doc__ = original.__doc__
    step.__wrapped__ = original  # type: ignore[attr-defined]
    return step


@contextlib.contextmanager
def unobserved() -> Iterator[None]:
    """A tracker's own collectives (its aggregation, the hosts' gather) run
    inside: no tracker records them, launches, bytes or waits."""
    module = _PROCESS.module
    if module is None:
        yield
        return
    module.comm_suspend(True)
    try:
        yield
    finally:
        module.comm_suspend(False)


class CommObservation:
    """One tracker's subscription: its sink, the groups' links, the warning
    for an unknown link."""

    def __init__(self, tracker: Any, module: Any, links: GroupLinks, warn_unknown: bool) -> None:
        # Weakly: a tracker dropped without close() (it holds this object)
        # is freed at once, and its end releases the process's observer.
        self._tracker = weakref.ref(tracker)
        self._module = module
        self._links = links
        self._known: Set[str] = set()
        self._warn_unknown = warn_unknown
        self._link_values: Dict[str, Optional[float]] = {}
        self._release = weakref.finalize(tracker, _release, module, links.fallback is not None)
        _PROCESS.live.add(self)
        self.refresh()

    def link_of(self, group: str) -> Optional[float]:
        """The link peak (bytes/s per direction) of the group named
        ``group`` (the dispatch-mode fallback's; the C++ observer keeps its
        own copy), None when unknown."""
        if self._links.fallback is not None:
            return self._links.fallback
        return self._link_values.get(group)

    def refresh(self) -> None:
        """Give the C++ observer the links of groups created since the last
        call (construction, then every ``metrics()``)."""
        # The C++ observer keeps one override for the process: the newest
        # tracker's (None: per group).
        self._module.comm_set_fallback_link(self._links.fallback)
        if self._links.fallback is not None:
            return
        try:
            groups = process_groups()
        except Exception:  # noqa: BLE001 -- links stay as they are
            return
        for name, ranks in groups:
            if name not in self._known:
                self._known.add(name)
                self._link_values[name] = self._links.link_of(name, ranks)
                self._module.comm_set_link(name, self._link_values[name])
        with _PROCESS.lock:
            _PROCESS.patch_schedules()  # pipelining imported since

    def check(self, figures: Dict[str, Any]) -> None:
        """One warning when collectives were timed but no link peak is known
        for any of them (net_utilization is then left out)."""
        if (self._warn_unknown and figures.get("comm_busbw_gbs")
                and figures.get("net_utilization") is None):
            self._warn_unknown = False
            why = "; ".join(f"{group}: {reason}" for group, reason in
                            sorted(self._links.unknown.items())[:4]) or "no group has a link"
            warnings.warn(f"mfu_tracker: Tracker: net_utilization is left out: the link "
                          f"peak is unknown ({why}). Pass link_bandwidth_gbs= (GB/s per "
                          f"direction) to measure against your link.",
                          RuntimeWarning, stacklevel=5)

    def close(self) -> None:
        tracker = self._tracker()
        if not self._release.alive:
            return
        try:
            if tracker is not None:
                tracker._comm_unsubscribe()
        finally:
            self._release()


def _release(module: Any, had_fallback: bool) -> None:
    """A subscription ends (its tracker closed, or freed: its sink left the
    registry with it): the link override goes, and the last one uninstalls
    the process's observer."""
    try:
        if had_fallback:
            module.comm_set_fallback_link(None)
    finally:
        with _PROCESS.lock:
            _PROCESS.observations -= 1
            if _PROCESS.observations == 0:
                _PROCESS.uninstall()


def observe(tracker: Any, module: Any, *, aggregator: Any, rank: int,
            device_name: Optional[str], on_gpu: bool,
            link_bandwidth_gbs: Optional[float]) -> Optional[CommObservation]:
    """Subscribe ``tracker`` to the process's communication (module: the
    C++ observer, ``mfu_tracker._torch``). None, after one warning, when
    every sink is taken."""
    if not tracker._comm_subscribe():
        warnings.warn(f"mfu_tracker: Tracker: {_C.LIMIT_COMM_SINKS_MAX} trackers already "
                      f"observe communication; this one does not (close one, or pass "
                      f"comm=False)", RuntimeWarning, stacklevel=4)
        return None
    with _PROCESS.lock:
        if _PROCESS.observations == 0:
            _PROCESS.install(module)
        _PROCESS.observations += 1
        _PROCESS.observe_thread(module)
    hosts = getattr(aggregator, "hosts", None)  # gathered with its group
    fallback = None if link_bandwidth_gbs is None else float(link_bandwidth_gbs) * 1e9
    links = GroupLinks(device_name, hosts, rank, fallback)
    # A CPU has no link in the table: its runs leave net_utilization out
    # without a warning (documented); a GPU whose link is unknown warns.
    return CommObservation(tracker, module, links, warn_unknown=on_gpu)
