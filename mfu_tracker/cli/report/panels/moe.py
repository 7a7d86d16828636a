"""The mixture-of-experts panel: the sampled steps' expert load over steps.

Three series from the ``moe/*`` keys (``Tracker(moe=)``, docs/moe.md):
``moe/imbalance`` (busiest expert over the mean, 1.0 balanced; its own
axis), the padded rows' share of the expert GEMMs' FLOPs
(``moe/padded_flops_share``) and the dropped share of the token-expert
assignments (``moe/dropped_share``). A log without them (a dense model, or
``moe=`` off) has no panel, and the report's "missing" line says nothing of it.
"""
from __future__ import annotations

from typing import Any, List, Optional, Tuple

from ....timing._metrics import KEYS
from .._axes import steps_axis
from .._model import Report, number
from .hardware import Counters, HardwarePanel

__all__ = ["PANEL"]

_NAMES = {key.name for key in KEYS}
#: (series, key name), each drawn when the log has it.
SERIES: Tuple[Tuple[str, str], ...] = (
    ("imbalance", "moe/imbalance"), ("padded", "moe/padded_flops_share"),
    ("dropped", "moe/dropped_share"), ("layer", "moe/straggler_layer"),
    ("expert", "moe/straggler_expert"), ("sampled", "moe/sampled_step"),
)
assert all(name in _NAMES for _, name in SERIES)


class MoEPanel(HardwarePanel):
    """The hardware panel's steps, cells, text and table over the ``moe/*`` series."""

    name = "moe"
    series = SERIES
    heading = "mixture of experts (the last sampled step's load at each logged step):"

    def collect(self, report: Report) -> Optional[Counters]:
        data = Counters()
        for record, _ in report.points:
            for name, key in SERIES:
                value = number(record.get(report.key(key)))
                if value is not None:
                    data.series.setdefault(name, []).append((record["step"], value))
        return data if "imbalance" in data.series else None

    def absent(self, report: Report) -> Optional[str]:
        return None        # a dense model's report says nothing of experts

    def summary(self, report: Report, data: Counters) -> List[str]:
        # the newest step with an imbalance: a later line may carry other
        # moe/* keys without one (a hand-edited log, another writer)
        step = max(step for step, _ in data.series["imbalance"])
        at = {name: data.at(name, step) for name, _ in SERIES}
        cells = [f"imbalance {at['imbalance']:.3f}"]
        if at["layer"] is not None and at["expert"] is not None:
            cells.append(f"straggler expert {at['expert']:.0f} of MoE layer {at['layer']:.0f}")
        if at["padded"] is not None:
            cells.append(f"padded {at['padded']:.3f} of the expert FLOPs")
        if at["dropped"] is not None:
            cells.append(f"dropped {at['dropped']:.3f} of the assignments")
        sampled = "" if at["sampled"] is None else f" (sampled step {at['sampled']:.0f})"
        return [f"expert load at step {step}{sampled}: {', '.join(cells)}"]

    def draw(self, ax: Any, report: Report, data: Optional[Counters]) -> None:
        assert data is not None
        steps, values = zip(*data.series["imbalance"])
        ax.plot(steps, values, color="tab:red", marker=".", label="moe/imbalance (left)")
        ax.axhline(1.0, color="grey", linewidth=0.8, linestyle=":")
        ax.set_ylim(0, max(2.0, max(values) * 1.1))
        ax.set_ylabel("busiest expert / mean")
        shares = ax.twinx()
        for name, color in (("padded", "tab:purple"), ("dropped", "tab:brown")):
            points = data.series.get(name)
            if points:
                xs, ys = zip(*points)
                shares.plot(xs, ys, color=color, linestyle="--", marker=".",
                            label=dict(SERIES)[name] + " (right)")
        shares.set_ylim(0, 1)
        shares.set_ylabel("share")
        ax.set_title("mixture of experts: expert imbalance, padded FLOPs, dropped tokens")
        steps_axis(ax, report)
        ax.grid(alpha=0.3)
        handles = ax.get_legend_handles_labels()
        more = shares.get_legend_handles_labels()
        ax.legend(handles[0] + more[0], handles[1] + more[1], fontsize="small",
                  loc="upper left", bbox_to_anchor=(1.05, 1.0))


PANEL = MoEPanel()
