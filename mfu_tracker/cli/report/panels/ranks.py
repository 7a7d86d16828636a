"""Per-rank MFU: the spread ``{p}/mfu_rank_min`` / ``_mean`` / ``_max`` over
steps (runs under a process group), and the slowest rank by step."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from .._axes import steps_axis
from .._model import RANK_SPREAD, SLOWEST, Report, number
from ._base import Panel


@dataclass
class Spread:
    """Each spread key's (step, value) points, and the slowest rank's."""

    series: Dict[str, List[Tuple[int, float]]] = field(default_factory=dict)
    slowest: List[Tuple[int, float]] = field(default_factory=list)


class RanksPanel(Panel):
    name = "ranks"

    def collect(self, report: Report) -> Optional[Spread]:
        spread = Spread()
        for record, _ in report.points:
            for name in RANK_SPREAD:
                value = number(record.get(report.key(name)))
                if value is not None:
                    spread.series.setdefault(report.key(name), []).append((record["step"], value))
            slowest = number(record.get(report.key(SLOWEST)))
            if slowest is not None:
                spread.slowest.append((record["step"], slowest))
        return spread if spread.series else None

    def absent(self, report: Report) -> Optional[str]:
        """Said only for a distributed run (``world_size`` > 1 in its lines): a
        single process has no ranks to spread over."""
        if not any((number(record.get("world_size")) or 1) > 1 for record in report.records):
            return None
        return (f"{report.key(RANK_SPREAD[0])} / _mean / _max: no per-rank MFU (no per-rank "
                f"panel)")

    def steps(self, data: Spread) -> List[int]:
        return [step for series in data.series.values() for step, _ in series]

    def text(self, report: Report, data: Spread) -> List[str]:
        lines = ["per-rank MFU:"]
        slowest = dict(data.slowest)
        by_key = {key: dict(series) for key, series in data.series.items()}
        for step in sorted(set(self.steps(data))):
            cells = [f"{key}={values[step]!r}" for key, values in by_key.items() if step in values]
            if step in slowest:
                cells.append(f"{report.key(SLOWEST)}={int(slowest[step])}")
            lines.append(f"  step={step} " + " ".join(cells))
        return lines

    def summary(self, report: Report, data: Spread) -> List[str]:
        last = max(self.steps(data))
        cells = [f"{key.rsplit('/', 1)[-1]} {dict(series)[last]:.3f}"
                 for key, series in data.series.items() if last in dict(series)]
        slowest = dict(data.slowest).get(last)
        tail = "" if slowest is None else f"; slowest rank {int(slowest)}"
        return [f"per-rank MFU at step {last}: {', '.join(cells)}{tail}"]

    def table(self, report: Report, data: Spread) -> Dict[int, Dict[str, float]]:
        rows: Dict[int, Dict[str, float]] = {}
        for key, series in data.series.items():
            for step, value in series:
                rows.setdefault(step, {})[key] = value
        return rows

    def draw(self, ax: Any, report: Report, data: Optional[Spread]) -> None:
        assert data is not None
        for key, series in data.series.items():
            steps, values = zip(*series)
            ax.plot(steps, values, marker=".", label=key.rsplit("/", 1)[-1])
        ax.set_title("per-rank MFU spread")
        ax.set_ylabel("MFU")
        steps_axis(ax, report)
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")


PANEL = RanksPanel()
