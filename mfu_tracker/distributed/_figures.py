"""Cross-rank aggregation of the step tracker's figures over ``torch.distributed``.

Each rank measures itself: its own model / executed FLOPs, tokens and step
periods, in its own ``Tracker`` window. At a logging interval -- never per
step -- every rank calls ``Tracker.metrics()`` (or :meth:`Tracker.aggregate`)
and ONE collective runs: an all-gather of a fixed-size float64 row per rank
(:data:`ROW_FIELDS`, ~150 bytes) on a dedicated gloo process group over CPU
tensors. :func:`combine` turns the gathered rows into the global figures, the
same on every rank.

Why a dedicated gloo group:

* isolation -- a rank that calls ``metrics()`` at a different step than the
  others can never pair its gather with the training's own collectives
  (gradient all-reduce, FSDP all-gathers): those run on other groups;
* no GPU involvement -- with NCCL the row would have to go to the GPU and the
  result come back, a host-device synchronization at every logging step; a
  CPU tensor on gloo touches no stream;
* a bounded wait -- the group is created with ``timeout=`` so a gather whose
  peers never arrive raises after that many seconds instead of hanging.

Global figures (rank r has achieved model FLOP/s ``A_r = F_r / T_r`` over its
own window of ``T_r`` seconds, and peak ``P_r``; both are this rank's share
when parallel degrees are declared, see ``Tracker``)::

    MFU = sum_r A_r / sum_r P_r          (HFU, MBU alike; tokens/s = sum_r tok_r / T_r)

that is, the cluster's aggregate model FLOP/s over the cluster's aggregate
peak -- equivalently the peak-weighted mean of the per-rank MFUs, so
``mfu_rank_min <= mfu <= mfu_rank_max`` always holds. Why rates and not
``sum_r F_r / max_r T_r / sum_r P_r`` (total work over the longest window):

* a step tracker times step *boundaries*, so each rank's period already
  contains every wait for its peers (gradient all-reduce, the previous
  aggregation). A straggler therefore lowers every rank's rate: nothing is
  hidden by summing rates, and in synchronous training ``T_r`` are equal up to
  boundary jitter, where the two definitions agree;
* windows need not hold the same number of steps: with a GPU clock a rank
  may have one step still unresolved, or ranks may have different warm-up.
  Total work over the longest window is then biased low by ~1/window; a sum
  of per-window rates is not;
* no rank-0-times-world-size shortcut: every rank's own work and time count.

Stragglers. Under synchronous data parallelism every rank's step *period* is
the slowest rank's (the others wait inside the all-reduce), so periods cannot
name a straggler. What each rank can measure is its *own* host time from the
end of the previous aggregation (when all ranks left it together) to entering
this one: the interval step time. The rank that takes longest to arrive is
``slowest_rank``; ``step_time_rank_max`` is its seconds per step over that
interval, ``step_time_rank_min`` the fastest rank's. This names a straggler
whenever ranks run between aggregations without waiting for each other (a
bare loop, pipeline stages, independent work); under DDP / FSDP the ranks
sync every step and the interval times are equal up to noise -- there uneven
*work* shows instead in the per-rank MFU spread (``mfu_rank_min`` /
``mfu_rank_max``), and a slow *device* with equal work is invisible to
step-boundary timing on any rank.

The straggler *culprit* under DDP / FSDP comes from the phases (docs/waterfall.md):
when every rank marked phases, each row carries its seconds per step per
phase, and a rank's *busy* time is its step period less its exposed
communication (the time it waited for its peers inside collectives) and
pipeline bubble. The rank with
the most busy time is ``straggler_rank``; ``straggler_lost`` is the other
ranks' mean (busy_straggler - busy_r) over the job's step time -- the share of
the step they spent waiting for it. The communication observer marks the
waits of every collective (DDP, FSDP, DTensor, p2p) with no hook; without
it (``comm=False`` and no hook) busy time equals the period and the
straggler figures only reflect noise (``straggler_lost`` near 0). The global waterfall
(``mfu_lost/*``) is the peak-weighted mean of the ranks' shares -- the weights
of the global MFU -- so it still adds up to 1 with ``mfu``; ``phase_s/*`` is
the mean over ranks. Each ``metrics()`` call's own time (the gather's wait
above all) is left out of the step it falls in, so a fast rank's wait for a
slow one no longer lowers its MFU.

``mfu_language`` (a VLM's language model alone) is the
peak-weighted mean of the ranks' values, like ``mfu``. Mixed precision, the
measured ceiling and telemetry (docs/mixed-precision.md) are global too, when every rank
has them: ``mfu_mixed`` is the device-weighted mean of
the ranks' values (each already per device); ``mfu_vs_measured`` =
sum_r A_r / sum_r measured_r; ``power_w`` is the sum over ranks of each
rank's own device reading, so ``energy_j_per_token`` and ``tflops_per_watt``
are the job's; ``sm_clock_mhz`` is the mean, ``clock_ratio`` the lowest and
``throttled`` 1 when any rank reports a throttle reason.

Communication (docs/communication.md) is global the same way, when every rank observes
its own: payload bytes and exposed seconds per kind are the mean over ranks,
bus bandwidth, ``net_utilization`` and ``comm_overlap`` the mean over the
ranks that measured them, ``comm_s_max`` the largest rank's exposed total.
A rank's busy time leaves out its exposed communication *and* its pipeline
bubble (both are waiting for peers).

The collective itself (the side group, the gather, the bounded wait) is in
:mod:`mfu_tracker.distributed._collective`.

Faults. A gather that fails or times out (a rank that does not reach it, a
peer that exited) gives one ``RuntimeWarning`` naming the cause, the local
figures instead, and ends aggregation for that tracker: gloo cannot re-pair
ranks that fell out of step, so every later ``metrics()`` is local (no wait).
Ranks that aggregate at different step counts (mismatched logging intervals)
still get global figures, with one warning. Nothing raises into the loop.

"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from .._validate import check_prefix
from ..device._telemetry import power_figures
from ..timing._metrics import format_metrics
from ..timing._waterfall import COMM_KINDS, PHASES, busy_s, closing_share, waterfall

__all__ = ["RankFigures", "DistributedFigures"]

#: The first value of every row: bumped when ROW_FIELDS changes, so rows of
#: different layouts (ranks running different versions) never combine.
#: (Fields are only ever appended, and rows of different lengths cannot pair
#: in one all-gather, which needs equal sizes; the value still says which
#: layout a row has: 2.0 added the mixed-precision, measured-peak and
#: telemetry fields; 3.0 mfu_language and the job ledger's interval FLOPs;
#: 4.0 the communication fields; 5.0 the over-compute.)
ROW_LAYOUT = 5.0

#: The float64 row each rank contributes, in order. FLOP/s, bytes/s, tokens/s
#: and peaks are this rank's *share* (divided by the declared model-parallel
#: degree); NaN = unavailable.
ROW_FIELDS: Tuple[str, ...] = (
    "layout",                  # ROW_LAYOUT
    "rank",                    # global rank
    "boundaries",              # step() calls so far
    "steps",                   # steps in the window
    "window_s",                # sum of the window's step periods
    "step_time_s",             # mean step period in the window
    "step_time_min_s",
    "step_time_max_s",
    "achieved_flops_per_sec",  # model FLOPs / window_s
    "executed_flops_per_sec",  # executed FLOPs / window_s (needs the peak: hfu x peak)
    "achieved_bytes_per_sec",  # param bytes / window_s (needs the bandwidth: mbu x bw)
    "tokens_per_sec",
    "peak_flops_per_sec",      # per-device peak x num_gpus
    "peak_bytes_per_sec",      # per-device bandwidth x num_gpus
    "num_devices",             # num_gpus
    "model_parallel",          # tensor x sequence x context x pipeline degree
    "interval_s",              # host seconds from the previous aggregation's end to this one
    "interval_steps",          # step() calls in that interval
    "mfu",                     # this rank's MFU (achieved / peak)
    # seconds per step of each marked phase in the window (NaN = unmarked)
    "phase_data_s",
    "phase_forward_s",
    "phase_backward_s",
    "phase_optimizer_s",
    "phase_communication_s",
    # mixed precision, measured peak, telemetry (NaN = unavailable on this rank)
    "mfu_mixed",               # this rank's mixed-precision utilization (per device)
    "measured_flops_per_sec",  # the measured GEMM peak x num_gpus (measure_peak=True)
    "power_w",                 # board power since this rank's previous reading, W
    "sm_clock_mhz",
    "clock_ratio",
    "throttled",               # 1.0 / 0.0
    # a VLM's language model alone (NaN = unavailable on this rank)
    "mfu_language",            # this rank's MFU of the language model alone (a VLM's tower out)
    # the job ledger: model FLOPs of the steps since this rank's previous logged
    # metrics() (its share), for the job ledger (NaN = unknown)
    "ledger_model_flops",
    # communication (NaN = not observed, or none of that kind)
    "phase_pipeline_bubble_s",  # seconds per step a pipeline stage waited
    "comm_observed",           # 1.0 when the rank observes its communication
    *(f"comm_bytes_{kind}" for kind in COMM_KINDS),      # payload bytes per step
    *(f"comm_s_{kind}" for kind in COMM_KINDS),          # exposed seconds per step
    *(f"comm_busbw_gbs_{kind}" for kind in COMM_KINDS),  # bus bandwidth, GB/s
    "net_utilization",
    "comm_overlap",
    # over-compute: executed FLOPs beyond the model convention, not recompute
    "overcompute_flops_per_sec",  # over-compute FLOPs / window_s (the waterfall books it to compute)
)
#: The per-kind communication families a row carries (``{family}_{kind}``).
COMM_FAMILIES: Tuple[str, ...] = ("comm_bytes", "comm_s", "comm_busbw_gbs")
#: The telemetry readings a row carries (the rest is derived in combine()).
TELEMETRY_FIELDS: Tuple[str, ...] = ("power_w", "sm_clock_mhz", "clock_ratio", "throttled")

_NAN = float("nan")


def _opt(value: float) -> Optional[float]:
    return None if value is None or math.isnan(value) else float(value)


@dataclass(frozen=True)
class RankFigures:
    """One rank's figures as gathered (None = unavailable on that rank).

    Rates and peaks are the rank's share: with a declared model-parallel
    degree d they are the figures given to the tracker divided by d.
    """

    rank: int
    boundaries: int
    steps: int
    window_s: Optional[float]
    step_time_s: Optional[float]
    step_time_min_s: Optional[float]
    step_time_max_s: Optional[float]
    achieved_flops_per_sec: Optional[float]
    executed_flops_per_sec: Optional[float]
    achieved_bytes_per_sec: Optional[float]
    tokens_per_sec: Optional[float]
    peak_flops_per_sec: Optional[float]
    peak_bytes_per_sec: Optional[float]
    num_devices: int
    model_parallel: int
    interval_s: Optional[float]
    interval_steps: int
    mfu: Optional[float]
    phase_data_s: Optional[float] = None
    phase_forward_s: Optional[float] = None
    phase_backward_s: Optional[float] = None
    phase_optimizer_s: Optional[float] = None
    phase_communication_s: Optional[float] = None
    mfu_mixed: Optional[float] = None
    measured_flops_per_sec: Optional[float] = None
    power_w: Optional[float] = None
    sm_clock_mhz: Optional[float] = None
    clock_ratio: Optional[float] = None
    throttled: Optional[float] = None
    mfu_language: Optional[float] = None
    ledger_model_flops: Optional[float] = None
    phase_pipeline_bubble_s: Optional[float] = None
    comm_observed: Optional[float] = None
    comm: Tuple[Tuple[str, Dict[str, float]], ...] = ()  # (family, {kind: value})
    net_utilization: Optional[float] = None
    comm_overlap: Optional[float] = None

    def comm_family(self, family: str) -> Dict[str, float]:
        """This rank's ``{kind: value}`` of a communication family."""
        return dict(self.comm).get(family, {})
    overcompute_flops_per_sec: Optional[float] = None

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
    def hfu(self) -> Optional[float]:
        """Executed FLOP/s over the peak (None when either is unknown)."""
        return _ratio(self.executed_flops_per_sec, self.peak_flops_per_sec)

    @property
    def overcompute(self) -> Optional[float]:
        """Over-compute FLOP/s over the peak (the waterfall's compute, not
        recompute; None when either is unknown)."""
        return _ratio(self.overcompute_flops_per_sec, self.peak_flops_per_sec)

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
        v = dict(zip(ROW_FIELDS, (float(x) for x in row)))
        ints = ("rank", "boundaries", "steps", "num_devices", "model_parallel", "interval_steps")
        kwargs: Dict[str, Any] = {}
        comm = {family: {} for family in COMM_FAMILIES}  # type: Dict[str, Dict[str, float]]
        for name in ROW_FIELDS[1:]:
            family = _comm_field(name)
            if family is None:
                kwargs[name] = int(v[name]) if name in ints else _opt(v[name])
            elif not math.isnan(v[name]):
                comm[family[0]][family[1]] = v[name]
        kwargs["comm"] = comm_families(comm)
        return cls(**kwargs)

    def to_row(self) -> List[float]:
        row = [ROW_LAYOUT]
        for name in ROW_FIELDS[1:]:
            family = _comm_field(name)
            value = (getattr(self, name) if family is None
                     else self.comm_family(family[0]).get(family[1]))
            row.append(_NAN if value is None else float(value))
        return row


def comm_families(figures: Mapping[str, Any]) -> Tuple[Tuple[str, Dict[str, float]], ...]:
    """``RankFigures.comm`` from a mapping with the communication families:
    the non-empty ones, in :data:`COMM_FAMILIES` order."""
    return tuple((family, dict(figures[family])) for family in COMM_FAMILIES
                 if figures.get(family))


def _comm_field(name: str) -> Optional[Tuple[str, str]]:
    """(family, kind) of a per-kind communication row field, else None."""
    for family in COMM_FAMILIES:
        if name.startswith(family + "_") and name[len(family) + 1:] in COMM_KINDS:
            return family, name[len(family) + 1:]
    return None


def _total(values: Sequence[Optional[float]]) -> Optional[float]:
    """Sum over ranks, or None when any rank lacks the figure (never a partial sum)."""
    if not values or any(v is None for v in values):
        return None
    return float(math.fsum(values))  # type: ignore[arg-type]


def _ratio(num: Optional[float], den: Optional[float]) -> Optional[float]:
    if num is None or den is None or not den > 0:
        return None
    return num / den


@dataclass(frozen=True)
class DistributedFigures:
    """The global figures of one aggregation (None = unavailable).

    Sums over ranks are reported only when *every* rank has the figure.
    """

    ranks: Tuple[RankFigures, ...]
    mfu: Optional[float]                       # sum_r A_r / sum_r P_r
    hfu: Optional[float]                       # sum_r executed_r / sum_r P_r
    mbu: Optional[float]                       # sum_r bytes_r / sum_r bandwidth_r
    achieved_flops_per_sec: Optional[float]    # sum_r A_r
    tokens_per_sec: Optional[float]            # sum_r tokens_r / T_r
    tokens_per_sec_per_device: Optional[float]  # tokens_per_sec / sum_r num_devices_r
    peak_flops_per_sec: Optional[float]        # sum_r P_r: the MFU denominator
    num_devices: int
    step_time_s: Optional[float]               # max_r of the window mean step period: the job's pace
    step_time_min_s: Optional[float]           # min over ranks of the window minimum
    step_time_max_s: Optional[float]           # max over ranks of the window maximum
    mfu_rank_min: Optional[float]
    mfu_rank_mean: Optional[float]             # unweighted mean of per-rank MFU
    mfu_rank_max: Optional[float]
    slowest_rank: Optional[int]                # argmax of interval step time (lowest rank on ties)
    step_time_rank_max: Optional[float]        # its interval step time, s
    step_time_rank_min: Optional[float]        # the fastest rank's interval step time, s
    steps_match: bool                          # every rank aggregated after the same step() count
    mfu_lost: Optional[Dict[str, float]] = None  # the waterfall: peak-weighted mean of the ranks'
    phase_s: Optional[Dict[str, float]] = None   # mean over ranks of seconds per step per phase
    straggler_rank: Optional[int] = None       # argmax of busy seconds per step (phases marked)
    straggler_lost: Optional[float] = None     # the others' mean wait for it / the job's step time
    mfu_mixed: Optional[float] = None          # device-weighted mean of the ranks' mfu_mixed
    mfu_vs_measured: Optional[float] = None    # sum_r A_r / sum_r measured peak_r
    power_w: Optional[float] = None            # sum over ranks
    energy_j_per_token: Optional[float] = None  # power_w / tokens_per_sec
    tflops_per_watt: Optional[float] = None    # achieved TFLOP/s / power_w
    sm_clock_mhz: Optional[float] = None       # mean over ranks
    clock_ratio: Optional[float] = None        # lowest over ranks (the most held back)
    throttled: Optional[float] = None          # 1 when any rank reports a throttle reason
    comm_bytes: Optional[Dict[str, float]] = None      # mean over ranks, per kind
    comm_s: Optional[Dict[str, float]] = None          # mean over ranks, per kind
    comm_busbw_gbs: Optional[Dict[str, float]] = None  # mean over the ranks that timed it
    comm_s_max: Optional[float] = None         # the largest rank's exposed total
    net_utilization: Optional[float] = None    # mean over the ranks that have it
    comm_overlap: Optional[float] = None       # mean over the ranks that have it
    mfu_language: Optional[float] = None       # peak-weighted mean of the ranks' mfu_language
    mfu_lost_rank: Optional[Dict[str, float]] = None  # per loss: the rank with the largest share
    ledger_model_flops: Optional[float] = None  # sum over ranks (the job ledger's interval)

    @property
    def world_size(self) -> int:
        return len(self.ranks)

    def metrics(self, prefix: str = "throughput") -> Dict[str, float]:
        """The ``Tracker.metrics()`` keys of these figures (the one formatter,
        :mod:`mfu_tracker.timing._metrics`); unavailable ones left out."""
        return format_metrics(self.__dict__, check_prefix(prefix))


def _concentrated(ranks: Tuple[RankFigures, ...],
                  shares: List[Optional[Dict[str, float]]]) -> Optional[Dict[str, float]]:
    """Per waterfall loss, the rank with the largest share of its own step
    (lowest rank on ties; docs/distributed.md): only across ranks that all
    have the loss, and only with more than one rank."""
    if len(ranks) < 2 or not all(w is not None for w in shares):
        return None
    common = [k for k in shares[0] if all(k in w for w in shares)]  # type: ignore[union-attr]
    return {k: float(max(zip(shares, ranks), key=lambda wr: (wr[0][k], -wr[1].rank))[1].rank)  # type: ignore[index]
            for k in common}


def _waterfall(ranks: Tuple[RankFigures, ...], with_steps: bool) -> Tuple[
        Optional[Dict[str, float]], Optional[Dict[str, float]], Optional[int], Optional[float]]:
    """The global waterfall, phase seconds and straggler, when every rank
    marked phases (else all None: the keys are left out).

    Waterfall: the peak-weighted mean of the ranks' shares -- the weights
    of the global MFU (sum_r P_r mfu_r / sum_r P_r), so the global shares and
    MFU still add up to 1 (``other`` closes the sum). Phase seconds: the mean
    over ranks. Straggler: the rank with the most busy seconds per step
    (step period less exposed communication; lowest rank on ties); its
    ``straggler_lost`` is the other ranks' mean (busy_s - busy_r) over the
    job's step time (the slowest mean period): the share of the job's step
    time they spent waiting for it (0 at world size 1)."""
    if not with_steps or not all(r.phase_s for r in ranks):
        return None, None, None, None
    names = [name for name in PHASES if all(name in r.phase_s for r in ranks)]
    phase_s = {name: math.fsum(r.phase_s[name] for r in ranks) / len(ranks) for name in names}
    lost: Optional[Dict[str, float]] = None
    shares = [waterfall(r.mfu, r.hfu, r.step_time_s, r.phase_s, r.overcompute) for r in ranks]
    peaks = [r.peak_flops_per_sec for r in ranks]
    if all(w is not None for w in shares) and all(p is not None and p > 0 for p in peaks):
        total_peak = math.fsum(peaks)  # type: ignore[arg-type]
        common = [k for k in shares[0] if all(k in w for w in shares)]  # type: ignore[union-attr]
        lost = {k: math.fsum(p * w[k] for p, w in zip(peaks, shares)) / total_peak  # type: ignore[index,operator]
                for k in common if k != "other"}
        mfu = math.fsum(p * r.mfu for p, r in zip(peaks, ranks)) / total_peak  # type: ignore[operator]
        lost["other"] = _closing(mfu, lost)
    busy = [(r.busy_s, r.rank) for r in ranks]
    straggler = straggler_lost = None
    job_step = max(r.step_time_s for r in ranks if r.step_time_s is not None) \
        if any(r.step_time_s is not None for r in ranks) else None
    if all(b is not None for b, _ in busy) and job_step:
        top, straggler = max(busy, key=lambda item: (item[0], -item[1]))
        others = [b for b, rank in busy if rank != straggler]
        straggler_lost = (math.fsum(top - b for b in others) / len(others) / job_step  # type: ignore[operator]
                          if others else 0.0)
    return lost, phase_s, straggler, straggler_lost


def _closing(mfu: float, lost: Dict[str, float]) -> float:
    """``other``: what closes ``mfu + sum(lost)`` to exactly 1."""
    return closing_share([mfu, *lost.values()])


def _precision_and_telemetry(ranks: Tuple[RankFigures, ...], with_steps: bool,
                             achieved: Optional[float], tokens: Optional[float],
                             power: Optional[float]) -> Dict[str, Optional[float]]:
    """The mixed-precision, measured-peak and telemetry figures of the job
    (each only when every rank has its part, like every global figure).

    ``mfu_mixed``: the ranks' per-device values weighted by their devices,
    i.e. the share of the job's device-time the work would need at each
    dtype's peak. ``mfu_vs_measured`` = sum_r A_r / sum_r measured_r, as
    ``mfu``. Power adds up over ranks, so J/token and TFLOP/s per W are the
    job's; the SM clock is the mean, ``clock_ratio`` the lowest (the rank
    held back most), ``throttled`` 1 when any rank is."""
    out: Dict[str, Optional[float]] = {}
    mixed = [r.mfu_mixed for r in ranks]
    if with_steps and all(m is not None for m in mixed):
        devices = math.fsum(r.num_devices for r in ranks)
        out["mfu_mixed"] = math.fsum(m * r.num_devices for m, r in zip(mixed, ranks)) / devices  # type: ignore[operator]
    out["mfu_vs_measured"] = _ratio(achieved, _total([r.measured_flops_per_sec for r in ranks]))
    if power is not None:
        out["power_w"] = power
        out.update(power_figures(power, achieved, tokens))
    clocks = _total([r.sm_clock_mhz for r in ranks])
    out["sm_clock_mhz"] = None if clocks is None else clocks / len(ranks)
    ratios = [r.clock_ratio for r in ranks]
    out["clock_ratio"] = min(ratios) if all(v is not None for v in ratios) else None  # type: ignore[type-var]
    throttled = [r.throttled for r in ranks]
    out["throttled"] = max(throttled) if all(v is not None for v in throttled) else None  # type: ignore[type-var]
    return out


def _mean(values: Sequence[Optional[float]]) -> Optional[float]:
    """Mean over the values present, None when none is."""
    present = [v for v in values if v is not None]
    return math.fsum(present) / len(present) if present else None


def _communication(ranks: Tuple[RankFigures, ...], with_steps: bool) -> Dict[str, Any]:
    """The job's communication, when every rank observes its own: bytes and
    exposed seconds per kind are the mean over ranks (a rank without a kind
    had none of it), bus bandwidth, net utilization and overlap the mean over
    the ranks that measured them, ``comm_s_max`` the largest rank's total."""
    if not with_steps or not all(r.comm_observed for r in ranks):
        return {}
    out: Dict[str, Any] = {}
    n = len(ranks)
    for family in ("comm_bytes", "comm_s"):
        kinds = [k for k in COMM_KINDS if any(k in r.comm_family(family) for r in ranks)]
        out[family] = {k: math.fsum(r.comm_family(family).get(k, 0.0) for r in ranks) / n
                       for k in kinds}
    busbw = {k: _mean([r.comm_family("comm_busbw_gbs").get(k) for r in ranks])
             for k in COMM_KINDS}
    out["comm_busbw_gbs"] = {k: v for k, v in busbw.items() if v is not None}
    if out["comm_s"]:  # some rank waited for a collective
        out["comm_s_max"] = max(math.fsum(r.comm_family("comm_s").values()) for r in ranks)
    out["net_utilization"] = _mean([r.net_utilization for r in ranks])
    out["comm_overlap"] = _mean([r.comm_overlap for r in ranks])
    return out


def _mfu_language(ranks: Tuple[RankFigures, ...], with_steps: bool) -> Optional[float]:
    """The job's MFU of the language model alone: the ranks' values weighted
    by their peaks, the weights of the global ``mfu`` (each rank's is its
    language FLOP/s over its peak), when every rank has one."""
    values = [r.mfu_language for r in ranks]
    peaks = [r.peak_flops_per_sec for r in ranks]
    if not with_steps or any(v is None for v in values) or any(p is None for p in peaks):
        return None
    total = math.fsum(peaks)  # type: ignore[arg-type]
    return math.fsum(v * p for v, p in zip(values, peaks)) / total if total > 0 else None  # type: ignore[operator]


def combine(ranks: Sequence[RankFigures]) -> DistributedFigures:
    """Global figures from every rank's :class:`RankFigures` (see the module doc).

    Pure arithmetic, no communication: the tests check it by hand.
    """
    ranks = tuple(ranks)
    if not ranks:
        raise ValueError("combine() needs at least one rank")
    with_steps = all(r.steps > 0 for r in ranks)
    achieved = _total([r.achieved_flops_per_sec for r in ranks]) if with_steps else None
    executed = _total([r.executed_flops_per_sec for r in ranks]) if with_steps else None
    moved = _total([r.achieved_bytes_per_sec for r in ranks]) if with_steps else None
    tokens = _total([r.tokens_per_sec for r in ranks]) if with_steps else None
    peak = _total([r.peak_flops_per_sec for r in ranks])
    bandwidth = _total([r.peak_bytes_per_sec for r in ranks])
    devices = sum(r.num_devices for r in ranks)

    mfus = [r.mfu for r in ranks]
    have_mfu = with_steps and all(m is not None for m in mfus)
    means = [r.step_time_s for r in ranks]
    mins = [r.step_time_min_s for r in ranks]
    maxes = [r.step_time_max_s for r in ranks]

    intervals = [(r.interval_step_time_s, r.rank) for r in ranks]
    slowest = fastest = None
    if all(t is not None for t, _ in intervals):
        slowest = max(intervals, key=lambda item: (item[0], -item[1]))
        fastest = min(intervals, key=lambda item: (item[0], item[1]))

    lost, phase_s, straggler, straggler_lost = _waterfall(ranks, with_steps)
    power = _total([r.power_w for r in ranks])
    concentrated = _concentrated(ranks, [waterfall(r.mfu, r.hfu, r.step_time_s, r.phase_s)
                                         for r in ranks]) if lost is not None else None
    return DistributedFigures(
        mfu_lost_rank=concentrated,
        ledger_model_flops=_total([r.ledger_model_flops for r in ranks]),
        **_precision_and_telemetry(ranks, with_steps, achieved, tokens, power),
        **_communication(ranks, with_steps),
        mfu_language=_mfu_language(ranks, with_steps),
        mfu_lost=lost,
        phase_s=phase_s,
        straggler_rank=straggler,
        straggler_lost=straggler_lost,
        ranks=ranks,
        mfu=_ratio(achieved, peak),
        hfu=_ratio(executed, peak),
        mbu=_ratio(moved, bandwidth),
        achieved_flops_per_sec=achieved,
        tokens_per_sec=tokens,
        tokens_per_sec_per_device=_ratio(tokens, float(devices)),
        peak_flops_per_sec=peak,
        num_devices=devices,
        step_time_s=max(means) if with_steps and None not in means else None,  # type: ignore[type-var]
        step_time_min_s=min(mins) if with_steps and None not in mins else None,  # type: ignore[type-var]
        step_time_max_s=max(maxes) if with_steps and None not in maxes else None,  # type: ignore[type-var]
        mfu_rank_min=min(mfus) if have_mfu else None,  # type: ignore[type-var]
        mfu_rank_mean=math.fsum(mfus) / len(mfus) if have_mfu else None,  # type: ignore[arg-type]
        mfu_rank_max=max(mfus) if have_mfu else None,  # type: ignore[type-var]
        slowest_rank=None if slowest is None else slowest[1],
        step_time_rank_max=None if slowest is None else slowest[0],
        step_time_rank_min=None if fastest is None else fastest[0],
        steps_match=len({r.boundaries for r in ranks}) == 1,
    )
