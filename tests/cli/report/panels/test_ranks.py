"""mfu_tracker/cli/report/panels/ranks.py: the per-rank MFU spread and the
slowest rank by step."""
from __future__ import annotations

from mfu_tracker.cli.report.panels.ranks import PANEL

from cli.report._logs import line, run_record


def test_the_spread_and_the_slowest_rank_by_step(report_of):
    report = report_of([run_record(ranks=4), line(1, mfu=0.5, mfu_rank_min=0.25, mfu_rank_mean=0.5,
                                                  mfu_rank_max=0.75, slowest_rank=2),
                        line(2, mfu=0.5, mfu_rank_min=0.375, mfu_rank_max=0.625)])
    data = report.panel("ranks")
    assert data.series["throughput/mfu_rank_min"] == [(1, 0.25), (2, 0.375)]
    assert data.slowest == [(1, 2.0)]
    text = PANEL.text(report, data)
    assert text == ["per-rank MFU:",
                    "  step=1 throughput/mfu_rank_min=0.25 throughput/mfu_rank_mean=0.5 "
                    "throughput/mfu_rank_max=0.75 throughput/slowest_rank=2",
                    "  step=2 throughput/mfu_rank_min=0.375 throughput/mfu_rank_max=0.625"]
    assert PANEL.summary(report, data) == ["per-rank MFU at step 2: mfu_rank_min 0.375, "
                                           "mfu_rank_max 0.625"]
    assert PANEL.table(report, data)[1]["throughput/mfu_rank_max"] == 0.75


def test_absent_is_said_only_for_a_distributed_run(report_of):
    single = report_of([run_record(), line(1, mfu=0.5)])
    assert single.panel("ranks") is None and PANEL.absent(single) is None
    distributed = report_of([run_record(), {**line(1, mfu=0.5), "world_size": 8}])
    assert PANEL.absent(distributed) == ("throughput/mfu_rank_min / _mean / _max: no per-rank "
                                         "MFU (no per-rank panel)")
    assert PANEL.absent(distributed) in distributed.missing
