"""mfu_tracker/cli/report/_compare.py: two hand-written logs side by side --
which breakdown, waterfall and run each side is, the differences B - A by
hand (rounded and in full), what a log lacks named, the arguments refused."""
from __future__ import annotations

import base64
import re

import pytest

from mfu_tracker.breakdown._record import CLASSES, Breakdown, ClassTime
from mfu_tracker.cli.report import _compare
from mfu_tracker.cli.report._kernels import MISSING

from cli.report._logs import line, run_record


def breakdown(step, step_s, idle_s, **times):
    """A profiled step's record: each class's seconds, idle the rest."""
    classes = {name: ClassTime() for name in CLASSES}
    for name, seconds in times.items():
        classes[name] = ClassTime(time_s=seconds, active_s=seconds, count=1)
    return {"record": "breakdown", "time": 100.0 + step,
            **Breakdown(step_s, idle_s, classes, step=step).to_record()}


# A: 0.1 s steps; GEMM 0.06 s and elementwise 0.03 s of the profiled step, idle 0.01 s.
# Its waterfall is step 10's (step 20 logs MFU without causes); its MFU step 20's.
A_LOG = [run_record(),
         line(10, mfu=0.4, step_time_s=0.1, mfu_lost__data=0.1, mfu_lost__other=0.5),
         breakdown(10, 0.1, 0.01, gemm=0.06, elementwise=0.03),
         line(20, mfu=0.4, step_time_s=0.1)]
# B: 0.08 s steps; GEMM 0.06 s, elementwise 0.01 s, idle 0.01 s.
B_LOG = [run_record(),
         line(10, mfu=0.5, step_time_s=0.08, mfu_lost__data=0.05, mfu_lost__compute=0.45),
         breakdown(10, 0.08, 0.01, gemm=0.06, elementwise=0.01)]


@pytest.fixture
def sides(write_log):
    return _compare.compare([str(write_log(A_LOG, "a.jsonl")), str(write_log(B_LOG, "b.jsonl"))])


def test_each_side_is_its_newest_breakdown_and_waterfall(sides):
    a, b = sides
    assert (a.label, b.label) == ("A: a.jsonl (run 1)", "B: b.jsonl (run 1)")
    assert a.prefix == "throughput" and a.breakdown.step_s == 0.1
    assert a.waterfall == {"mfu": 0.4, "data": 0.1, "other": 0.5} and a.waterfall_step == 10
    assert (a.mfu, a.step_time_s) == (0.4, 0.1)                # the run's last line
    assert b.waterfall == {"mfu": 0.5, "data": 0.05, "compute": 0.45}


def test_the_differences_by_hand(sides):
    lines = _compare.text(*sides).splitlines()
    # GEMM: 0.06 / 0.1 = 0.600 of A, 0.06 / 0.08 = 0.750 of B
    assert "  gemm: A=0.600 B=0.750 diff=+0.150 time_s A=0.06 B=0.06 diff=0" in lines
    # elementwise: 0.03 / 0.1 = 0.300, 0.01 / 0.08 = 0.125; 0.01 - 0.03 = -0.02 s
    assert "  elementwise: A=0.300 B=0.125 diff=-0.175 time_s A=0.03 B=0.01 diff=-0.02" in lines
    assert "  step_s: A=0.1 B=0.08 diff=-0.02" in lines
    assert "waterfall of A at step=10: mfu=0.400 data=0.100 other=0.500 sum=1.000" in lines
    # a cause only one side has: both values, no difference
    assert "  data: A=0.100 B=0.050 diff=-0.050" in lines
    assert "  other: A=0.500 B=None" in lines and "  compute: A=None B=0.450" in lines
    assert "mfu: A=0.400 B=0.500 ratio B/A=1.25" in lines              # 0.5 / 0.4
    assert "step_time_s: A=0.1 B=0.08 ratio B/A=0.8" in lines          # 0.08 / 0.1
    assert not [x for x in lines if x.startswith("missing:")]


def test_numbers_in_full_precision(sides):
    lines = _compare.text(*sides, exact=True).splitlines()
    assert "waterfall of B at step=10: mfu=0.5 data=0.05 compute=0.45 sum=1.0" in lines
    assert f"  step_s: A=0.1 B=0.08 diff={0.08 - 0.1!r}" in lines
    assert f"step_time_s: A=0.1 B=0.08 ratio B/A={0.08 / 0.1!r}" in lines


def test_what_a_log_lacks_is_named_and_the_rest_still_compared(write_log):
    plain = [run_record(), line(5, mfu=0.0, step_time_s=0.2)]     # no profiled step, no causes
    a, b = _compare.compare([str(write_log(A_LOG, "a.jsonl")), str(write_log(plain, "p.jsonl"))])
    lines = _compare.text(a, b).splitlines()
    assert f"missing: B: {MISSING}" in lines
    assert "missing: B: no waterfall (mfu and mfu_lost/* keys)" in lines
    assert not [x for x in lines if "B - A" in x]                # nothing to difference
    assert "mfu: A=0.400 B=0.000 ratio B/A=0" in lines           # 0 / 0.4
    assert "step_time_s: A=0.1 B=0.2 ratio B/A=2" in lines
    b_then_a = _compare.text(b, a).splitlines()
    assert "mfu: A=0.000 B=0.400" in b_then_a                    # no ratio over an MFU of 0


def test_which_chooses_the_run_in_each_log(write_log):
    two_runs = [run_record(time=100.0), line(1, time=101.0, mfu=0.1),
                run_record(time=200.0), line(2, time=201.0, mfu=0.2)]
    path = str(write_log(two_runs, "two.jsonl"))
    first, _ = _compare.compare([path, path], which="1")
    last, _ = _compare.compare([path, path])
    assert (first.run.number, first.mfu) == (1, 0.1) and (last.run.number, last.mfu) == (2, 0.2)


@pytest.mark.parametrize("paths", [["a.jsonl"], ["a.jsonl", "b.jsonl", "c.jsonl"], "ab"])
def test_two_logs_and_no_other_number(paths):
    with pytest.raises(ValueError, match="paths: give two logs"):
        _compare.compare(paths)


def test_run_writes_the_picture_and_the_numbers(write_log, tmp_path):
    pytest.importorskip("matplotlib")
    paths = [str(write_log(A_LOG, "a.jsonl")), str(write_log(B_LOG, "b.jsonl"))]
    out = tmp_path / "ab.html"
    numbers = _compare.run(paths, str(out), title="A <vs> B")
    assert numbers == _compare.text(*_compare.compare(paths))
    page = out.read_text()
    assert "<title>A &lt;vs&gt; B</title>" in page
    image = re.search(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page).group(1)
    assert base64.b64decode(image)[:8] == b"\x89PNG\r\n\x1a\n"
    assert "mfu: A=0.400 B=0.500 ratio B/A=1.25" in page
