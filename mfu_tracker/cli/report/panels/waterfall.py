"""The waterfall: one stacked bar per logged step, MFU then each
``{p}/mfu_lost/<cause>`` share of the step time (causes in the order they
first appear); each bar is as high as its printed ``sum``. Its last bar
gives the report's diagnosis line (the largest loss and its rank)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from ....job._ledger import diagnosis, rank_of
from .._axes import MAX_TICKS
from .._model import LOST, Report, number
from ._base import Panel
from ._impossible import IMPOSSIBLE_COLOR, negative_shares
from .hardware import compute_note

#: Above this many logged steps the bars touch and are drawn as one filled
#: band per layer (thousands of separate bars take minutes to draw).
MAX_BARS = 200


@dataclass
class Bars:
    """The bars: (step, {key: share}) with MFU first, each with its run."""

    mfu_key: str
    causes: List[str] = field(default_factory=list)                  # loss keys, in order
    rows: List[Tuple[int, Dict[str, float]]] = field(default_factory=list)
    runs: List[int] = field(default_factory=list)

    def stacked(self) -> List[Tuple[str, List[float], List[float]]]:
        """The layers as drawn: (key, heights, bottoms) per layer, MFU first,
        each layer on top of the previous (what the bars show)."""
        layers = []
        bottoms = [0.0] * len(self.rows)
        for key in [self.mfu_key] + self.causes:
            heights = [shares.get(key, 0.0) for _, shares in self.rows]
            layers.append((key, heights, bottoms))
            bottoms = [b + h for b, h in zip(bottoms, heights)]
        return layers

    def impossible(self) -> List[bool]:
        """Which bars hold a figure that cannot be: MFU above 1, a share below 0."""
        return [shares.get(self.mfu_key, 0.0) > 1.0 or any(v < 0 for v in shares.values())
                for _, shares in self.rows]

    def bar_tops(self) -> List[float]:
        """Each bar's height as drawn (the top of its last layer)."""
        _, heights, bottoms = self.stacked()[-1]
        return [b + h for b, h in zip(bottoms, heights)]


class WaterfallPanel(Panel):
    name = "waterfall"

    def placeholder(self, report: Report) -> bool:
        return "phases" not in report.data     # without MFU: the phases in seconds instead

    def collect(self, report: Report) -> Optional[Bars]:
        base = report.key(LOST) + "/"
        bars = Bars(report.mfu_key)
        for record, run in report.points:
            mfu = number(record.get(report.mfu_key))
            lost = {k: v for k, v in ((k, number(x)) for k, x in record.items()
                                      if k.startswith(base)) if v is not None}
            if lost and mfu is not None:   # a bar needs its MFU layer
                bars.causes += [key for key in lost if key not in bars.causes]
                bars.rows.append((record["step"], {report.mfu_key: mfu, **lost}))
                bars.runs.append(run)
        if not bars.rows:
            return None
        negative_shares(report, bars.rows, base)
        _, shares = bars.rows[-1]
        causes = {key[len(base):]: v for key, v in shares.items() if key.startswith(base)}
        name = max(causes, key=lambda k: causes[k])
        report.diagnosis = diagnosis(causes, "step time", rank_of(report.records, name))
        return bars

    def absent(self, report: Report) -> str:
        return (f"{report.key(LOST)}/*: no waterfall keys (the waterfall needs MFU and marked "
                f"phases)")

    def steps(self, data: Bars) -> List[int]:
        return [step for step, _ in data.rows]

    def text(self, report: Report, data: Bars) -> List[str]:
        lines = ["waterfall (fractions of the step time; each bar is as high as its sum):"]
        for (step, shares), top in zip(data.rows, data.bar_tops()):
            cells = " ".join(f"{key}={value!r}" for key, value in shares.items())
            lines.append(f"  step={step} {cells} sum={top!r}")
        return lines + self._compute_note(report, data)

    def _compute_note(self, report: Report, data: Bars) -> List[str]:
        """The last bar's compute share read against the tensor pipes, when logged."""
        note = compute_note(report, data.rows[-1][0])
        return [f"  {note}"] if note else []

    def summary(self, report: Report, data: Bars) -> List[str]:
        step, shares = data.rows[-1]
        cells = ", ".join(f"{key.rsplit('/', 1)[-1]} {value:.3f}" for key, value in shares.items())
        return ([f"where step {step}'s time went (window): {cells} (sum {data.bar_tops()[-1]:.3f})"]
                + self._compute_note(report, data))

    def table(self, report: Report, data: Bars) -> Dict[int, Dict[str, float]]:
        return {step: dict(shares) for step, shares in data.rows}

    def draw(self, ax: Any, report: Report, data: Optional[Bars]) -> None:
        ax.set_title("waterfall: where the step time goes (fractions of step time)")
        if data is None:
            ax.text(0.5, 0.5, f"no {report.key(LOST)}/* keys in the input",
                    ha="center", transform=ax.transAxes)
            ax.set_xticks([])
            ax.set_yticks([])
            return
        positions = list(range(len(data.rows)))
        for key, heights, bottoms in data.stacked():
            label = key.rsplit("/", 1)[-1]
            if len(positions) <= MAX_BARS:
                ax.bar(positions, heights, bottom=bottoms, label=label)
            else:  # the same bars, touching, as one polygon per layer (fast)
                tops = [b + h for b, h in zip(bottoms, heights)]
                ax.fill_between(positions, bottoms, tops, step="mid", label=label, linewidth=0)
        every = max(1, -(-len(positions) // MAX_TICKS))
        ax.set_xticks(positions[::every], [str(step) for step, _ in data.rows][::every])
        for i in range(1, len(positions)):
            if data.runs[i] != data.runs[i - 1]:
                ax.axvline(i - 0.5, color="grey", linestyle="--", linewidth=0.8)
        ax.set_xlabel("step (as logged)")
        edges = [edge for _, heights, bottoms in data.stacked()
                 for edge in (*bottoms, *(b + h for b, h in zip(bottoms, heights)))]
        ax.set_ylim(min(0.0, *edges), max(1.0, *edges))   # MFU above 1 shows above 1
        _mark_impossible(ax, data, positions)
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
        note = compute_note(report, data.rows[-1][0])
        if note:
            ax.text(0.01, 0.98, note, transform=ax.transAxes, fontsize="x-small", va="top",
                    bbox={"facecolor": "white", "alpha": 0.8, "linewidth": 0})


def _mark_impossible(ax: Any, data: Bars, positions: List[int]) -> None:
    """Hatch every bar holding MFU above 1 or a negative share, from its
    lowest layer to its highest, and draw the line at 1."""
    flagged = [i for i, bad in zip(positions, data.impossible()) if bad]
    if not flagged:
        return
    layers = data.stacked()
    for i in flagged:
        edges = [edge for _, heights, bottoms in layers
                 for edge in (bottoms[i], bottoms[i] + heights[i])]
        low, high = min(0.0, *edges), max(edges)
        ax.bar(i, high - low, bottom=low, fill=False, hatch="//", edgecolor=IMPOSSIBLE_COLOR,
               linewidth=1.2, label="cannot be: MFU > 1 or a share < 0 (see the caveat)"
               if i == flagged[0] else None)
    ax.axhline(1.0, color=IMPOSSIBLE_COLOR, linestyle="--", linewidth=0.8)


PANEL = WaterfallPanel()
