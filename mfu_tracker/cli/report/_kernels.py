"""The report's kernel-breakdown panel: where a profiled step's time went.

Drawn when the log holds ``breakdown`` records (``Tracker(profile_steps=)``;
:mod:`mfu_tracker.breakdown._record`), or, from TensorBoard, the
``{p}/kernel_share/*`` keys: one stacked bar per profiled step, each class's
share and idle's (each bar adds up to 1). Printed: every bar's shares, and
for the newest profiled step the per-class table -- share, seconds, kernels,
TFLOP/s and its share of the peak, operand GB/s and its share of the
bandwidth (lower bounds), the roofline side -- and its top kernels. The
two-run comparison (:mod:`._compare`) prints the same table for each
run.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ...breakdown._record import LABELS, ROWS, Breakdown, figures_of_record
from ...job._records import Run
from ...timing._metrics import metric_key

__all__ = ["KernelPanel", "MISSING", "class_table", "draw", "kernel_panel", "row_colors"]

#: Why the panel is absent (the report's "missing:" line).
MISSING = ("kernel breakdown: no profiled step in the input (profile some: "
           "Tracker(profile_steps=N), or the integrations' profile_steps=)")


@dataclass
class KernelPanel:
    """The profiled steps drawn: (step, shares by row, the breakdown when
    the input holds the whole record)."""

    bars: List[Tuple[int, Dict[str, float], Optional[Breakdown]]] = field(default_factory=list)

    def last(self) -> Optional[Breakdown]:
        return self.bars[-1][2] if self.bars else None

    def lines(self) -> List[str]:
        out = ["kernel breakdown (fractions of each profiled step; each bar adds up to 1):"]
        for step, shares, _ in self.bars:
            cells = " ".join(f"kernel_share/{row}={shares[row]!r}" for row in ROWS if row in shares)
            out.append(f"  step={step} {cells} sum={sum(shares.values())!r}")
        last = self.last()
        if last is not None:
            out += class_table(last, f"the profiled step {self.bars[-1][0]}")
        return out


def _from_keys(record: Dict[str, Any], prefix: str) -> Dict[str, float]:
    base = metric_key(prefix, "kernel_share") + "/"
    return {key[len(base):]: float(value) for key, value in record.items()
            if key.startswith(base) and key[len(base):] in ROWS}


def kernel_panel(runs: Sequence[Run], prefix: str) -> Optional[KernelPanel]:
    """The panel of the runs drawn, or None without a profiled step."""
    panel = KernelPanel()
    for run in runs:
        for record in run.breakdowns:
            breakdown = figures_of_record(record)
            if breakdown is not None and breakdown.step_s > 0:
                step = breakdown.step if breakdown.step is not None else record.get("step", 0)
                panel.bars.append((int(step), breakdown.shares(), breakdown))
    if not panel.bars:   # TensorBoard: the keys alone
        for run in runs:
            for record in run.metrics:
                shares = _from_keys(record, prefix)
                if shares:
                    panel.bars.append((int(record["step"]), shares, None))
    panel.bars.sort(key=lambda bar: bar[0])
    return panel if panel.bars else None


def _cell(value: Optional[float], fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def class_table(b: Breakdown, what: str) -> List[str]:
    """The per-class table of one breakdown, and its top kernels."""
    timeline = "the device timeline" if b.timeline == "device" else "the host timeline (self time)"
    out = [f"kernel breakdown of {what}: {b.step_s:.4g} s on {timeline}; the rows add up to it",
           f"  {'class':<18}{'share':>8}{'time_s':>12}{'count':>8}{'TFLOP/s':>10}{'%peak':>8}"
           f"{'GB/s':>10}{'%bw':>7}  bound"]
    for row in ROWS:
        share = b.share(row)
        if row == "idle":
            out.append(f"  {LABELS[row]:<18}{_cell(share, '.4f'):>8}{b.idle_s:>12.6f}")
            continue
        c = b.classes[row]
        peak, bandwidth = b.peak_share(row), b.bandwidth_share(row)
        out.append(f"  {LABELS[row]:<18}{_cell(share, '.4f'):>8}{c.time_s:>12.6f}{c.count:>8}"
                   f"{_cell(b.tflops(row), '.4g'):>10}"
                   f"{_cell(None if peak is None else peak * 100, '.1f'):>8}"
                   f"{_cell(b.gbs(row), '.4g'):>10}"
                   f"{_cell(None if bandwidth is None else bandwidth * 100, '.1f'):>7}"
                   f"  {b.bound(row) or '-'}")
    if b.top:
        unit = "kernels" if b.timeline == "device" else "ops by self time"
        out.append(f"  top {unit}:")
        out += [f"    {k.time_s:.6f} s  x{k.count:<6} {k.kclass:<13} {k.name}" for k in b.top]
    notes = [f"{n} names folded past the table's bound" for n in [b.names_folded] if n]
    unsized = [f"{row} {c.unsized}" for row, c in b.classes.items() if c.unsized]
    if unsized:
        notes.append("bytes unknown for (ops or kernels not sized): " + ", ".join(unsized))
    out += [f"  note: {note}" for note in notes]
    return out


def row_colors() -> Dict[str, Any]:
    """One fixed colour per row, the same in every picture."""
    import matplotlib

    cmap = matplotlib.colormaps["tab10"]
    return {row: ("lightgrey" if row == "idle" else cmap(i)) for i, row in enumerate(ROWS)}


def stacked_bars(ax: Any, labels: Sequence[str], shares: Sequence[Dict[str, float]],
                 horizontal: bool = False) -> None:
    """One bar per entry of ``shares``, its rows stacked in :data:`ROWS` order."""
    colors = row_colors()
    positions = list(range(len(shares)))
    bottoms = [0.0] * len(shares)
    for row in ROWS:
        heights = [s.get(row, 0.0) for s in shares]
        if not any(heights):
            continue
        if horizontal:
            ax.barh(positions, heights, left=bottoms, color=colors[row], label=LABELS[row])
        else:
            ax.bar(positions, heights, bottom=bottoms, color=colors[row], label=LABELS[row])
        bottoms = [b + h for b, h in zip(bottoms, heights)]
    if horizontal:
        ax.set_yticks(positions, list(labels))
        ax.set_xlim(0, max(1.0, max(bottoms, default=1.0)))
    else:
        ax.set_xticks(positions, list(labels))
        ax.set_ylim(0, max(1.0, max(bottoms, default=1.0)))
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")


def draw(ax: Any, panel: KernelPanel) -> None:
    """The panel: one stacked bar per profiled step."""
    stacked_bars(ax, [str(step) for step, _, _ in panel.bars], [s for _, s, _ in panel.bars])
    ax.set_xlabel("profiled step")
    ax.set_ylabel("fraction of the step")
    ax.set_title("kernel breakdown: where a profiled step's time went (by kernel class)")
