"""mfu_tracker/cli/view/_progress.py: progress and the ETA against a budget,
by hand arithmetic."""
from __future__ import annotations

from mfu_tracker.cli.view._figure import Newest
from mfu_tracker.cli.view._progress import NO_BUDGET, progress
from mfu_tracker.job._records import Run

from cli.view._pages import figures

# step 25 at time 150, the run's first step boundary at 100: 2 s per step;
# 1000 tokens/s x 0.5 s = 500 tokens per step
RECORDS = [{"_line": 3, "step": 25, "time": 150.0, "p/tokens_per_sec": 1000.0,
            "p/step_time_s": 0.5, "ledger": {"first_boundary": 100.0}}]
RUN = Run(number=1, record={"record": "run", "start_step": 0}, line=1)


def of(**budget):
    return figures(progress(RUN, RECORDS, Newest(RECORDS, "p"), budget.get("tokens"),
                            budget.get("steps")))


def test_against_a_step_budget():
    found = of(steps=100)
    assert found["steps_done"]["value"] == 25.0
    assert found["fraction_done"]["value"] == 0.25          # 25 / 100
    assert found["steps_left"]["value"] == 75.0             # 100 - 25
    assert found["eta_s"]["value"] == 150.0                 # 75 steps x 2 s
    assert found["eta_s"]["inputs"][0]["value"] == 2.0      # (150 - 100) / 25


def test_against_a_token_budget():
    found = of(tokens=50000.0)
    assert found["tokens_per_step"]["value"] == 500.0
    assert found["tokens_done"]["value"] == 12500.0         # 25 x 500
    assert found["fraction_done"]["value"] == 0.25          # 12500 / 50000
    assert found["steps_left"]["value"] == 75.0             # (50000 - 12500) / 500


def test_without_a_budget_or_a_line():
    assert progress(RUN, RECORDS, Newest(RECORDS, "p"), None, None) == {"absent": NO_BUDGET}
    assert progress(RUN, [], Newest([], "p"), None, 10) == {"absent": "no metrics line yet"}


def test_an_ended_run_has_no_eta():
    ended = Run(number=1, record={"record": "run"}, line=1, end={"record": "run_end"})
    found = figures(progress(ended, RECORDS, Newest(RECORDS, "p"), None, 100))
    assert found["eta_s"]["value"] is None and found["eta_s"]["absent"] == "the run has ended"
