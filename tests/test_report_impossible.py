"""The report on figures that cannot be, and on how it prints figures.

MFU above 1 and a negative share of the step time are drawn as logged (never
clamped), and each gets one ``caveat:`` line naming the likely cause, read
from the run record's ``peak_source``; the picture marks them (the MFU
panel's line at 1 and a cross on each point above it, the waterfall's
hatched bars). The references are hand-written logs whose figures are known
by construction (each line's arithmetic beside it), and the matplotlib axes
the panels drew on. Printed figures are rounded to what they mean
(``goodput``, the busy-peak caveat); ``--json`` and ``--numbers`` keep them
exact.
"""
from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("matplotlib")

from mfu_tracker.cli import main  # noqa: E402
from mfu_tracker.cli.report import load, plan  # noqa: E402
from mfu_tracker.cli.report._render import pyplot  # noqa: E402
from mfu_tracker.cli.report.panels import mfu as mfu_panel  # noqa: E402
from mfu_tracker.cli.report.panels import waterfall as waterfall_panel  # noqa: E402
from mfu_tracker.timing._metrics import format_metrics  # noqa: E402

#: (step, mfu, compute share): data 0.01 and optimizer 0.10 at every step,
#: other closes the sum (1 - mfu - 0.11 - compute)
STEPS = ((6, 0.80, 0.05), (7, 1.10, -0.25), (8, 1.235, -0.453))   # other 0.04, 0.04, 0.108


def log_of(tmp_path, peak_source="measured", steps=STEPS, peak_check=None):
    lines = [{"record": "run", "time": 99.0, "run_id": "r1", "ranks": 1, "devices": 1,
              "process_start": 98.0, "start_step": 0, "peak_tflops": 0.2,
              "peak_source": peak_source, "dtype": "fp32"}]
    for step, mfu, compute in steps:
        lost = {"data": 0.01, "optimizer": 0.10, "compute": compute,
                "other": 1 - mfu - 0.11 - compute}
        lines.append({"step": step, "time": 100.0 + step, **format_metrics(
            {"mfu": mfu, "mfu_lost": lost, "step_time_s": 0.123456789}, "throughput")})
    if peak_check:
        lines.append({"record": "peak_check", "time": 120.0, "peak_tflops": peak_check[0],
                      "remeasured_tflops": peak_check[1], "busy": True})
    path = tmp_path / "m.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def summary(capsys, path, tmp_path):
    status = main(["report", str(path), "--out", str(tmp_path / "r.png")])
    out, err = capsys.readouterr()
    assert status == 0, err
    return out


def caveats(out):
    return [line[len("caveat: "):] for line in out.splitlines() if line.startswith("caveat: ")]


def test_mfu_above_one_and_a_negative_share_each_get_a_caveat_naming_the_cause(tmp_path, capsys):
    out = summary(capsys, log_of(tmp_path), tmp_path)
    above, compute = caveats(out)
    assert above.startswith("MFU above 1 cannot be (it is drawn as logged, never clamped): "
                            "1.235 at step 8, above 1 at 2 of 3 logged steps; likely cause: the "
                            "peak was measured (a GEMM benchmark), and a GEMM timed while other "
                            "work held the cores reads low")
    assert compute.startswith("a negative share of the step time cannot be: compute -0.453 at "
                              "step 8 (below 0 at 2 of 3 bars): the ideal time (model FLOPs / "
                              "peak) is longer than the marked forward + backward")
    # drawn as logged: the summary still says what was logged
    assert "MFU (throughput/mfu, window): 1.235 at step 8" in out


@pytest.mark.parametrize("source, cause", [
    ("user", "the peak given (peak_tflops= or MFU_TRACKER_PEAK_TFLOPS) is below what the device "
             "does"),
    ("datasheet", "the model FLOPs are more than the step did (a count taken twice"),
    ("unknown", "the peak is too low for the device, or the model FLOPs are more than the step did"),
])
def test_the_cause_follows_where_the_peak_came_from(tmp_path, capsys, source, cause):
    out = summary(capsys, log_of(tmp_path, peak_source=source), tmp_path)
    assert f"likely cause: {cause}" in caveats(out)[0]


def test_other_below_zero_names_overlapping_phases(tmp_path, capsys):
    # 0.5 + 0.01 + 0.10 + compute 0.5 = 1.11: other = 1 - 1.11 = -0.11
    out = summary(capsys, log_of(tmp_path, steps=((3, 0.5, 0.5),)), tmp_path)
    assert caveats(out) == [
        "a negative share of the step time cannot be: other -0.110 at step 3 (below 0 at 1 of 1 "
        "bars): MFU and the marked phases add up to more than the step (phases that overlap, or "
        "one marked across a step boundary)"]


def test_possible_figures_get_no_caveat(tmp_path, capsys):
    out = summary(capsys, log_of(tmp_path, steps=((3, 0.5, 0.2), (4, 0.6, 0.1))), tmp_path)
    assert caveats(out) == []


def test_the_picture_marks_what_cannot_be(tmp_path):
    plt = pyplot()
    report = plan(load(str(log_of(tmp_path))))
    fig, (top, bottom) = plt.subplots(2, 1)
    try:
        mfu_panel.PANEL.draw(top, report, report.panel("mfu"))
        waterfall_panel.PANEL.draw(bottom, report, report.panel("waterfall"))
        lines = {(tuple(line.get_xdata()), tuple(line.get_ydata())): line for line in top.lines}
        assert ((0, 1), (1.0, 1.0)) in lines                       # the line at MFU = 1
        crosses = [line for line in top.lines if line.get_marker() == "x"]
        assert [tuple(line.get_ydata()) for line in crosses] == [(1.10, 1.235)]   # steps 7, 8
        hatched = [patch for patch in bottom.patches if patch.get_hatch() == "//"]
        assert [round(patch.get_x() + patch.get_width() / 2) for patch in hatched] == [1, 2]
        # the waterfall's axis shows MFU above 1: 1.235 + data 0.01 + optimizer 0.10
        assert bottom.get_ylim()[1] == pytest.approx(1.345)
        texts = " ".join(t.get_text() for t in top.texts)
        assert "cannot be: MFU above 1 (1.235 at step 8); compute below 0 (-0.453 at step 8)" in texts
    finally:
        plt.close(fig)


@pytest.mark.parametrize("first, again, words", [
    (0.002, 0.17, "against 0.17 the MFU here reads 85× too high"),    # 0.17 / 0.002 = 85
    (0.17, 0.002, "the MFU here is against the higher of the two"),
])
def test_the_busy_peak_caveat_reads_right_for_any_ratio(tmp_path, capsys, first, again, words):
    out = summary(capsys, log_of(tmp_path, steps=((3, 0.5, 0.2),), peak_check=(first, again)),
                  tmp_path)
    (caveat,) = caveats(out)
    assert caveat.endswith(words), caveat
    assert "as high" not in out


def test_goodput_prints_rounded_figures_and_its_json_exact_ones(tmp_path, capsys):
    path = log_of(tmp_path, steps=((3, 0.5, 0.2), (4, 0.6, 0.1)))
    status = main(["goodput", str(path), "--json", str(tmp_path / "g.json")])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert not re.search(r"\.\d{5,}", out), out          # no 0.42344538083492955
    exact = json.loads((tmp_path / "g.json").read_text())
    # the log's first process start (98.0) to its last record (104.0): 6 s
    assert exact["job_wall_s"] == 6.0 and "job_wall_s=6\n" in out
    printed = dict(re.findall(r"^(goodput|job_mfu|badput/\w+)=(\S+)$", out, re.M))
    for key, text in printed.items():
        assert text == f"{exact[key]:.3f}", (key, text)  # a fraction or a ratio: 3 places
