"""``mfu-tracker report``'s hardware panel: the arithmetic beside what the
hardware measured, over steps.

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

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..timing._metrics import KEYS, metric_key

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


def _number(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) and value >= 0 else None


@dataclass
class HardwarePanel:
    """The panel's series: each (step, value) over the logged steps."""

    prefix: str
    series: Dict[str, List[Tuple[int, float]]] = field(default_factory=dict)

    def key(self, series: str) -> str:
        return metric_key(self.prefix, dict(SERIES)[series])

    def at(self, series: str, step: int) -> Optional[float]:
        return dict(self.series.get(series, ())).get(step)

    def lines(self) -> List[str]:
        """Every number the panel draws, one line per logged step."""
        steps = sorted({s for points in self.series.values() for s, _ in points})
        out = ["hardware (shares of the window; the arithmetic beside the GPM counters):"]
        for step in steps:
            cells = [f"{self.key(name)}={value!r}" for name, _ in SERIES
                     if (value := self.at(name, step)) is not None]
            out.append(f"  step={step} " + " ".join(cells))
        return out


def hardware_panel(records: Sequence[Mapping[str, Any]], prefix: str) -> Optional[HardwarePanel]:
    """The panel of ``records`` (metrics lines with a ``step``), or None when
    none holds a hardware counter."""
    panel = HardwarePanel(prefix)
    for record in sorted(records, key=lambda r: r["step"]):
        for name, _ in SERIES:
            value = _number(record.get(panel.key(name)))
            if value is not None:
                panel.series.setdefault(name, []).append((record["step"], value))
    if not ({"tensor_active", "dram_bw_util"} & set(panel.series)):
        return None
    return panel


def compute_note(panel: Optional[HardwarePanel], step: int) -> Optional[str]:
    """The waterfall's ``compute`` share at ``step`` read against the tensor
    pipes: how busy they were, and how much of that MFU books."""
    if panel is None:
        return None
    active, ratio = panel.at("tensor_active", step), panel.at("consistency", step)
    if active is None:
        return None
    note = f"compute at step {step}: tensor pipes busy {active:.3g} of the window"
    if ratio is not None:
        note += f", MFU / tensor-active {ratio:.3g}"
    return note


def draw(ax: Any, panel: HardwarePanel, steps_axis: Any) -> None:
    """The panel on matplotlib axes ``ax``; ``steps_axis(ax)`` sets the x axis."""
    styles = {"mfu": ("tab:blue", "-"), "tensor_active": ("tab:blue", "--"),
              "mbu": ("tab:orange", "-"), "dram_bw_util": ("tab:orange", "--")}
    top = 1.0
    for name, (color, style) in styles.items():
        points = panel.series.get(name)
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
    steps_axis(ax)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
