"""Phases in seconds: without MFU (no peak) there is no waterfall of shares,
but the marked phases still say where the step went. One stacked bar per
logged step: each ``{p}/phase_s/<phase>`` (seconds per step, the window's
mean), then the unmarked rest of the step time (``{p}/step_time_s`` less
the marked phases), in milliseconds. Drawn only when the waterfall is not."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from ..._figures import significant
from .._axes import MAX_TICKS
from .._model import PHASES, STEP_TIME, Report, number
from ._base import Panel

#: The unmarked rest of the step: step time less the marked phases, seconds.
UNMARKED = "unmarked_s"


@dataclass
class Seconds:
    """(step, {phase key: seconds per step}) rows; the unmarked rest per row."""

    names: List[str] = field(default_factory=list)                  # phase keys, in order
    rows: List[Tuple[int, Dict[str, float]]] = field(default_factory=list)
    unmarked: List[Optional[float]] = field(default_factory=list)   # None: no step time


class PhasesPanel(Panel):
    name = "phases"

    def collect(self, report: Report) -> Optional[Seconds]:
        if "waterfall" in report.data:
            return None
        base = report.key(PHASES) + "/"
        found = Seconds()
        for record, _ in report.points:
            phases = {k: v for k, v in ((k, number(x)) for k, x in record.items()
                                        if k.startswith(base)) if v is not None}
            if not phases:
                continue
            found.names += [key for key in phases if key not in found.names]
            found.rows.append((record["step"], phases))
            step_time = number(record.get(report.key(STEP_TIME)))
            found.unmarked.append(None if step_time is None
                                  else step_time - math.fsum(phases.values()))
        return found if found.rows else None

    def steps(self, data: Seconds) -> List[int]:
        return [step for step, _ in data.rows]

    def text(self, report: Report, data: Seconds) -> List[str]:
        lines = [f"phases (seconds per step, the window's mean; {UNMARKED}: "
                 f"{report.key(STEP_TIME)} less the marked phases):"]
        for (step, phases), rest in zip(data.rows, data.unmarked):
            cells = [f"{key}={value!r}" for key, value in phases.items()]
            if rest is not None:
                cells.append(f"{UNMARKED}={rest!r}")
            lines.append(f"  step={step} " + " ".join(cells))
        return lines

    def summary(self, report: Report, data: Seconds) -> List[str]:
        (step, phases), rest = data.rows[-1], data.unmarked[-1]
        cells = [f"{key.rsplit('/', 1)[-1]} {significant(value * 1e3)}"
                 for key, value in phases.items()]
        if rest is not None:
            cells.append(f"unmarked {significant(rest * 1e3)}")
        return [f"where step {step}'s time went (window, ms per step): {', '.join(cells)}"]

    def table(self, report: Report, data: Seconds) -> Dict[int, Dict[str, float]]:
        return {step: dict(phases) for step, phases in data.rows}

    def draw(self, ax: Any, report: Report, data: Optional[Seconds]) -> None:
        assert data is not None
        ax.set_title("where the step time goes: marked phases, ms per step (no MFU, so no "
                     "waterfall of shares)")
        positions = list(range(len(data.rows)))
        bottoms = [0.0] * len(positions)
        layers = [(key.rsplit("/", 1)[-1], [phases.get(key, 0.0) for _, phases in data.rows])
                  for key in data.names]
        layers.append(("unmarked", [max(0.0, rest or 0.0) for rest in data.unmarked]))
        for label, seconds in layers:
            heights = [v * 1e3 for v in seconds]
            ax.bar(positions, heights, bottom=bottoms, label=label, width=1.0 if
                   len(positions) > 200 else 0.8, linewidth=0)
            bottoms = [b + h for b, h in zip(bottoms, heights)]
        every = max(1, -(-len(positions) // MAX_TICKS))
        ax.set_xticks(positions[::every], [str(step) for step, _ in data.rows][::every])
        ax.set_xlabel("step (as logged)")
        ax.set_ylabel("ms per step")
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")


PANEL = PhasesPanel()
