"""One rank's row of an aggregation: :class:`RankFigures` and its wire format.

At a logging interval every rank contributes one fixed-size float64 row
(:data:`ROW_FIELDS`) to an all-gather (:mod:`._collective`), and
:func:`~._figures.combine` forms the job's figures from the rows. A row
carries the rank's window as the step record's sums (a
:class:`~mfu_tracker.timing._totals.StepSums`, one value per field of
``_C.STEP_FIELDS``), never as ratios: each field's sum per second of the
rank's window -- its *share*, divided by the declared model-parallel degree,
so summing rows counts each model replica once -- or, for a per-step field
(``StepField.per_step``), its seconds per step; beside them the rank's
ceilings (peaks, bandwidth, devices, measured peak), its times, phases,
telemetry and communication. Every ratio of a rank or of the job is then
formed by the one formula (``csrc/core/steps/stats.h``) from sums, over one second
against the summed ceilings: nothing is turned from a ratio back into a
rate.

Layout: the first value of a row is :data:`ROW_LAYOUT`, the format's version
(6) plus a fingerprint of :data:`ROW_FIELDS` in its fraction, so rows of
different layouts (ranks running different versions, or a record with
different fields) never combine. The step record's fields come last, in the
record's order: a new field of the record is a new column with no edit here.
:func:`RankFigures.from_row` also reads the layout before (5,
:mod:`._row_v5`).

Units: FLOP/s, bytes/s, tokens/s, seconds; NaN on the wire = None =
unavailable on that rank.
"""
from __future__ import annotations

import functools
import math
import zlib
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from .._native import _C
from ..timing._totals import FIELDS, StepSums
from ..timing._waterfall import COMM_KINDS, PHASES, busy_s
from ._row_v5 import read_v5

__all__ = ["RankFigures", "ROW_FIELDS", "ROW_LAYOUT", "ROW_VERSION", "TELEMETRY_FIELDS",
           "RECORD_COLUMNS", "comm_families"]

#: The row format's version: the integer part of :data:`ROW_LAYOUT`.
ROW_VERSION = 6
#: The per-kind communication families a row carries (``{family}_{kind}``).
COMM_FAMILIES: Tuple[str, ...] = ("comm_bytes", "comm_s", "comm_busbw_gbs")
#: The telemetry readings a row carries (the rest is derived in combine()).
TELEMETRY_FIELDS: Tuple[str, ...] = ("power_w", "sm_clock_mhz", "clock_ratio", "throttled")
#: The step record's column of each field: ``<field>_per_sec`` (its sum per
#: second of the window, the rank's share) or ``<field>_per_step`` (a per-step
#: field's seconds per step).
RECORD_COLUMNS: Tuple[Tuple[str, str], ...] = tuple(
    (f.name, f"{f.name}_per_step" if f.per_step else f"{f.name}_per_sec") for f in FIELDS)

#: The float64 row each rank contributes, in order (NaN = unavailable).
ROW_FIELDS: Tuple[str, ...] = (
    "layout",                  # ROW_LAYOUT
    "rank",                    # global rank
    "boundaries",              # step() calls so far
    "steps",                   # steps in the window
    "window_s",                # sum of the window's step periods
    "step_time_s",             # mean step period in the window
    "step_time_min_s",
    "step_time_max_s",
    "peak_flops_per_sec",      # per-device peak x num_gpus (the share)
    "peak_bytes_per_sec",      # per-device bandwidth x num_gpus (the share)
    "num_devices",             # num_gpus
    "model_parallel",          # tensor x sequence x context x pipeline degree
    "interval_s",              # host seconds from the previous aggregation's end to this one
    "interval_steps",          # step() calls in that interval
    *(f"phase_{name}_s" for name in PHASES),  # seconds per step of each marked phase
    "measured_flops_per_sec",  # the measured GEMM peak x num_gpus (measure_peak=True)
    *TELEMETRY_FIELDS,         # power W, SM clock, its ratio, throttled 1.0 / 0.0
    "ledger_model_flops",      # model FLOPs since the previous logged metrics() (the share)
    "comm_observed",           # 1.0 when the rank observes its communication
    *(f"{family}_{kind}" for family in COMM_FAMILIES for kind in COMM_KINDS),
    "net_utilization",
    "comm_overlap",
    *(column for _, column in RECORD_COLUMNS),  # the step record, last
)

#: The first value of every row: the version, the fields' fingerprint below 1.
ROW_LAYOUT: float = ROW_VERSION + zlib.crc32(",".join(ROW_FIELDS).encode()) / 2.0 ** 32

_INTS = ("rank", "boundaries", "steps", "num_devices", "model_parallel", "interval_steps")
_NAN = float("nan")
#: The figures :meth:`RankFigures.figures` forms (``_C.RATIOS``), read as attributes.
_RATIO_NAMES = frozenset(ratio.name for ratio in _C.RATIOS)


def _opt(value: Optional[float]) -> Optional[float]:
    return None if value is None or math.isnan(value) else float(value)


@dataclass(frozen=True)
class RankFigures:
    """One rank's figures as gathered (None = unavailable on that rank).

    ``sums``: the rank's window as the step record's sums (module doc): each
    field per second of the window, divided by the declared model-parallel
    degree d (a per-step field: seconds per step). Peaks are the rank's share
    too. Its ratios -- ``mfu``, ``hfu``, ``mbu``, ``mfu_mixed``,
    ``mfu_language``, ``overcompute``, ``achieved_flops_per_sec``,
    ``tokens_per_sec``, ... (``_C.RATIOS``) -- and each field's rate as
    ``<field>_per_sec`` (``executed_flops_per_sec``, ...) read as
    attributes, formed by the one formula (:meth:`figures`).
    """

    rank: int
    boundaries: int
    steps: int
    window_s: Optional[float]
    step_time_s: Optional[float]
    step_time_min_s: Optional[float]
    step_time_max_s: Optional[float]
    sums: StepSums
    peak_flops_per_sec: Optional[float]
    peak_bytes_per_sec: Optional[float]
    num_devices: int
    model_parallel: int
    interval_s: Optional[float]
    interval_steps: int
    phase_data_s: Optional[float] = None
    phase_forward_s: Optional[float] = None
    phase_backward_s: Optional[float] = None
    phase_optimizer_s: Optional[float] = None
    phase_communication_s: Optional[float] = None
    phase_pipeline_bubble_s: Optional[float] = None
    measured_flops_per_sec: Optional[float] = None
    power_w: Optional[float] = None
    sm_clock_mhz: Optional[float] = None
    clock_ratio: Optional[float] = None
    throttled: Optional[float] = None
    ledger_model_flops: Optional[float] = None
    comm_observed: Optional[float] = None
    comm: Tuple[Tuple[str, Dict[str, float]], ...] = ()  # (family, {kind: value})
    net_utilization: Optional[float] = None
    comm_overlap: Optional[float] = None

    def figures(self) -> Dict[str, Any]:
        """This rank's ratios by the one formula (``_C.form_figures``): its
        sums per second over one second against its ceilings."""
        return _C.form_figures(self.sums.kwargs(), 1.0,
                               peak_flops_per_sec=self.peak_flops_per_sec,
                               peak_bytes_per_sec=self.peak_bytes_per_sec,
                               devices=self.num_devices,
                               measured_flops_per_sec=self.measured_flops_per_sec)

    def __getattr__(self, name: str) -> Any:
        """A ratio of :meth:`figures` by name, or ``<field>_per_sec``: the
        field's sum per second (the share)."""
        if name.startswith("_") or name == "sums":
            raise AttributeError(name)
        if name in _RATIO_NAMES:
            return self.figures()[name]
        if name.endswith("_per_sec") and name[:-len("_per_sec")] in StepSums.__dataclass_fields__:
            return getattr(self.sums, name[:-len("_per_sec")])
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def comm_family(self, family: str) -> Dict[str, float]:
        """This rank's ``{kind: value}`` of a communication family."""
        return dict(self.comm).get(family, {})

    @property
    def phase_s(self) -> Dict[str, float]:
        """Seconds per step of each phase this rank marked in its window."""
        out = {}
        for name in PHASES:
            value = getattr(self, f"phase_{name}_s")
            if value is not None:
                out[name] = value
        return out

    @property
    def busy_s(self) -> Optional[float]:
        """Seconds per step this rank spent not waiting for its peers: the
        step period less exposed communication (None without phases)."""
        return busy_s(self.step_time_s, self.phase_s)

    @property
    def interval_step_time_s(self) -> Optional[float]:
        """Host seconds per step since the previous aggregation (waits in it excluded)."""
        if self.interval_s is None or self.interval_steps <= 0:
            return None
        return self.interval_s / self.interval_steps

    @classmethod
    def from_row(cls, row: Sequence[float]) -> "RankFigures":
        """A rank's figures from its row: this layout, or the one before
        (:mod:`._row_v5`). ValueError for any other."""
        values = [float(x) for x in row]
        if values and int(values[0]) == 5:
            kwargs = read_v5(values)
            return cls(**dict(kwargs, comm=comm_families(kwargs["comm"])))
        if not values or values[0] != ROW_LAYOUT or len(values) != len(ROW_FIELDS):
            raise ValueError(f"a rank row of layout {values[0] if values else None!r} and "
                             f"{len(values)} fields: this version reads layout {ROW_LAYOUT!r} "
                             f"({len(ROW_FIELDS)} fields) and 5")
        v = dict(zip(ROW_FIELDS, values))
        kwargs: Dict[str, Any] = {}
        comm: Dict[str, Dict[str, float]] = {family: {} for family in COMM_FAMILIES}
        record = {column for _, column in RECORD_COLUMNS}
        for name in ROW_FIELDS[1:]:
            family = _comm_field(name)
            if name in record:
                continue
            if family is None:
                kwargs[name] = int(v[name]) if name in _INTS else _opt(v[name])
            elif not math.isnan(v[name]):
                comm[family[0]][family[1]] = v[name]
        kwargs["comm"] = comm_families(comm)
        kwargs["sums"] = StepSums(**{name: _opt(v[column]) for name, column in RECORD_COLUMNS})
        return cls(**kwargs)

    def to_row(self) -> List[float]:
        """The row (:data:`ROW_FIELDS`; NaN for None)."""
        columns = dict((column, name) for name, column in RECORD_COLUMNS)
        row = [ROW_LAYOUT]
        for name in ROW_FIELDS[1:]:
            family = _comm_field(name)
            if name in columns:
                value = getattr(self.sums, columns[name])
            elif family is None:
                value = getattr(self, name)
            else:
                value = self.comm_family(family[0]).get(family[1])
            row.append(_NAN if value is None else float(value))
        return row


def comm_families(figures: Mapping[str, Any]) -> Tuple[Tuple[str, Dict[str, float]], ...]:
    """``RankFigures.comm`` from a mapping with the communication families:
    the non-empty ones, in :data:`COMM_FAMILIES` order."""
    return tuple((family, dict(figures[family])) for family in COMM_FAMILIES
                 if figures.get(family))


@functools.lru_cache(maxsize=None)
def _comm_field(name: str) -> Optional[Tuple[str, str]]:
    """(family, kind) of a per-kind communication row field, else None."""
    for family in COMM_FAMILIES:
        if name.startswith(family + "_") and name[len(family) + 1:] in COMM_KINDS:
            return family, name[len(family) + 1:]
    return None
