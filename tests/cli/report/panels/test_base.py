"""mfu_tracker/cli/report/panels/_base.py: what a panel does by default."""
from __future__ import annotations

import pytest

from mfu_tracker.cli.report.panels._base import Panel

from cli.report._logs import line, run_record


def test_the_defaults_draw_nothing_and_say_nothing(report_of):
    report = report_of([run_record(), line(1, mfu=0.5)])
    panel = Panel()
    assert panel.placeholder(report) is False and panel.absent(report) is None
    assert panel.steps(object()) == [] and panel.text(report, None) == []
    assert panel.summary(report, None) == [] and panel.table(report, None) == {}


def test_collect_and_draw_must_be_written():
    with pytest.raises(NotImplementedError):
        Panel().collect(None)
    with pytest.raises(NotImplementedError):
        Panel().draw(None, None, None)
