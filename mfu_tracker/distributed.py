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

Faults. A gather that fails or times out (a rank that does not reach it, a
peer that exited) gives one ``RuntimeWarning`` naming the cause, the local
figures instead, and ends aggregation for that tracker: gloo cannot re-pair
ranks that fell out of step, so every later ``metrics()`` is local (no wait).
Ranks that aggregate at different step counts (mismatched logging intervals)
still get global figures, with one warning. Nothing raises into the loop.

torch is imported only when a tracker is actually distributed.
"""
from __future__ import annotations

import math
import sys
import time
import warnings
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

__all__ = ["RankFigures", "DistributedFigures", "combine", "ROW_FIELDS", "DEFAULT_TIMEOUT_S"]

#: Seconds a rank waits in the aggregation for the others before it gives up
#: (one warning, local figures from then on). Ranks reach a logging step
#: within about one step of each other in synchronous training; this leaves
#: room for a slow step plus a checkpoint write.
DEFAULT_TIMEOUT_S = 120.0

_LAYOUT = 1.0  # bumped when ROW_FIELDS changes: rows of different layouts never combine

#: The float64 row each rank contributes, in order. FLOP/s, bytes/s, tokens/s
#: and peaks are this rank's *share* (divided by the declared model-parallel
#: degree); NaN = unavailable.
ROW_FIELDS: Tuple[str, ...] = (
    "layout",                  # _LAYOUT
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
)
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
        for name in ROW_FIELDS[1:]:
            kwargs[name] = int(v[name]) if name in ints else _opt(v[name])
        return cls(**kwargs)

    def to_row(self) -> List[float]:
        row = [_LAYOUT]
        for name in ROW_FIELDS[1:]:
            value = getattr(self, name)
            row.append(_NAN if value is None else float(value))
        return row


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

    @property
    def world_size(self) -> int:
        return len(self.ranks)

    def metrics(self, prefix: str = "throughput") -> Dict[str, float]:
        """The ``Tracker.metrics()`` keys of these figures; unavailable ones left out."""
        tflops = lambda v: None if v is None else v * 1e-12  # noqa: E731
        values = {
            "mfu": self.mfu,
            "hfu": self.hfu,
            "mbu": self.mbu,
            "tokens_per_sec": self.tokens_per_sec,
            "achieved_tflops": tflops(self.achieved_flops_per_sec),
            "step_time_s": self.step_time_s,
            "step_time_min_s": self.step_time_min_s,
            "step_time_max_s": self.step_time_max_s,
            "peak_tflops": tflops(self.peak_flops_per_sec),
            "tokens_per_sec_per_device": self.tokens_per_sec_per_device,
            "mfu_rank_min": self.mfu_rank_min,
            "mfu_rank_mean": self.mfu_rank_mean,
            "mfu_rank_max": self.mfu_rank_max,
            "step_time_rank_max": self.step_time_rank_max,
            "step_time_rank_min": self.step_time_rank_min,
            "slowest_rank": None if self.slowest_rank is None else float(self.slowest_rank),
        }
        return {f"{prefix}/{k}": float(v) for k, v in values.items() if v is not None}


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

    return DistributedFigures(
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


# ---------------------------------------------------------------------------
# The collective
# ---------------------------------------------------------------------------

def _dist() -> Any:
    """torch.distributed if torch is already imported and a process group is up."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    dist = getattr(torch, "distributed", None)
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return None
    return dist


def _process_group_initialized() -> bool:
    """Whether a default ``torch.distributed`` process group exists (torch not imported: False)."""
    return _dist() is not None


class _Aggregator:
    """The per-tracker collective state: a dedicated gloo group, counters, warnings.

    Created by ``Tracker`` on every rank (group creation is collective: all
    ranks create their trackers in the same order). World size 1: no group,
    no collective.
    """

    __slots__ = ("rank", "world_size", "timeout_s", "group", "failed", "aggregations",
                 "collectives", "failures", "_last_end", "_last_boundaries",
                 "_warned_mismatch")

    def __init__(self, timeout_s: float) -> None:
        import datetime

        import torch.distributed as dist

        self.rank = dist.get_rank()
        self.world_size = dist.get_world_size()
        self.timeout_s = timeout_s
        self.group: Any = None
        self.failed: Optional[str] = None
        self.aggregations = 0  # aggregate() calls
        self.collectives = 0   # all-gathers started
        self.failures = 0
        self._warned_mismatch = False
        if self.world_size > 1:
            if not dist.is_gloo_available():
                self._fail("this torch build has no gloo backend for the side group", 4)
            else:
                try:
                    self.group = dist.new_group(
                        backend="gloo", timeout=datetime.timedelta(seconds=timeout_s))
                except Exception as exc:  # a fault, not a configuration error
                    self._fail(f"creating its gloo process group failed "
                               f"({type(exc).__name__}: {exc})", 4)
        self._last_end = time.perf_counter()
        self._last_boundaries = 0

    def _fail(self, reason: str, stacklevel: int = 6) -> None:
        self.failed = reason
        self.failures += 1
        self.group = None
        warnings.warn(
            f"mfu_tracker: Tracker on rank {self.rank} of {self.world_size}: {reason}. "
            f"This rank reports its local figures from now on (metrics() is no longer "
            f"a collective); ranks must call metrics() at the same steps.",
            RuntimeWarning, stacklevel=stacklevel)

    def gather(self, row: List[float]) -> Optional[List[RankFigures]]:
        """All ranks' rows, or None after one warning when the collective fails."""
        import torch
        import torch.distributed as dist

        # Looked up per call (torch >= 2.13 names it all_gather_single; older
        # ones all_gather_into_tensor), so a benchmark can count the calls.
        all_gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
        self.collectives += 1
        send = torch.tensor(row, dtype=torch.float64)
        recv = torch.empty(self.world_size * len(row), dtype=torch.float64)
        try:
            # The group's timeout bounds the wait: a peer that never arrives
            # makes gloo raise after timeout_s, one that exited right away.
            all_gather(recv, send, group=self.group)
        except Exception as exc:
            self._fail(f"the cross-rank aggregation failed after waiting up to "
                       f"{self.timeout_s:g} s for the other ranks "
                       f"({type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''})")
            return None
        values = recv.tolist()
        n = len(row)
        rows = [values[i * n:(i + 1) * n] for i in range(self.world_size)]
        if any(r[0] != _LAYOUT for r in rows):
            self._fail("ranks run different mfu_tracker versions (row layouts differ)")
            return None
        return [RankFigures.from_row(r) for r in rows]

    def aggregate(self, local: RankFigures) -> Optional[DistributedFigures]:
        """One aggregation: the collective (world size > 1), then :func:`combine`."""
        self.aggregations += 1
        if self.world_size == 1:
            figures: Optional[DistributedFigures] = combine([local])
        else:
            rows = self.gather(local.to_row())
            figures = None if rows is None else combine(rows)
        self._last_end = time.perf_counter()
        self._last_boundaries = local.boundaries
        if figures is not None and not figures.steps_match and not self._warned_mismatch:
            self._warned_mismatch = True
            counts = ", ".join(f"rank {r.rank}: {r.boundaries}" for r in figures.ranks[:8])
            warnings.warn(
                f"mfu_tracker: Tracker.metrics() ran on ranks at different step counts "
                f"(step() calls: {counts}{', ...' if len(figures.ranks) > 8 else ''}); the "
                f"global figures pair windows that end at different steps. Call metrics() "
                f"at the same steps on every rank.",
                RuntimeWarning, stacklevel=4)  # -> the caller of Tracker.metrics()
        return figures

    def interval(self, boundaries: int) -> Tuple[float, int]:
        """Host seconds and step() calls since the end of the previous aggregation."""
        return time.perf_counter() - self._last_end, boundaries - self._last_boundaries

    def counters(self) -> Dict[str, int]:
        return {"aggregations": self.aggregations, "collectives": self.collectives,
                "failures": self.failures, "world_size": self.world_size,
                "active": int(self.failed is None)}

    def close(self) -> None:
        """Drop the side group (local teardown; no communication)."""
        group, self.group = self.group, None
        dist = _dist()
        if group is not None and dist is not None:
            try:
                dist.destroy_process_group(group)
            except Exception:
                pass
