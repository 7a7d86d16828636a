"""mfu_tracker/cli/report/panels (the package): the panels in drawing order,
each a Panel with its own name."""
from __future__ import annotations

from mfu_tracker.cli.report.panels import PANELS, Panel


def test_the_panels_top_to_bottom():
    assert [panel.name for panel in PANELS] == \
        ["mfu", "waterfall", "phases", "ranks", "hardware", "moe", "kernels", "ledger"]
    assert all(isinstance(panel, Panel) for panel in PANELS)


def test_each_panel_names_its_module():
    for panel in PANELS:
        assert type(panel).__module__ == f"mfu_tracker.cli.report.panels.{panel.name}"
