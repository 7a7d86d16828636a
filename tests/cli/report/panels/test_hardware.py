"""mfu_tracker/cli/report/panels/hardware.py: MFU beside the tensor pipes'
busy share, MBU beside DRAM use, and the waterfall's compute note."""
from __future__ import annotations

from mfu_tracker.cli.report.panels.hardware import MISSING, PANEL, SERIES, compute_note

from cli.report._logs import line, run_record


def gpm_log():
    return [run_record(),
            line(1, mfu=0.4, hw__tensor_active=0.5, hw__mfu_consistency=0.8, mbu=0.1,
                 hw__dram_bw_util=0.3, mfu_lost__compute=0.6),
            line(2, mfu=0.45, hw__tensor_active=-0.1, hw__dram_bw_util=0.35,
                 mfu_lost__compute=0.55)]


def test_the_series_read_from_the_gpm_keys(report_of):
    assert [name for name, _ in SERIES] == ["mfu", "tensor_active", "mbu", "dram_bw_util",
                                            "consistency"]
    report = report_of(gpm_log())
    data = report.panel("hardware")
    # a negative share is no share: step 2's tensor_active is left out (and named invalid)
    assert data.series["tensor_active"] == [(1, 0.5)]
    assert data.at("dram_bw_util", 2) == 0.35 and data.at("tensor_active", 2) is None
    assert PANEL.steps(data) == [1, 2]
    assert PANEL.text(report, data)[1] == (
        "  step=1 throughput/mfu=0.4 throughput/hw/tensor_active=0.5 throughput/mbu=0.1 "
        "throughput/hw/dram_bw_util=0.3 throughput/hw/mfu_consistency=0.8")
    assert PANEL.summary(report, data) == \
        ["measured by the hardware at step 2: DRAM use 0.350"]


def test_the_compute_note(report_of):
    report = report_of(gpm_log())
    assert compute_note(report, 1) == \
        "compute at step 1: tensor pipes busy 0.5 of the window, MFU / tensor-active 0.8"
    assert compute_note(report, 2) is None            # no tensor-active at step 2


def test_no_counters_no_panel(report_of):
    report = report_of([run_record(), line(1, mfu=0.4, mbu=0.1)])
    assert report.panel("hardware") is None and MISSING in report.missing
    assert compute_note(report, 1) is None
