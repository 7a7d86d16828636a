"""What each rank contributes to the job's figures, recorded for the tests
(the torchrun workers, tests/test_lightning_ddp.py's):
``record_rows(out)`` appends to ``out["rows"]`` the row this rank gives every
aggregation (its own figures, what ``combine()`` receives), so a test checks
which rank the job's figures name against what the ranks measured -- not
against how the machine happened to schedule them."""
from __future__ import annotations

import dataclasses


def record_rows(out: dict) -> None:
    from mfu_tracker.tracker._tracker import Tracker

    rows = out.setdefault("rows", [])
    rank_figures = Tracker._rank_figures

    def recording(self, totals, *interval):
        figures = rank_figures(self, totals, *interval)
        rows.append(dataclasses.asdict(figures))
        return figures

    Tracker._rank_figures = recording
