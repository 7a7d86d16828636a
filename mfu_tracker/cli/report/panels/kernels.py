"""The kernel breakdown panel: one stacked bar per profiled step
(``breakdown`` records, or the ``kernel_share/*`` keys from TensorBoard),
each kernel class's share and idle's; the last step's class table printed.
The data and drawing are :mod:`mfu_tracker.cli.report._kernels`'s (shared
with ``report A B``)."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from .._kernels import MISSING, KernelPanel, draw, kernel_panel
from .._model import Report
from ._base import Panel

__all__ = ["MISSING", "PANEL"]


class KernelsPanel(Panel):
    name = "kernels"

    def collect(self, report: Report) -> Optional[KernelPanel]:
        return kernel_panel(report.runs, report.prefix)

    def absent(self, report: Report) -> str:
        return MISSING

    def text(self, report: Report, data: KernelPanel) -> List[str]:
        return data.lines()

    def summary(self, report: Report, data: KernelPanel) -> List[str]:
        step, shares, _ = data.bars[-1]
        top = sorted(shares.items(), key=lambda kv: -kv[1])[:4]
        return [f"kernel breakdown of the profiled step {step}: "
                + ", ".join(f"{row} {share:.3f}" for row, share in top)]

    def table(self, report: Report, data: KernelPanel) -> Dict[int, Dict[str, float]]:
        return {step: {f"kernel_share/{row}": v for row, v in shares.items()}
                for step, shares, _ in data.bars}

    def draw(self, ax: Any, report: Report, data: Optional[KernelPanel]) -> None:
        assert data is not None
        draw(ax, data)


PANEL = KernelsPanel()
