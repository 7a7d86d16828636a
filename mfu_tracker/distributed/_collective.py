"""The collective behind a distributed ``Tracker``: a dedicated gloo group and
one bounded all-gather per aggregation (why, and what is gathered:
:mod:`mfu_tracker.distributed`).

torch is imported only when a tracker is actually distributed.
"""
from __future__ import annotations

import sys
import time
import warnings
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

from ._comm_observer import unobserved
from ._figures import DistributedFigures, combine
from ._row import ROW_LAYOUT, RankFigures
from ._links import gather_hosts

#: Seconds a rank waits in the aggregation for the others before it gives up
#: (one warning, local figures from then on). Ranks reach a logging step
#: within about one step of each other in synchronous training; this leaves
#: room for a slow step plus a checkpoint write.
DEFAULT_TIMEOUT_S = 120.0


def _dist() -> Any:
    """torch.distributed if torch is already imported and a process group is up."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    dist = getattr(torch, "distributed", None)
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return None
    return dist


def process_group_initialized() -> bool:
    """Whether a default ``torch.distributed`` process group exists (torch not imported: False)."""
    return _dist() is not None


class Interval(NamedTuple):
    """A rank's time since the end of the previous aggregation."""

    seconds: float   # host seconds
    steps: int       # step() calls


class Aggregator:
    """The per-tracker collective state: a dedicated gloo group, counters, warnings.

    Created by ``Tracker`` on every rank (group creation is collective: all
    ranks create their trackers in the same order). World size 1: no group,
    no collective.
    """

    __slots__ = ("rank", "world_size", "timeout_s", "group", "failed", "aggregations",
                 "collectives", "failures", "hosts", "_last_end", "_last_boundaries",
                 "_warned_mismatch")

    def __init__(self, timeout_s: float) -> None:
        import datetime

        import torch.distributed as dist

        self.rank = dist.get_rank()
        self.world_size = dist.get_world_size()
        self.timeout_s = timeout_s
        self.group: Any = None
        self.hosts: Optional[List[str]] = None  # every rank's host (the links' scope)
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
                else:
                    # Once, on every rank alike (whatever it observes): where
                    # each rank runs, for the links of its process groups.
                    with unobserved():
                        self.hosts = gather_hosts(self.group, self.world_size)
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
        rows = self.gather_floats(row, "the cross-rank aggregation")
        if rows is None:
            return None
        if any(r[0] != ROW_LAYOUT for r in rows):
            self._fail("ranks run different mfu_tracker versions (row layouts differ)")
            return None
        return [RankFigures.from_row(r) for r in rows]

    def gather_floats(self, row: List[float], what: str) -> Optional[List[List[float]]]:
        """Every rank's ``row`` (same length on each), by rank, on the side
        group; None after one warning naming ``what`` when the collective
        fails."""
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
            # Never recorded as the run's communication, by any tracker.
            with unobserved():
                all_gather(recv, send, group=self.group)
        except Exception as exc:
            self._fail(f"{what} failed after waiting up to "
                       f"{self.timeout_s:g} s for the other ranks "
                       f"({type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''})")
            return None
        values = recv.tolist()
        n = len(row)
        return [values[i * n:(i + 1) * n] for i in range(self.world_size)]

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

    def interval(self, boundaries: int, first_window_boundary: int = 0) -> Optional["Interval"]:
        """Host seconds and step() calls since the end of the previous aggregation;
        None when that interval holds steps before ``first_window_boundary``
        (the clock's start, the warm-up: a first call's compile or lazy build
        would be charged to the rank, the window leaves them out)."""
        if self._last_boundaries < first_window_boundary:
            return None
        return Interval(time.perf_counter() - self._last_end, boundaries - self._last_boundaries)

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
