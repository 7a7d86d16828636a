"""The hardware panel: the arithmetic beside what the hardware measured,
over steps.

Two pairs on one axis (shares of the window, 0-1):

* MFU (``{p}/mfu``, counted FLOPs over the peak) against the tensor pipes'
  busy share (``{p}/hw/tensor_active``, NVML GPM);
* MBU (``{p}/mbu``, parameter bytes over the bandwidth peak: a proxy)
  against the DRAM bandwidth actually used (``{p}/hw/dram_bw_util``).

A healthy run draws MFU a little under tensor-active (their ratio,
``{p}/hw/mfu_consistency``, is printed per step); MFU above it means the
count or the peak is wrong (docs/hardware-counters.md). The waterfall's
``compute`` share gets a note from the same keys (:func:`compute_note`).

A log without the keys (no GPM: before Hopper, windows under 0.1 s, telemetry
off) has no panel; :data:`MISSING` says why in the report's "missing" lines.
Keys come from the one table (:mod:`mfu_tracker.timing._metrics`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from ....timing._metrics import KEYS
from .._axes import steps_axis
from .._model import Report, number
from ._base import Panel

_NAMES = {key.name for key in KEYS}
#: (series, key name): the arithmetic first, then what the hardware measured.
SERIES: Tuple[Tuple[str, str], ...] = (
    ("mfu", "mfu"), ("tensor_active", "hw/tensor_active"),
    ("mbu", "mbu"), ("dram_bw_util", "hw/dram_bw_util"),
    ("consistency", "hw/mfu_consistency"),
)
assert all(name in _NAMES for _, name in SERIES)

#: The report's note when the log has no hardware counters.
MISSING = ("no hardware counters in the log (NVML GPM needs a Hopper or later GPU, windows "
           "of at least 0.1 s between logs, and telemetry on): no hardware panel")


def _share(value: Any) -> Optional[float]:
    """A drawable share: finite and not negative (no share is), else None."""
    value = number(value)
    return value if value is not None and value >= 0 else None


@dataclass
class Counters:
    """The panel's series: each (step, value) over the logged steps, by series name."""

    series: Dict[str, List[Tuple[int, float]]] = field(default_factory=dict)

    def at(self, series: str, step: int) -> Optional[float]:
        return dict(self.series.get(series, ())).get(step)

    def steps(self) -> List[int]:
        return sorted({step for points in self.series.values() for step, _ in points})


def compute_note(report: Report, step: int) -> Optional[str]:
    """The waterfall's ``compute`` share at ``step`` read against the tensor
    pipes: how busy they were, and how much of that MFU books (None without
    the counters)."""
    data: Optional[Counters] = report.panel(PANEL.name)
    if data is None:
        return None
    active, ratio = data.at("tensor_active", step), data.at("consistency", step)
    if active is None:
        return None
    note = f"compute at step {step}: tensor pipes busy {active:.3g} of the window"
    if ratio is not None:
        note += f", MFU / tensor-active {ratio:.3g}"
    return note


class HardwarePanel(Panel):
    name = "hardware"
    series = SERIES         # (series, key name): the keys printed, in order
    heading = "hardware (shares of the window; the arithmetic beside the GPM counters):"

    def collect(self, report: Report) -> Optional[Counters]:
        data = Counters()
        for record, _ in report.points:
            for name, key in SERIES:
                value = _share(record.get(report.key(key)))
                if value is not None:
                    data.series.setdefault(name, []).append((record["step"], value))
        if not ({"tensor_active", "dram_bw_util"} & set(data.series)):
            return None
        return data

    def absent(self, report: Report) -> str:
        return MISSING

    def steps(self, data: Counters) -> List[int]:
        return data.steps()

    def _cells(self, report: Report, data: Counters, step: int) -> Dict[str, float]:
        return {report.key(key): value for name, key in self.series
                if (value := data.at(name, step)) is not None}

    def text(self, report: Report, data: Counters) -> List[str]:
        lines = [self.heading]
        for step in data.steps():
            cells = self._cells(report, data, step)
            lines.append(f"  step={step} " + " ".join(f"{k}={v!r}" for k, v in cells.items()))
        return lines

    def summary(self, report: Report, data: Counters) -> List[str]:
        step = data.steps()[-1]
        pairs = [("MFU", "mfu", "tensor-active", "tensor_active"),
                 ("MBU", "mbu", "DRAM use", "dram_bw_util")]
        cells = []
        for counted, c_name, measured, m_name in pairs:
            mine, theirs = data.at(c_name, step), data.at(m_name, step)
            if theirs is not None:
                head = "" if mine is None else f"{counted} {mine:.3f} vs "
                cells.append(f"{head}{measured} {theirs:.3f}")
        return [f"measured by the hardware at step {step}: {', '.join(cells)}"]

    def table(self, report: Report, data: Counters) -> Dict[int, Dict[str, float]]:
        return {step: self._cells(report, data, step) for step in data.steps()}

    def draw(self, ax: Any, report: Report, data: Optional[Counters]) -> None:
        assert data is not None
        styles = {"mfu": ("tab:blue", "-"), "tensor_active": ("tab:blue", "--"),
                  "mbu": ("tab:orange", "-"), "dram_bw_util": ("tab:orange", "--")}
        top = 1.0
        for name, (color, style) in styles.items():
            points = data.series.get(name)
            if not points:
                continue
            steps, values = zip(*points)
            ax.plot(steps, values, color=color, linestyle=style, marker=".",
                    label=dict(SERIES)[name])
            top = max(top, max(values) * 1.1)
        ax.set_ylim(0, top)
        ax.set_title("measured by the hardware: MFU vs tensor-active, MBU vs DRAM use "
                     "(solid: counted; dashed: GPM)")
        ax.set_ylabel("share of the window")
        steps_axis(ax, report)
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))


PANEL = HardwarePanel()
