"""A profiled step's events, as the kernel breakdown reads them.

Two inputs give the same :class:`TraceEvent` stream:

* :func:`kineto_events` -- a finished ``torch.profiler.profile``'s results
  in memory (``prof.profiler.kineto_results``), the tracker's own path: no
  file is written;
* :func:`chrome_trace_events` -- a Kineto trace as JSON (what
  ``export_chrome_trace`` writes, Perfetto / HTA / TraceLens read), a dict or
  a file: traces from elsewhere, and the traces the tests build by hand.

What is kept (everything else is skipped: runtime calls such as
``cudaLaunchKernel``, Python frames, GPU-side copies of annotations, memory
records, the profiler's own ``profiler::`` ops):

=============  ===============================================================
``op``         a host op (Kineto ``cpu_op``): its thread is its lane, its
               correlation id its link, its tensor operands' bytes from the
               shapes and dtypes ``record_shapes=True`` records
``annotation`` a ``record_function`` span (``user_annotation``)
``kernel``     device activity: a kernel, a memcpy, a memset (``kernel``,
               ``gpu_memcpy``, ``gpu_memset``): its stream is its lane, its
               link the correlation id of the host op that launched it
=============  ===============================================================

Times are integer nanoseconds on the trace's clock (the JSON's microseconds
x 1000, rounded).
"""
from __future__ import annotations

import gzip
import json
from typing import Any, Dict, Iterator, List, Mapping, NamedTuple, Optional, Sequence

__all__ = ["TraceEvent", "chrome_trace_events", "kineto_events", "operand_bytes"]

OP, ANNOTATION, KERNEL = "op", "annotation", "kernel"

#: Kineto's activity types (the JSON's ``cat``) -> what the breakdown reads.
_KINDS = {"cpu_op": OP, "user_annotation": ANNOTATION, "kernel": KERNEL, "gpu_memcpy": KERNEL,
          "gpu_memset": KERNEL}

#: Bytes per element of the dtypes the profiler records for tensor operands
#: (c10::toString of the ScalarType, as ``_KinetoEvent.dtypes()`` and the
#: JSON's "Input type" spell them).
ELEMENT_BYTES: Dict[str, int] = {
    "double": 8, "float": 4, "c10::Half": 2, "c10::BFloat16": 2,
    "long int": 8, "int": 4, "short int": 2, "signed char": 1, "unsigned char": 1, "bool": 1,
    "unsigned short": 2, "unsigned int": 4, "unsigned long": 8,
    "c10::Float8_e4m3fn": 1, "c10::Float8_e5m2": 1, "c10::Float8_e4m3fnuz": 1,
    "c10::Float8_e5m2fnuz": 1, "c10::Float8_e8m0fnu": 1,
    "c10::complex<float>": 8, "c10::complex<double>": 16, "c10::complex<c10::Half>": 4,
}
#: What the profiler writes for an argument that is not a tensor.
_NOT_TENSORS = frozenset({"Scalar", "ScalarList", "", "GenericList", "Device", "Layout",
                          "ScalarType", "MemoryFormat", "string", "None"})


class TraceEvent(NamedTuple):
    """One event of a profiled step (module docstring)."""

    kind: str                      # OP, ANNOTATION or KERNEL
    name: str
    start_ns: int
    end_ns: int
    lane: int                      # host thread id, or device stream id
    link: int                      # host: its correlation id; kernel: its launcher's (0: none)
    operand_bytes: Optional[int]   # ops: tensor operand bytes; None: not sized (or not an op)
    device: int                    # a kernel's device index; -1 on the host


def operand_bytes(shapes: Sequence[Any], dtypes: Sequence[str]) -> Optional[int]:
    """Bytes of an op's tensor operands: each tensor's elements x its
    element size, once per operand (a lower bound on the op's traffic: its
    outputs are not recorded unless passed in, as in-place and ``out=``
    ops do). None when an operand is a tensor list (the profiler records no
    element dtype for it) or of a dtype not in :data:`ELEMENT_BYTES`."""
    total = 0
    for shape, dtype in zip(shapes, dtypes):
        if dtype in _NOT_TENSORS:
            continue
        size = ELEMENT_BYTES.get(dtype)
        if size is None or not isinstance(shape, (list, tuple)):
            return None
        elements = 1
        for dim in shape:
            if not isinstance(dim, int) or dim < 0:
                return None
            elements *= dim
        total += elements * size
    return total


# ---- live results ------------------------------------------------------------------

def kineto_events(results: Any, device: Optional[int] = None) -> Iterator[TraceEvent]:
    """The events of ``torch.profiler.profile().profiler.kineto_results``
    (device activity of ``device`` only, when given)."""
    for event in results.events():
        kind = _KINDS.get(event.activity_type())
        if kind is None or event.is_async():
            continue
        name = event.name()
        if kind == KERNEL:
            index = event.device_index()
            if device is not None and index != device:
                continue
            yield TraceEvent(KERNEL, name, event.start_ns(), event.end_ns(),
                             event.device_resource_id(), event.linked_correlation_id(), None, index)
            continue
        if name.startswith("profiler::") or getattr(event, "is_hidden_event", _no)():
            continue
        sized = operand_bytes(event.shapes(), event.dtypes()) if kind == OP else None
        yield TraceEvent(kind, name, event.start_ns(), event.end_ns(), event.start_thread_id(),
                         event.correlation_id(), sized, -1)


def _no() -> bool:
    return False


# ---- Kineto JSON --------------------------------------------------------------------

def _load(trace: Any) -> Mapping[str, Any]:
    if isinstance(trace, Mapping):
        return trace
    path = str(trace)
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        loaded = json.load(f)
    if not isinstance(loaded, Mapping) or not isinstance(loaded.get("traceEvents"), list):
        raise ValueError(f"{path}: not a Kineto trace (no traceEvents list)")
    return loaded


def _ns(value: Any) -> int:
    return int(round(float(value) * 1000.0))


def chrome_trace_events(trace: Any, device: Optional[int] = None) -> Iterator[TraceEvent]:
    """The events of a Kineto trace: a dict with ``traceEvents``, or a
    ``.json`` / ``.json.gz`` file. Complete events (``ph`` "X") only; a
    kernel's lane is ``args.stream`` (else its ``tid``), its link
    ``args["External id"]`` as the launching op's."""
    events: List[Any] = list(_load(trace).get("traceEvents", []))
    for event in events:
        if not isinstance(event, Mapping) or event.get("ph") != "X":
            continue
        kind = _KINDS.get(str(event.get("cat", "")).lower())
        if kind is None:
            continue
        args = event.get("args") or {}
        start = _ns(event.get("ts", 0))
        end = start + _ns(event.get("dur", 0))
        name = str(event.get("name", ""))
        link = int(args.get("External id", 0) or 0)
        if kind == KERNEL:
            index = int(args.get("device", event.get("pid", 0)) or 0)
            if device is not None and index != device:
                continue
            lane = int(args.get("stream", event.get("tid", 0)) or 0)
            yield TraceEvent(KERNEL, name, start, end, lane, link, None, index)
            continue
        if name.startswith("profiler::"):
            continue
        sized = (operand_bytes(args.get("Input Dims", []), args.get("Input type", []))
                 if kind == OP else None)
        yield TraceEvent(kind, name, start, end, _thread(event.get("tid", 0)), link, sized, -1)


def _thread(tid: Any) -> int:
    try:
        return int(tid)
    except (TypeError, ValueError):
        return hash(str(tid)) & 0x7FFFFFFF
