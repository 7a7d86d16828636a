"""The kernel breakdown of one profiled step: the record and its figures.

A :class:`Breakdown` is what a profiled training step reduces to
(:mod:`mfu_tracker.breakdown._reduce`): the step's time split by kernel class
on the union timeline (``csrc/core/breakdown/timeline.h``), idle as its own row, and
per class what it achieved. Rows:

====================  ==========================================================
class                 what lands there (the rules: ``csrc/core/breakdown/kernels.c``)
====================  ==========================================================
``gemm``              matmuls and convolutions
``attention``         fused attention kernels
``fused``             a compiled region's generated code with no finer name
``reduction``         reductions and normalization (softmax, norms, losses)
``elementwise``       pointwise kernels and ops
``optimizer``         multi_tensor_apply, fused / foreach optimizers, and the
                      rest of what runs inside ``Optimizer.step``
``other``             names no rule knows
``memory``            memory copies and sets
``communication``     collectives
``idle``              instants no class covers: the device waiting (GPU), or
                      host time outside every op (CPU)
====================  ==========================================================

The rows' ``time_s`` add up to ``step_s`` exactly (nanosecond sums). Per
class also: ``active_s`` (its own union: the time some kernel of the class
ran, overlap with other classes not taken out), ``count``, ``flops`` (the
FLOP counter's executed FLOPs of the ops of that class on the same step),
``bytes`` (tensor operand bytes of its ops: a lower bound on traffic) and
``unsized`` (ops or kernels whose bytes could not be read; with any, the
class's bytes are left out). From them: TFLOP/s = flops / active_s, its
share of the peak, GB/s = bytes / active_s, its share of the bandwidth, and
where the class sits on the roofline (:meth:`Breakdown.bound`).

On a GPU the step is the device timeline from its first activity to its
last (``timeline="device"``); on a CPU the host window between the two step
boundaries (``timeline="host"``), where an op's time is its self time.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

from .._native import _C

__all__ = ["Breakdown", "ClassTime", "KernelRow", "CLASSES", "IDLE", "ROWS", "LABELS",
           "BREAKDOWN_RECORD", "figures_of_record"]

#: The classes in the priority order that settles overlap (the C table's).
CLASSES: Tuple[str, ...] = tuple(_C.kernel_classes())
IDLE = "idle"
#: Every row of a breakdown: the classes, then idle.
ROWS: Tuple[str, ...] = CLASSES + (IDLE,)
#: What the report prints for each row.
LABELS: Dict[str, str] = {
    "gemm": "GEMM", "attention": "attention", "fused": "fused (compiled)",
    "reduction": "reduction / norm", "elementwise": "elementwise", "optimizer": "optimizer",
    "other": "other", "memory": "memory copy / set", "communication": "communication",
    "idle": "idle",
}
#: The ``record`` value of a breakdown line in a metrics log.
BREAKDOWN_RECORD = "breakdown"
#: Classes whose FLOPs the counter books by op, kept under an optimizer scope.
FLOP_CLASSES = ("gemm", "attention")
#: Classes whose ops count no FLOPs by convention (docs/conventions.md): on the
#: roofline they sit at intensity 0.
NO_FLOP_CLASSES = ("reduction", "elementwise", "optimizer", "memory", "communication")


@dataclass
class ClassTime:
    """One class of a breakdown (module docstring for each field)."""

    time_s: float = 0.0
    active_s: float = 0.0
    count: int = 0
    flops: Optional[float] = None
    bytes: Optional[float] = None
    unsized: int = 0


@dataclass
class KernelRow:
    """One of the top kernels (GPU) or ops by self time (CPU)."""

    name: str
    kclass: str
    time_s: float
    count: int


@dataclass
class Breakdown:
    """A profiled step reduced to kernel classes (module docstring)."""

    step_s: float
    idle_s: float
    classes: Dict[str, ClassTime]
    timeline: str = "host"                      # "device" or "host"
    step: Optional[int] = None                  # the global step it was
    top: List[KernelRow] = field(default_factory=list)
    peak_flops_per_sec: Optional[float] = None  # per device, the tracker's dtype
    peak_bytes_per_sec: Optional[float] = None
    dtype: Optional[str] = None
    host_s: Optional[float] = None              # the host window between the boundaries
    events: int = 0
    names_folded: int = 0                       # names past the top table's bound
    trace: Optional[str] = None                 # the raw trace, when kept
    compiled: bool = False                      # a compiled region ran in the step

    # ---- shares and rates ------------------------------------------------------

    @property
    def busy_s(self) -> float:
        """The step less idle: time some class covered."""
        return self.step_s - self.idle_s

    def mean_s(self, kclass: Optional[str] = None) -> Optional[float]:
        """Busy time per kernel (GPU) or op (CPU): of one class (its own
        union over its count), or of the step (busy time over every count);
        None without any."""
        if kclass is not None:
            row = self.classes[kclass]
            return row.active_s / row.count if row.count else None
        count = sum(row.count for row in self.classes.values())
        return self.busy_s / count if count else None

    def time_of(self, row: str) -> float:
        """Seconds of ``row`` (a class or ``idle``)."""
        return self.idle_s if row == IDLE else self.classes[row].time_s

    def share(self, row: str) -> Optional[float]:
        """``row``'s share of the step (None for an empty step)."""
        return self.time_of(row) / self.step_s if self.step_s > 0 else None

    def shares(self) -> Dict[str, float]:
        """Every row's share of the step; they add up to 1."""
        if self.step_s <= 0:
            return {}
        return {row: self.time_of(row) / self.step_s for row in ROWS}

    def tflops(self, kclass: str) -> Optional[float]:
        """Executed TFLOP/s of the class's kernels while they ran (None
        without counted FLOPs or time)."""
        row = self.classes[kclass]
        if not row.flops or row.active_s <= 0:
            return None
        return row.flops / row.active_s * 1e-12

    def peak_share(self, kclass: str) -> Optional[float]:
        """The class's FLOP/s over the peak."""
        rate = self.tflops(kclass)
        if rate is None or not self.peak_flops_per_sec:
            return None
        return rate * 1e12 / self.peak_flops_per_sec

    def gbs(self, kclass: str) -> Optional[float]:
        """Operand GB/s of the class while its kernels ran: a lower bound
        (None when its bytes are unknown)."""
        row = self.classes[kclass]
        if row.bytes is None or row.active_s <= 0:
            return None
        return row.bytes / row.active_s * 1e-9

    def bandwidth_share(self, kclass: str) -> Optional[float]:
        """The class's GB/s over the peak bandwidth (a lower bound)."""
        rate = self.gbs(kclass)
        if rate is None or not self.peak_bytes_per_sec:
            return None
        return rate * 1e9 / self.peak_bytes_per_sec

    def bound(self, kclass: str) -> Optional[str]:
        """Where the class sits on the roofline: "memory" when its
        arithmetic intensity (FLOPs per operand byte; 0 for classes whose
        ops count no FLOPs) is below the device's balance point (peak FLOP/s
        / peak bytes/s), else "compute"; None without the bytes or a peak."""
        row = self.classes[kclass]
        if row.bytes is None or not row.bytes or not self.peak_flops_per_sec \
                or not self.peak_bytes_per_sec:
            return None
        flops = row.flops if row.flops is not None else (0.0 if kclass in NO_FLOP_CLASSES else None)
        if flops is None:
            return None
        ridge = self.peak_flops_per_sec / self.peak_bytes_per_sec
        return "memory" if flops / row.bytes < ridge else "compute"

    # ---- the log's record --------------------------------------------------------

    def to_record(self) -> Dict[str, Any]:
        """The breakdown as a log record's fields (``record`` and ``time``
        are added by the log)."""
        return {
            "step": self.step, "timeline": self.timeline, "step_s": self.step_s,
            "idle_s": self.idle_s, "host_s": self.host_s, "dtype": self.dtype,
            "peak_flops_per_sec": self.peak_flops_per_sec,
            "peak_bytes_per_sec": self.peak_bytes_per_sec,
            "classes": {name: {"time_s": c.time_s, "active_s": c.active_s, "count": c.count,
                               "flops": c.flops, "bytes": c.bytes, "unsized": c.unsized}
                        for name, c in self.classes.items()},
            "top": [{"name": k.name, "class": k.kclass, "time_s": k.time_s, "count": k.count}
                    for k in self.top],
            "events": self.events, "names_folded": self.names_folded, "trace": self.trace,
            "compiled": self.compiled,
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> "Breakdown":
        """A breakdown back from its log record; ValueError naming the field
        that is missing or not a finite number >= 0."""
        classes: Dict[str, ClassTime] = {}
        given = record.get("classes")
        if not isinstance(given, Mapping):
            raise ValueError("'classes' is not an object")
        for name in CLASSES:
            row = given.get(name, {})
            if not isinstance(row, Mapping):
                raise ValueError(f"'classes.{name}' is not an object")
            classes[name] = ClassTime(
                time_s=_number(row, "time_s", f"classes.{name}"),
                active_s=_number(row, "active_s", f"classes.{name}"),
                count=int(_number(row, "count", f"classes.{name}")),
                flops=_number(row, "flops", f"classes.{name}", optional=True),
                bytes=_number(row, "bytes", f"classes.{name}", optional=True),
                unsized=int(_number(row, "unsized", f"classes.{name}", optional=True) or 0))
        top = [KernelRow(str(k.get("name", "")), str(k.get("class", "other")),
                         _number(k, "time_s", "top"), int(_number(k, "count", "top")))
               for k in record.get("top") or [] if isinstance(k, Mapping)]
        step = record.get("step")
        return cls(step_s=_number(record, "step_s", ""), idle_s=_number(record, "idle_s", ""),
                   classes=classes, timeline=str(record.get("timeline", "host")),
                   step=step if isinstance(step, int) and not isinstance(step, bool) else None,
                   top=top,
                   peak_flops_per_sec=_number(record, "peak_flops_per_sec", "", optional=True),
                   peak_bytes_per_sec=_number(record, "peak_bytes_per_sec", "", optional=True),
                   dtype=record.get("dtype"), host_s=_number(record, "host_s", "", optional=True),
                   events=int(_number(record, "events", "", optional=True) or 0),
                   names_folded=int(_number(record, "names_folded", "", optional=True) or 0),
                   trace=record.get("trace"), compiled=record.get("compiled") is True)

    def metric_figures(self) -> Dict[str, Any]:
        """The figures ``Tracker.metrics()`` logs once after a profiled step
        (families of :mod:`mfu_tracker.timing._metrics`)."""
        rates = {name: self.tflops(name) for name in CLASSES}
        traffic = {name: self.gbs(name) for name in CLASSES}
        return {"kernel_share": self.shares(), "kernel_step_s": self.step_s,
                "kernel_tflops": {k: v for k, v in rates.items() if v is not None},
                "kernel_gbs": {k: v for k, v in traffic.items() if v is not None}}


def figures_of_record(record: Mapping[str, Any]) -> Optional[Breakdown]:
    """A log record's breakdown, or None when the record cannot be read."""
    try:
        return Breakdown.from_record(record)
    except (ValueError, TypeError):
        return None


def _number(record: Mapping[str, Any], key: str, where: str,
            optional: bool = False) -> Optional[float]:
    value = record.get(key)
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0 \
            or value == float("inf"):
        raise ValueError(f"'{where + '.' if where else ''}{key}' is not a finite number >= 0")
    return float(value)
