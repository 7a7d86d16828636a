"""``mfu-tracker report A.jsonl B.jsonl``: two runs side by side.

The paper's baseline / optimized figure: for each log, the run ``--run``
chooses within it (the last by default), its newest kernel breakdown (a
profiled step) and its newest waterfall (``{p}/mfu`` + ``{p}/mfu_lost/*``),
drawn as two bars each -- A above B -- and the difference B - A of every
kernel class's share (percentage points of each run's own profiled step).

Printed: both breakdowns' per-class tables (:func:`._kernels.class_table`),
the differences per class (share and seconds) and per waterfall share, each
run's MFU and step time, then each run's advice (:mod:`._advise`); each figure
rounded to what it means, or with ``--numbers`` in full precision. What a
log lacks (no profiled step, no waterfall) is named, and what it has is
still drawn. Output ``.png`` or ``.html`` (the PNG inline and the table).
"""
from __future__ import annotations

import base64
import html
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ...breakdown._record import LABELS, ROWS, Breakdown, figures_of_record
from ...job._records import Log, Run
from ...timing._metrics import metric_key
from .._figures import seconds, share, signed_share
from . import _kernels as kernels

__all__ = ["Side", "compare", "run"]


@dataclass
class Side:
    """One log of the comparison: its chosen run's newest breakdown and waterfall."""

    name: str                                  # "A" or "B"
    path: str
    log: Log
    run: Run
    prefix: str
    breakdown: Optional[Breakdown] = None
    waterfall: Dict[str, float] = field(default_factory=dict)   # mfu and each cause
    waterfall_step: Optional[int] = None
    mfu: Optional[float] = None
    step_time_s: Optional[float] = None

    @property
    def label(self) -> str:
        return f"{self.name}: {os.path.basename(self.path)} (run {self.run.number})"


def _number(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return None
    return float(value)


def _side(name: str, path: str, which: str, prefix: Optional[str]) -> Side:
    from ._load import load_streamed, select_runs
    from ._plan import find_prefix

    log = load_streamed(path, which, drawn=False)
    run = select_runs(log, which)[-1]
    found = prefix if prefix is not None else find_prefix(run.metrics)
    side = Side(name, path, log, run, "throughput" if found is None else found)
    for record in reversed(run.breakdowns):
        side.breakdown = figures_of_record(record)
        if side.breakdown is not None:
            break
    lost = metric_key(side.prefix, "mfu_lost") + "/"
    for record in reversed(run.metrics):
        mfu = _number(record.get(metric_key(side.prefix, "mfu")))
        causes = {k[len(lost):]: v for k, v in ((k, _number(x)) for k, x in record.items()
                                                if k.startswith(lost)) if v is not None}
        if mfu is not None and causes:
            side.waterfall = {"mfu": mfu, **causes}
            side.waterfall_step = int(record["step"])
            break
    last = run.metrics[-1] if run.metrics else {}
    side.mfu = _number(last.get(metric_key(side.prefix, "mfu")))
    side.step_time_s = _number(last.get(metric_key(side.prefix, "step_time_s")))
    return side


def compare(paths: Sequence[str], which: str = "last",
            prefix: Optional[str] = None) -> Tuple[Side, Side]:
    """The two sides (``paths`` A and B; ``which`` chooses the run in each).
    ValueError for any other number of paths."""
    if isinstance(paths, str) or len(paths) != 2:
        raise ValueError(f"paths: give two logs to compare (A B), got {paths!r}")
    a, b = (_side(name, path, which, prefix) for name, path in zip("AB", paths))
    return a, b


@dataclass(frozen=True)
class _Shown:
    """How the comparison prints a figure: rounded to what it means, or
    (``exact``: ``--numbers``) Python's round-trip repr."""

    exact: bool = False

    def share(self, value: float) -> str:
        return repr(value) if self.exact else share(value)

    def diff(self, value: float) -> str:
        return repr(value) if self.exact else signed_share(value)

    def seconds(self, value: float) -> str:
        return repr(value) if self.exact else seconds(value)

    def ratio(self, value: float) -> str:
        return repr(value) if self.exact else f"{value:.3g}"


def _difference_lines(a: Side, b: Side, show: _Shown) -> List[str]:
    out: List[str] = []
    if a.breakdown is not None and b.breakdown is not None:
        out.append("kernel classes, B - A (share of each run's profiled step; seconds):")
        for row in ROWS:
            sa, sb = a.breakdown.share(row) or 0.0, b.breakdown.share(row) or 0.0
            ta, tb = a.breakdown.time_of(row), b.breakdown.time_of(row)
            out.append(f"  {row}: A={show.share(sa)} B={show.share(sb)} diff={show.diff(sb - sa)} "
                       f"time_s A={show.seconds(ta)} B={show.seconds(tb)} "
                       f"diff={show.seconds(tb - ta)}")
        out.append(f"  step_s: A={show.seconds(a.breakdown.step_s)} "
                   f"B={show.seconds(b.breakdown.step_s)} "
                   f"diff={show.seconds(b.breakdown.step_s - a.breakdown.step_s)}")
    if a.waterfall and b.waterfall:
        out.append("waterfall, B - A (fractions of the step time):")
        for cause in dict.fromkeys([*a.waterfall, *b.waterfall]):
            va, vb = a.waterfall.get(cause), b.waterfall.get(cause)
            diff = "" if va is None or vb is None else f" diff={show.diff(vb - va)}"
            out.append(f"  {cause}: A={_maybe(show.share, va)} B={_maybe(show.share, vb)}{diff}")
    for key, va, vb, fmt in (("mfu", a.mfu, b.mfu, show.share),
                             ("step_time_s", a.step_time_s, b.step_time_s, show.seconds)):
        if va is not None and vb is not None:
            ratio = f" ratio B/A={show.ratio(vb / va)}" if va else ""
            out.append(f"{key}: A={fmt(va)} B={fmt(vb)}{ratio}")
    return out


def _maybe(fmt: Any, value: Optional[float]) -> str:
    return "None" if value is None else fmt(value)


def text(a: Side, b: Side, exact: bool = False) -> str:
    """Every number drawn, and the differences, then each run's advice;
    rounded to what each means, or (``exact``) Python's round-trip repr."""
    from .._advise import lines_for_report

    show = _Shown(exact)
    lines = [a.label, b.label]
    for side in (a, b):
        if side.breakdown is None:
            lines.append(f"missing: {side.name}: {kernels.MISSING}")
        else:
            lines += kernels.class_table(side.breakdown, f"{side.name} (step "
                                                         f"{side.breakdown.step})")
        if side.waterfall:
            cells = " ".join(f"{k}={show.share(v)}" for k, v in side.waterfall.items())
            lines.append(f"waterfall of {side.name} at step={side.waterfall_step}: {cells} "
                         f"sum={show.share(sum(side.waterfall.values()))}")
        else:
            lines.append(f"missing: {side.name}: no waterfall (mfu and mfu_lost/* keys)")
    lines += _difference_lines(a, b, show)
    for side in (a, b):
        lines += [f"{side.name}: {line}" if i == 0 else line for i, line in
                  enumerate(lines_for_report(side.log, str(side.run.number), side.prefix))]
    return "\n".join(lines)


def _draw(a: Side, b: Side, title: str) -> bytes:
    from ._render import figure_png

    def draw(axes: Sequence[Any]) -> None:
        sides = [s for s in (a, b) if s.breakdown is not None]
        if sides:
            kernels.stacked_bars(axes[0], [f"{s.name} ({s.breakdown.step_s * 1e3:.4g} ms)"
                                           for s in sides],
                                 [s.breakdown.shares() for s in sides], horizontal=True)
            axes[0].invert_yaxis()
        axes[0].set_title(title or "kernel breakdown of a profiled step: A (top) vs B")
        axes[0].set_xlabel("fraction of the profiled step")
        _draw_waterfalls(axes[1], [s for s in (a, b) if s.waterfall])
        _draw_differences(axes[2], a, b)

    return figure_png(3, draw)


def _draw_waterfalls(ax: Any, sides: List[Side]) -> None:
    ax.set_title("waterfall: where the step time goes (A top, B bottom)")
    causes = list(dict.fromkeys(k for s in sides for k in s.waterfall))
    lefts = [0.0] * len(sides)
    for cause in causes:
        widths = [s.waterfall.get(cause, 0.0) for s in sides]
        ax.barh(range(len(sides)), widths, left=lefts, label=cause)
        lefts = [x + w for x, w in zip(lefts, widths)]
    ax.set_yticks(range(len(sides)), [f"{s.name} (step {s.waterfall_step})" for s in sides])
    ax.invert_yaxis()
    ax.set_xlim(min(0.0, min(lefts, default=0.0)), max(1.0, max(lefts, default=1.0)))
    ax.set_xlabel("fraction of the step time")
    if causes:
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")


def _draw_differences(ax: Any, a: Side, b: Side) -> None:
    ax.set_title("B - A: each kernel class's share of the profiled step (points)")
    if a.breakdown is None or b.breakdown is None:
        ax.text(0.5, 0.5, "needs a profiled step in both logs", ha="center",
                transform=ax.transAxes)
        return
    diffs = [((b.breakdown.share(r) or 0.0) - (a.breakdown.share(r) or 0.0)) * 100 for r in ROWS]
    colors = kernels.row_colors()
    ax.bar(range(len(ROWS)), diffs, color=[colors[r] for r in ROWS])
    ax.set_xticks(range(len(ROWS)), [LABELS[r] for r in ROWS], rotation=30, ha="right",
                  fontsize="small")
    ax.axhline(0.0, color="black", linewidth=0.8)
    ax.set_ylabel("percentage points")


def run(paths: Sequence[str], out: str, prefix: Optional[str] = None, title: str = "",
        which: str = "last", exact: bool = False) -> str:
    """Compare two logs, draw ``out``; returns the numbers (:func:`text`;
    ``exact``: full precision)."""
    from ._render import check_out as _check_out
    from ._render import pyplot as _pyplot
    from ._render import write_out

    ext = _check_out(out)
    _pyplot()
    a, b = compare(paths, which, prefix)
    png = _draw(a, b, title)
    numbers = text(a, b, exact)
    write_out(out, ext, png, lambda: _html(png, numbers, title or "MFU report: A vs B"))
    return numbers


def _html(png: bytes, numbers: str, title: str) -> str:
    image = base64.b64encode(png).decode("ascii")
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{html.escape(title)}"
            f"</title></head>\n<body>\n<h1>{html.escape(title)}</h1>\n"
            f"<img alt=\"A vs B\" src=\"data:image/png;base64,{image}\">\n"
            f"<pre>{html.escape(numbers)}</pre>\n</body></html>\n")
