"""Reduce a profiled step's events to a :class:`~._record.Breakdown`.

The events (:mod:`._trace`) go through three passes, each bounded by the
number of events (at most ``_C.LIMIT_TIMELINE_INTERVALS_MAX``; past it the
step is refused with :class:`BreakdownError`, never cut short):

1. **Host nesting**, thread by thread (:class:`_HostWalk`): every op and
   annotation gets its class from the one table (``_C.kernel_class``); an
   annotation the table does not name is transparent. An op the FLOP
   counter counts (gemm or attention by the op table) *owns* what runs
   inside it: its nested ops and the kernels they launch take its class --
   the counter books the op's FLOPs to it and skips its nested calls, so
   the time follows the FLOPs (the math attention path's bmm and softmax
   are attention). Inside a *scope* (``Optimizer.step``) every class but
   gemm and attention becomes the scope's. Operand bytes count once per class chain: at the outermost op
   of its class that the profiler sized (nested ops of the same class read
   the same tensors); a chain with no sized op makes the class's bytes
   unknown (``unsized``). Each op's correlation id is kept, for the kernels
   it launches.
2. **The timeline**: on a GPU the kernels, memcpys and memsets, one lane per
   stream, each of its own class (or its launching op's scope); on a CPU
   the host ops and classified annotations, one lane per thread. The
   window: on a CPU the tracker's marker annotation (the two step
   boundaries); on a GPU the device's first to last activity after the
   marker started. ``_C.timeline_split`` resolves overlap and nesting.
3. **FLOPs** per class: the FLOP counter's per-op counts (``by_op``) on the
   same step, each op in its class -- the counted ops are classed by the
   FLOP op table itself, so a class's FLOPs are exactly the counter's for
   its ops.

The top kernels (GPU: by duration; CPU: ops by self time) are kept for at
most :data:`MAX_NAMES` distinct names; the rest are folded (counted).
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from .._native import _C
from ._record import CLASSES, FLOP_CLASSES, Breakdown, ClassTime, KernelRow
from ._trace import ANNOTATION, KERNEL, OP, TraceEvent

__all__ = ["BreakdownError", "EVENTS_MAX", "MARKER", "MAX_NAMES", "TOP", "reduce_events"]

#: The annotation the tracker opens at one step boundary and closes at the
#: next: the profiled step's host window (transparent to the class table).
MARKER = "mfu_tracker: profiled step"
#: Distinct kernel / op names whose time is kept; more are folded.
MAX_NAMES = 4096
#: Rows of the top table in the record.
TOP = 10
#: Events of one profiled step the reduction takes (the core's bound).
EVENTS_MAX = int(_C.LIMIT_TIMELINE_INTERVALS_MAX)
#: Classes by index, and the classes a scope never takes over.
_INDEX = {name: i for i, name in enumerate(CLASSES)}
_KEEP = frozenset(_INDEX[name] for name in FLOP_CLASSES)
_SOURCE = {OP: "op", ANNOTATION: "annotation", KERNEL: "kernel"}
_CACHE_MAX = 1 << 16


class BreakdownError(ValueError):
    """A profiled step that cannot be broken down (the message says why)."""


class _Classes:
    """``_C.kernel_class`` per (name, source), cached for a bounded number of
    names: (class index or None, scope, counted: an op the FLOP op table counts)."""

    def __init__(self) -> None:
        self._cache: Dict[Tuple[str, str], Tuple[Optional[int], bool, bool]] = {}

    def __call__(self, name: str, kind: str) -> Tuple[Optional[int], bool, bool]:
        key = (name, kind)
        hit = self._cache.get(key)
        if hit is None:
            kclass, scope, rule = _C.kernel_class(name, _SOURCE[kind])
            hit = (None if kclass is None else _INDEX[kclass], bool(scope), rule == -1)
            if len(self._cache) < _CACHE_MAX:
                self._cache[key] = hit
        return hit


class _Names:
    """Time and calls per (name, class), for the top table (bounded): one
    name can run in several classes (aten::add_ in the optimizer's scope and
    inside an attention op), each its own row."""

    def __init__(self) -> None:
        self.rows: Dict[Tuple[str, int], List[int]] = {}   # (name, class) -> [ns, count]
        self.folded = 0

    def add(self, name: str, kclass: int, ns: int) -> None:
        row = self.rows.get((name, kclass))
        if row is None:
            if len(self.rows) >= MAX_NAMES:
                self.folded += 1
                return
            row = self.rows[(name, kclass)] = [0, 0]
        row[0] += ns
        row[1] += 1

    def top(self) -> List[KernelRow]:
        best = sorted(self.rows.items(), key=lambda kv: -kv[1][0])[:TOP]
        return [KernelRow(name[:200], CLASSES[c], ns * 1e-9, n) for (name, c), (ns, n) in best]


class _Frame:
    __slots__ = ("event", "kclass", "scope", "owner", "is_op", "chain", "counted", "covered",
                 "child_ns")

    def __init__(self, event: TraceEvent, kclass: int, scope: Optional[int],
                 owner: Optional[int], is_op: bool) -> None:
        self.event = event
        self.kclass = kclass         # the effective class
        self.scope = scope           # the scope class in force here (None: none)
        self.owner = owner           # the class of the counted op around (or this one)
        self.is_op = is_op
        self.chain = False           # this op or a same-class op around it counted its bytes
        self.counted = False         # this op counted its bytes
        self.covered = False         # a same-class op inside it counted its bytes
        self.child_ns = 0            # time of its direct children (for its self time)


class _HostWalk:
    """Pass 1 (module docstring): classes, scopes, bytes, links, host intervals."""

    def __init__(self, classify: _Classes, keep_links: bool, names: Optional[_Names]) -> None:
        self.classify = classify
        self.keep_links = keep_links
        self.names = names                       # host timeline: ops' self time by name
        # link -> (the class that decides its kernels: owner or scope, whether
        # that decides every class (owner) or all but gemm / attention, sized)
        self.links: Dict[int, Tuple[Optional[int], bool, bool]] = {}
        self.bytes = [0] * len(CLASSES)
        self.sized = [0] * len(CLASSES)          # op chains whose bytes counted
        self.unsized = [0] * len(CLASSES)
        self.compiled = False                    # a compiled region's span was seen
        self.intervals: List[Tuple[int, int, int, int]] = []     # start, end, thread, class

    def thread(self, lane: int, events: List[TraceEvent]) -> None:
        events.sort(key=lambda e: (e.start_ns, -e.end_ns))
        stack: List[_Frame] = []
        for event in events:
            while stack and stack[-1].event.end_ns <= event.start_ns:
                self._pop(stack)
            self._push(stack, lane, event)
        while stack:
            self._pop(stack)

    def _push(self, stack: List[_Frame], lane: int, event: TraceEvent) -> None:
        raw, scopes, counted = self.classify(event.name, event.kind)
        outer = stack[-1] if stack else None
        scope = outer.scope if outer is not None else None
        owner = outer.owner if outer is not None else None
        if raw is None:                          # a transparent annotation
            self._link(event, scope, owner, False)
            return
        if owner is not None:                    # inside a counted op: its class
            kclass = owner
        elif scope is not None and raw not in _KEEP:
            kclass = scope
        else:
            kclass = raw
        if scopes:
            scope = kclass
        if counted and owner is None:
            owner = kclass
        frame = _Frame(event, kclass, scope, owner, event.kind == OP)
        if frame.is_op:
            self._bytes(stack, frame)
        elif not scopes:
            self.unsized[kclass] += 1            # a compiled region: work of unknown traffic
            self.compiled |= raw == _INDEX["fused"]
        self._link(event, scope, owner, frame.is_op and event.operand_bytes is not None)
        self.intervals.append((event.start_ns, event.end_ns, lane, kclass))
        stack.append(frame)

    def _link(self, event: TraceEvent, scope: Optional[int], owner: Optional[int],
              sized: bool) -> None:
        """What decides the class of the kernels ``event`` launches."""
        if self.keep_links and event.link:
            self.links[event.link] = ((owner, True, sized) if owner is not None
                                      else (scope, False, sized))

    def _bytes(self, stack: List[_Frame], frame: _Frame) -> None:
        """Count the op's operand bytes unless a same-class op around it did."""
        outer = next((f for f in reversed(stack) if f.is_op), None)
        if outer is not None and outer.kclass == frame.kclass and outer.chain:
            frame.chain = True
            return
        if frame.event.operand_bytes is None:
            return
        self.bytes[frame.kclass] += frame.event.operand_bytes
        self.sized[frame.kclass] += 1
        frame.chain = frame.counted = True
        for around in reversed(stack):           # the unsized same-class ops it covers
            if around.is_op:
                if around.kclass != frame.kclass:
                    break
                around.covered = True

    def _pop(self, stack: List[_Frame]) -> None:
        frame = stack.pop()
        event = frame.event
        if frame.is_op and not frame.chain and not frame.covered:
            self.unsized[frame.kclass] += 1
        duration = event.end_ns - event.start_ns
        if stack:
            stack[-1].child_ns += duration
        if self.names is not None and frame.is_op:
            self.names.add(event.name, frame.kclass, max(duration - frame.child_ns, 0))


def _lanes(values: Iterable[int]) -> Dict[int, int]:
    lanes: Dict[int, int] = {}
    for value in values:
        lanes.setdefault(value, len(lanes))
    return lanes


def _split(intervals: List[Tuple[int, int, int, int]], window: Tuple[int, int]) -> Dict[str, Any]:
    lanes = _lanes(lane for _, _, lane, _ in intervals)
    return _C.timeline_split([i[0] for i in intervals], [i[1] for i in intervals],
                             [lanes[i[2]] for i in intervals], [i[3] for i in intervals],
                             max(len(lanes), 1), window[0], window[1])


def _gather(events: Iterable[TraceEvent]) -> Tuple[Dict[int, List[TraceEvent]],
                                                   List[TraceEvent], Optional[TraceEvent], int]:
    """Host events by thread, device events, the marker, and the count."""
    limit = EVENTS_MAX
    host: Dict[int, List[TraceEvent]] = {}
    device: List[TraceEvent] = []
    marker: Optional[TraceEvent] = None
    count = 0
    for event in events:
        count += 1
        if count > limit:
            raise BreakdownError(f"the profiled step holds more than {limit:,} events; it is "
                                 f"not broken down (profile a shorter step)")
        if event.kind == KERNEL:
            device.append(event)
        elif event.kind == ANNOTATION and event.name == MARKER:
            marker = event
        else:
            host.setdefault(event.lane, []).append(event)
    return host, device, marker, count


def _device_timeline(device: List[TraceEvent], marker: Optional[TraceEvent], walk: _HostWalk,
                     classify: _Classes, names: _Names) -> Tuple[Dict[str, Any], List[int]]:
    """Pass 2 on a GPU: the kernels' split, and per class the kernels whose
    launching op was not sized."""
    begin = marker.start_ns if marker is not None else None
    kernels = [k for k in device if begin is None or k.end_ns > begin]
    if not kernels:
        raise BreakdownError("no device activity was recorded in the profiled step (the "
                             "profiler saw no kernel: is CUPTI / roctracer available?)")
    unsized = [0] * len(CLASSES)
    intervals: List[Tuple[int, int, int, int]] = []
    start = min(k.start_ns if begin is None else max(k.start_ns, begin) for k in kernels)
    end = max(k.end_ns for k in kernels)
    for kernel in kernels:
        own, _, _ = classify(kernel.name, KERNEL)
        kclass = _INDEX["other"] if own is None else own
        decider, owns, sized = walk.links.get(kernel.link, (None, False, False))
        if decider is not None and (owns or kclass not in _KEEP):
            kclass = decider
        if not sized:
            unsized[kclass] += 1
        intervals.append((kernel.start_ns, kernel.end_ns, kernel.lane, kclass))
        names.add(kernel.name, kclass, min(kernel.end_ns, end) - max(kernel.start_ns, start))
    return _split(intervals, (start, end)), unsized


def _bytes_of(kclass: str, total: int, sized: int, unsized: int) -> Optional[float]:
    """A class's operand bytes when they are complete: every op chain of
    it sized, at least one, and not ``other`` (views, allocations and
    bookkeeping: their operands are not traffic)."""
    if kclass == "other" or unsized or not sized:
        return None
    return float(total)


def _flops(flops_by_op: Optional[Mapping[str, Tuple[int, int]]],
           classify: _Classes) -> List[float]:
    flops = [0.0] * len(CLASSES)
    for name, (_, executed) in (flops_by_op or {}).items():
        kclass, _, _ = classify(name, OP)
        if kclass is not None:
            flops[kclass] += float(executed)
    return flops


def reduce_events(events: Iterable[TraceEvent], *, timeline: str,
                  flops_by_op: Optional[Mapping[str, Tuple[int, int]]] = None,
                  step: Optional[int] = None, peak_flops_per_sec: Optional[float] = None,
                  peak_bytes_per_sec: Optional[float] = None,
                  dtype: Optional[str] = None) -> Breakdown:
    """The breakdown of one profiled step (module docstring).

    Args:
        events: the step's events (:mod:`._trace`).
        timeline: "device" (a GPU run: the kernels' timeline) or "host"
            (a CPU run: the host ops' timeline).
        flops_by_op: the FLOP counter's ``by_op`` on the same step (op name ->
            (calls, executed FLOPs)); None: no FLOPs per class.
        step, peak_flops_per_sec, peak_bytes_per_sec, dtype: carried into
            the record (the peak per device, FLOP/s and bytes/s).

    Raises :class:`BreakdownError` for a step that cannot be broken down
    (no activity, more events than the bound).
    """
    if timeline not in ("device", "host"):
        raise ValueError(f"timeline: {timeline!r} is neither 'device' nor 'host'")
    classify = _Classes()
    names = _Names()
    host, device, marker, count = _gather(events)
    on_device = timeline == "device"
    walk = _HostWalk(classify, keep_links=on_device, names=None if on_device else names)
    for lane, thread_events in host.items():
        walk.thread(lane, thread_events)
    unsized = walk.unsized
    if on_device:
        split, kernel_unsized = _device_timeline(device, marker, walk, classify, names)
        unsized = [a + b for a, b in zip(unsized, kernel_unsized)]
    else:
        if marker is not None:
            window = (marker.start_ns, marker.end_ns)
        elif walk.intervals:
            window = (min(i[0] for i in walk.intervals), max(i[1] for i in walk.intervals))
        else:
            raise BreakdownError("no host op was recorded in the profiled step")
        split = _split(walk.intervals, window)
    flops = _flops(flops_by_op, classify)
    classes = {
        name: ClassTime(time_s=split["time_ns"][i] * 1e-9, active_s=split["active_ns"][i] * 1e-9,
                        count=int(split["count"][i]), flops=flops[i] or None,
                        bytes=_bytes_of(name, walk.bytes[i], walk.sized[i], unsized[i]),
                        unsized=unsized[i])
        for i, name in enumerate(CLASSES)}
    return Breakdown(step_s=split["window_ns"] * 1e-9, idle_s=split["idle_ns"] * 1e-9,
                     classes=classes, timeline=timeline, step=step, top=names.top(),
                     peak_flops_per_sec=peak_flops_per_sec, peak_bytes_per_sec=peak_bytes_per_sec,
                     dtype=dtype, host_s=None if marker is None else (marker.end_ns - marker.start_ns) * 1e-9,
                     events=count, names_folded=names.folded, compiled=walk.compiled)
