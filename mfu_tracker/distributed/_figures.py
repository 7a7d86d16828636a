"""Cross-rank aggregation of the step tracker's figures over ``torch.distributed``.

Each rank measures itself: its own model / executed FLOPs, tokens and step
periods, in its own ``Tracker`` window. At a logging interval -- never per
step -- every rank calls ``Tracker.metrics()`` (or :meth:`Tracker.aggregate`)
and ONE collective runs: an all-gather of a fixed-size float64 row per rank
(:data:`~._row.ROW_FIELDS`, ~500 bytes: the rank's window as the step
record's sums per second, :mod:`._row`) on a dedicated gloo process group over
CPU tensors. :func:`combine` turns the gathered rows into the global figures,
the same on every rank: every rank's sums per second added up, over one
second, against the ranks' ceilings added up, by the one formula of every
ratio (``csrc/core/steps/stats.h``, ``_C.form_figures``).

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
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

from .._native import _C
from .._validate import check_prefix
from ..device._telemetry import power_figures
from ..timing._metrics import format_metrics
from ..timing._roles import ROLES
from ..device._telemetry import power_figures
from ..timing._totals import FIELDS
from ..timing._waterfall import COMM_KINDS, PHASES
from ._row import (  # noqa: F401 -- the row's format, re-exported where it always was
    COMM_FAMILIES, ROW_FIELDS, ROW_LAYOUT, TELEMETRY_FIELDS, RankFigures, comm_families)

__all__ = ["RankFigures", "DistributedFigures"]


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
    per_step: Optional[Dict[str, float]] = None  # the step record's per-step fields: mean over ranks
    wait_ratio: Optional[float] = None         # device-weighted mean of the ranks' wait / step time

    @property
    def roles_ran(self) -> bool:
        """Whether any rank timed a post-training role in its window."""
        return any((getattr(r.sums, f"{role}_s", None) or 0.0) > 0 for r in self.ranks
                   for role in ROLES)

    @property
    def world_size(self) -> int:
        return len(self.ranks)

    def metrics(self, prefix: str = "throughput") -> Dict[str, float]:
        """The ``Tracker.metrics()`` keys of these figures (the one formatter,
        :mod:`mfu_tracker.timing._metrics`; a per-step field's figure is
        ``<field>_per_step``, as a tracker's); unavailable ones left out."""
        figures = dict(self.__dict__)
        figures.update({f"{name}_per_step": value for name, value in (self.per_step or {}).items()})
        return format_metrics(figures, check_prefix(prefix))


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


def _formed(sums: Dict[str, Optional[float]], ranks: Sequence[RankFigures],
            waterfall: Dict[str, Any]) -> Dict[str, Any]:
    """The one formula (``_C.form_figures``) over ``sums`` per second, against
    the ceilings of ``ranks`` added up (one that any rank lacks: unknown),
    with the waterfall's inputs ``waterfall`` (step_s, phase_s, per_step)."""
    return _C.form_figures(
        sums, 1.0, peak_flops_per_sec=_total([r.peak_flops_per_sec for r in ranks]),
        peak_bytes_per_sec=_total([r.peak_bytes_per_sec for r in ranks]),
        devices=float(sum(r.num_devices for r in ranks)),
        measured_flops_per_sec=_total([r.measured_flops_per_sec for r in ranks]), **waterfall)


def _waterfall_in(ranks: Sequence[RankFigures]) -> Dict[str, Any]:
    """What the job's waterfall is formed from: each phase's (and each
    per-step field's) share of every rank's step, weighted by the rank's
    peak -- the weights of the global MFU, sum_r P_r mfu_r / sum_r P_r --
    over the summed peak, so the job's shares are the peak-weighted mean of
    the ranks' and still add up to 1 with ``mfu``. A phase counts when every
    rank marked it (forward and backward: when every rank marked either);
    ``{}`` (no waterfall) unless every rank has phases, a peak and a step
    time."""
    peaks = [r.peak_flops_per_sec for r in ranks]
    times = [r.step_time_s for r in ranks]
    if not all(r.phase_s for r in ranks) or not all(p is not None and p > 0 for p in peaks) \
            or not all(t is not None and t > 0 for t in times):
        return {}

    def weighted(values: Sequence[float]) -> float:
        return math.fsum(p * (v / t) for p, v, t in zip(peaks, values, times))  # type: ignore[operator]

    phase_s = {name: weighted([r.phase_s[name] for r in ranks]) for name in PHASES
               if name not in ("forward", "backward") and all(name in r.phase_s for r in ranks)}
    if all("forward" in r.phase_s or "backward" in r.phase_s for r in ranks):
        for name in ("forward", "backward"):
            phase_s[name] = weighted([r.phase_s.get(name, 0.0) for r in ranks])
    per_step = {f.name: weighted([getattr(r.sums, f.name) for r in ranks]) for f in FIELDS
                if f.per_step and f.loss and all(getattr(r.sums, f.name) is not None for r in ranks)}
    return {"step_s": math.fsum(peaks), "phase_s": phase_s, "per_step": per_step}  # type: ignore[arg-type]


def _rank_shares(r: RankFigures) -> Optional[Dict[str, float]]:
    """One rank's waterfall, by the one formula over its own row."""
    if not r.phase_s or not r.step_time_s:
        return None
    per_step = {f.name: getattr(r.sums, f.name) for f in FIELDS if f.per_step}
    return _formed(r.sums.kwargs(), [r], {"step_s": r.step_time_s, "phase_s": r.phase_s,
                                          "per_step": per_step}).get("mfu_lost")


class Straggler(NamedTuple):
    """The job's phase seconds and its straggler (None: not formed)."""

    phase_s: Optional[Dict[str, float]]   # mean over ranks, seconds per step
    rank: Optional[int]                   # the rank with the most busy time
    lost: Optional[float]                 # the others' mean wait / the job's step time


def _phases_and_straggler(ranks: Tuple[RankFigures, ...], with_steps: bool) -> Straggler:
    """The job's phase seconds and straggler, when every rank marked phases
    (else None: the keys are left out).

    Phase seconds: the mean over ranks. Straggler: the rank with the most
    busy seconds per step (step period less exposed communication; lowest
    rank on ties); its ``straggler_lost`` is the other ranks' mean (busy_s -
    busy_r) over the job's step time (the slowest mean period): the share of
    the job's step time they spent waiting for it (0 at world size 1)."""
    if not with_steps or not all(r.phase_s for r in ranks):
        return Straggler(None, None, None)
    names = [name for name in PHASES if all(name in r.phase_s for r in ranks)]
    phase_s = {name: math.fsum(r.phase_s[name] for r in ranks) / len(ranks) for name in names}
    busy = [(r.busy_s, r.rank) for r in ranks]
    straggler = straggler_lost = None
    job_step = max(r.step_time_s for r in ranks if r.step_time_s is not None) \
        if any(r.step_time_s is not None for r in ranks) else None
    if all(b is not None for b, _ in busy) and job_step:
        top, straggler = max(busy, key=lambda item: (item[0], -item[1]))
        others = [b for b, rank in busy if rank != straggler]
        straggler_lost = (math.fsum(top - b for b in others) / len(others) / job_step  # type: ignore[operator]
                          if others else 0.0)
    return Straggler(phase_s, straggler, straggler_lost)


def _telemetry(ranks: Tuple[RankFigures, ...], achieved: Optional[float],
               tokens: Optional[float]) -> Dict[str, Optional[float]]:
    """The job's telemetry, each only when every rank has its part. Power
    adds up over ranks, so J/token and TFLOP/s per W are the job's; the SM
    clock is the mean, ``clock_ratio`` the lowest (the rank held back most),
    ``throttled`` 1 when any rank is."""
    out: Dict[str, Optional[float]] = {}
    power = _total([r.power_w for r in ranks])
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


def _per_step(ranks: Tuple[RankFigures, ...], with_steps: bool) -> Optional[Dict[str, float]]:
    """The step record's per-step fields (seconds per step): the mean over
    ranks, each only when every rank has it."""
    if not with_steps:
        return None
    out = {}
    for f in FIELDS:
        values = [getattr(r.sums, f.name) for r in ranks]
        if f.per_step and all(v is not None for v in values):
            out[f.name] = math.fsum(values) / len(values)  # type: ignore[arg-type]
    return out or None


def _wait_ratio(ranks: Tuple[RankFigures, ...], with_steps: bool) -> Optional[float]:
    """The share of the job's device time spent waiting: each rank's wait
    (seconds per step) over its own step period, weighted by its devices
    (the plain mean when every rank has as many); None unless every rank
    has both. Never the sum of the ranks' ratios, nor one rate over the job's
    wall time: each pool waits on its own clock."""
    if not with_steps:
        return None
    rows = [(r.num_devices, r.sums.wait_s, r.step_time_s) for r in ranks]
    if any(w is None or math.isnan(w) or t is None or not t > 0 for _, w, t in rows):
        return None
    return math.fsum(n * w / t for n, w, t in rows) / math.fsum(n for n, _, _ in rows)


def _job(ranks: Tuple[RankFigures, ...], with_steps: bool) -> Dict[str, Any]:
    """The job's ratios and waterfall by the one formula: every rank's sums
    per second added up (a field any rank lacks: unknown; none without steps
    on every rank) over one second, against the ranks' ceilings added up --
    sum_r A_r / sum_r P_r for MFU, HFU, MBU, ``mfu_language``,
    ``mfu_vs_measured`` (over the measured peaks), ``mfu_mixed`` (over the
    devices: the ranks' values weighted by their devices)."""
    sums = {f.name: _total([getattr(r.sums, f.name) for r in ranks]) if with_steps else None
            for f in FIELDS if not f.per_step}
    return _formed(sums, ranks, _waterfall_in(ranks) if with_steps else {})


def combine(ranks: Sequence[RankFigures]) -> DistributedFigures:
    """Global figures from every rank's :class:`RankFigures` (see the module doc).

    Pure arithmetic, no communication: the tests check it by hand.
    """
    ranks = tuple(ranks)
    if not ranks:
        raise ValueError("combine() needs at least one rank")
    with_steps = all(r.steps > 0 for r in ranks)
    job = _job(ranks, with_steps)
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

    straggler = _phases_and_straggler(ranks, with_steps)
    lost = job.get("mfu_lost")
    concentrated = _concentrated(ranks, [_rank_shares(r) for r in ranks]) \
        if lost is not None else None
    achieved, tokens = job["achieved_flops_per_sec"], job["tokens_per_sec"]
    return DistributedFigures(
        mfu_lost_rank=concentrated,
        ledger_model_flops=_total([r.ledger_model_flops for r in ranks]),
        per_step=_per_step(ranks, with_steps),
        wait_ratio=_wait_ratio(ranks, with_steps),
        **_telemetry(ranks, achieved, tokens),
        **_communication(ranks, with_steps),
        mfu_mixed=job["mfu_mixed"],
        mfu_vs_measured=job["mfu_vs_measured"],
        mfu_language=job["mfu_language"],
        mfu_lost=lost,
        phase_s=straggler.phase_s,
        straggler_rank=straggler.rank,
        straggler_lost=straggler.lost,
        ranks=ranks,
        mfu=job["mfu"],
        hfu=job["hfu"],
        mbu=job["mbu"],
        achieved_flops_per_sec=achieved,
        tokens_per_sec=tokens,
        tokens_per_sec_per_device=_ratio(tokens, float(devices)),
        peak_flops_per_sec=_total([r.peak_flops_per_sec for r in ranks]),
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
