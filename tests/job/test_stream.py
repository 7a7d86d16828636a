"""The readers that stream a metrics log (``job/_stream.py`` and its sinks):
the same figures as the reading path they replaced, in memory bounded by
what is drawn, a long run drawn from a sample that keeps extremes and
changes, and the checks as strict as before.

References: :mod:`_reader_before` (the reading path as it was, copied) read
the same file -- every command's text and JSON compared by
:func:`_reader_check.differences` (which the session also runs on every log
the suite writes, ``conftest.py``); for the sample, the values written into
the log by hand (a spike, a dip, a step change at known lines).
"""
from __future__ import annotations

import json
import random
import re

import _reader_check
import pytest

from mfu_tracker.cli import main
from mfu_tracker.cli._goodput import read_goodput
from mfu_tracker.cli.report._load import drawn_keys, load_streamed
from mfu_tracker.job import LogError, LogReader, job_ledger, read_log, stream_log
from mfu_tracker.job import _stream
from mfu_tracker.job._check import Layouts
from mfu_tracker.job._intervals import BookIntervals, IntervalBook
from mfu_tracker.job._sample import BUCKETS, KeepRuns, RecordSample

P = "throughput"
CAUSES = ("data", "optimizer", "compute", "other")


def run_record(time, start_step, run_id, job=None, ranks=1):
    return {"record": "run", "time": time, "run_id": run_id, "job": job or run_id, "host": "h",
            "pid": 1, "ranks": ranks, "devices": ranks, "process_start": time - 5.0,
            "start_step": start_step, "peak_tflops": 100.0, "peak_source": "datasheet",
            "dtype": "bf16", "version": "0.1.0"}


def metrics_line(step, time, every, mfu, lost, step_s, first_boundary, extra=(), phases=None,
                 compile_calls=0, flops=True):
    """A metrics line as the tracker writes it, its ledger interval the
    ``every`` steps before ``step``."""
    phase_s = phases if phases is not None else {"data": lost[0] * step_s * every,
                                                 "forward": 0.3 * step_s * every,
                                                 "backward": 0.4 * step_s * every}
    line = {"step": step, "time": time, f"{P}/mfu": mfu, f"{P}/step_time_s": step_s,
            f"{P}/tokens_per_sec": 1000.0 / step_s,
            **{f"{P}/mfu_lost/{c}": v for c, v in zip(CAUSES, lost)},
            **{f"{P}/phase_s/{k}": v / every for k, v in phase_s.items()}, **dict(extra)}
    line["ledger"] = {"from_step": step - every, "to_step": step, "step_s": step_s * every,
                      "phase_s": phase_s, "own_s": 0.0, "dropped": 0,
                      "model_flops": 1e12 * every if flops else None,
                      "flops_steps": every if flops else 0, "flops_ranks": 1,
                      "compile_calls": compile_calls, "first_boundary": first_boundary,
                      "first_step_s": 2.5 * step_s}
    return line


def write(path, lines):
    path.write_text("".join(line if isinstance(line, str) else json.dumps(line) + "\n"
                            for line in lines))
    return path


def long_run(lines, start, count, every, t0, rng, checkpoint_every=0, compile_first=False,
             extra=lambda i: ()):
    """``count`` metrics lines of a run resumed at ``start`` (noisy figures)."""
    t = t0
    for i in range(count):
        step_s = 0.1 * (1 + 0.05 * rng.random())
        t += step_s * every
        phases = None
        if checkpoint_every and i % checkpoint_every == checkpoint_every - 1:
            phases = {"data": 0.01, "forward": 0.3, "backward": 0.4, "checkpoint": 2.0}
        lost = [0.05 + 0.02 * rng.random(), 0.1, 0.3 + 0.05 * rng.random(), 0.05]
        lines.append(metrics_line(start + (i + 1) * every, t, every, 1 - sum(lost), lost,
                                  step_s, t0 + 0.5, extra=extra(i), phases=phases,
                                  compile_calls=1 if compile_first and i == 0 else 0))
    return t


# ---- the same figures as before ---------------------------------------------------------

def test_a_restarted_job_over_thousands_of_lines_reads_the_same(tmp_path):
    """Three runs, ~4,500 lines: run 2 resumes inside run 1's last interval
    (lost progress split by steps), run 3 is a new job (start_step 0, no job
    id); checkpoints every 97 lines change the lines' keys; the first run
    marks a compiled call. Every command's output equals the old path's."""
    rng = random.Random(1)
    lines = [run_record(1000.0, 0, "a")]
    t = long_run(lines, 0, 1500, 10, 1000.0, rng, checkpoint_every=97, compile_first=True)
    lines.append({"record": "run_end", "time": t + 1.0, "step": 15000,
                  "ledger": {"from_step": 15000, "to_step": 15000, "step_s": 0.0, "own_s": 0.5}})
    lines.append(run_record(t + 60.0, 14_995, "b"))              # resumes inside [14990, 15000)
    t = long_run(lines, 14_995, 1500, 10, t + 60.0, rng, checkpoint_every=97)
    lines.append(run_record(t + 10.0, 0, "c"))                   # a new job
    long_run(lines, 0, 1500, 10, t + 10.0, rng)
    path = write(tmp_path / "job.jsonl", lines)
    assert _reader_check.differences(str(path)) == []
    ledger = job_ledger(read_goodput(str(path)), 1)
    assert [r.number for r in ledger.runs] == [1, 2]
    assert ledger.badput_s["lost_progress"] > 0 and ledger.badput_s["checkpoint"] > 0
    assert any("straddle the resume point 14995" in note for note in ledger.notes)


def test_bad_lines_and_values_among_thousands_read_the_same(tmp_path):
    """A run of 2,500 lines with, among them, invalid values (NaN, a negative
    time, a string, a bool, an integer past a float's range), a corrupt line, a
    blank line, lines without FLOPs, a peak check, kernel breakdowns, keys
    outside the metric table (some not numbers), and a last line cut short."""
    rng = random.Random(2)
    lines = [run_record(1000.0, 0, "a")]
    long_run(lines, 0, 2500, 10, 1000.0, rng,
             extra=lambda i: {f"{P}/hw/tensor_active": 0.5 if i % 3 else "n/a", "loss": 2.0})
    bad = {350: (f"{P}/mfu", float("nan")), 700: (f"{P}/step_time_s", -1.0),
           1050: (f"{P}/mfu_lost/data", "x"), 1400: (f"{P}/mfu", True),
           1750: (f"{P}/tokens_per_sec", 10 ** 400)}
    for at, (key, value) in bad.items():
        lines[at][key] = value
    for at in range(2000, 2100):
        lines[at]["ledger"]["model_flops"] = None
    lines.insert(500, "{not json\n")
    lines.insert(1000, "\n")
    lines.insert(1500, {"record": "peak_check", "time": 2000.0, "peak_tflops": 100.0,
                        "remeasured_tflops": 60.0})
    lines.insert(2250, {"record": "breakdown", "time": 2100.0, "step": 30000})
    text = "".join(x if isinstance(x, str) else json.dumps(x) + "\n" for x in lines)
    path = tmp_path / "bad.jsonl"
    path.write_text(text + '{"step": 99999, "time": 3')          # cut short
    assert _reader_check.differences(str(path)) == []
    log = read_goodput(str(path))
    assert len(log.invalid) == 5 and len(log.skipped) == 1 and log.cut is not None
    assert log.runs[0].logged == 2500


def test_a_log_without_run_records_and_one_of_many_ranks_read_the_same(tmp_path):
    """A log from before run records (no ledger) and a distributed run's log
    (per-rank losses, the rank spread), each over thousands of lines."""
    rng = random.Random(3)
    old = [{"step": 10 * i, "time": 1000.0 + i, f"{P}/mfu": 0.3 + 0.1 * rng.random(),
            f"{P}/step_time_s": 0.1} for i in range(1, 1500)]
    assert _reader_check.differences(str(write(tmp_path / "old.jsonl", old))) == []

    def ranks(i):
        spread = 0.3 + 0.1 * rng.random()
        return {f"{P}/mfu_rank_min": spread - 0.05, f"{P}/mfu_rank_mean": spread,
                f"{P}/mfu_rank_max": spread + 0.05, f"{P}/slowest_rank": i % 8,
                **({f"{P}/mfu_lost_rank/{c}": (i + k) % 8 for k, c in enumerate(CAUSES)}
                   if i < 1200 else {}), "world_size": 8}
    lines = [run_record(1000.0, 0, "d", ranks=8)]
    long_run(lines, 0, 1500, 10, 1000.0, rng, extra=ranks)
    path = write(tmp_path / "ranks.jsonl", lines)
    assert _reader_check.differences(str(path)) == []


def test_the_comparison_finds_a_changed_figure(tmp_path, monkeypatch):
    """The check is not vacuous: a ledger off by one part in 10^15, or one
    line short in what the advice reads, is a difference."""
    rng = random.Random(4)
    lines = [run_record(1000.0, 0, "a")]
    long_run(lines, 0, 50, 10, 1000.0, rng)
    path = str(write(tmp_path / "m.jsonl", lines))
    assert _reader_check.differences(path) == []
    real = IntervalBook.steps

    def off(self, *args):
        steps = real(self, *args)
        steps.productive *= 1 + 1e-15
        return steps

    monkeypatch.setattr(IntervalBook, "steps", off)
    assert any("goodput job 1" in d for d in _reader_check.differences(path))
    monkeypatch.undo()
    monkeypatch.setattr(RecordSample, "records", lambda self: [])
    found = _reader_check.differences(path)
    assert any("advise last" in d for d in found) and any("report last" in d for d in found)


def test_a_line_at_a_time_and_a_block_at_a_time_agree(tmp_path, monkeypatch):
    """The scanner's fast path (a block of lines of one layout, checked by
    whole columns) and its line-by-line path give the same log, ledger and
    sample, bad lines and all."""
    rng = random.Random(5)
    lines = [run_record(1000.0, 0, "a")]
    long_run(lines, 0, 1500, 10, 1000.0, rng, checkpoint_every=50)
    lines[500][f"{P}/mfu"] = -0.5
    lines[900]["ledger"]["phase_s"]["data"] = float("inf")
    path = str(write(tmp_path / "m.jsonl", lines))

    def read():
        log = stream_log(path, [_stream.KeepAll()])
        streamed = load_streamed(path, "last")
        return (_reader_check._read(log), job_ledger(read_goodput(path)).figures(),
                [r["_line"] for r in streamed.runs[0].metrics])

    blocks = read()
    monkeypatch.setattr(_stream._Scan, "block", lambda self, records, first: False)
    assert read() == blocks
    assert blocks[0]["invalid"] and blocks[0]["skipped"]


def test_lines_that_a_block_parse_could_join_are_each_read_alone(tmp_path, monkeypatch):
    """A block is parsed as one JSON array of its lines; the lines that would
    make that array's items differ from the lines -- a record broken over two
    lines next to a line holding two records, a line with a space before its
    record or a Windows line end -- give the same log as one ``json.loads``
    per line: the broken record and the double line skipped and named (3
    lines), the spaced and CRLF lines read."""
    rng = random.Random(9)
    lines = [run_record(1000.0, 0, "a")]
    long_run(lines, 0, 60, 10, 1000.0, rng)
    text = [json.dumps(line) for line in lines]
    broken = text[20]
    cut = broken.index(', "time"')
    text[20:21] = [broken[:cut], broken[cut + 2:]]        # one record over two lines
    text[30] = text[30] + "," + text[31]                  # two records on one line
    del text[31]
    text[40] = " " + text[40]
    text[45] = text[45] + "\r"
    path = tmp_path / "m.jsonl"
    path.write_text("".join(t + "\n" for t in text))

    def read():
        log = stream_log(str(path), [_stream.KeepAll()])
        return [r["step"] for r in log.runs[0].metrics], log.skipped

    steps, skipped = read()
    monkeypatch.setattr(_stream, "_parse", lambda raws: None)   # one json.loads per line
    assert read() == (steps, skipped)
    assert len(skipped) == 3 and len(steps) == 60 - 3
    assert all(f":{n}:" in s for n, s in zip((21, 22, 31), skipped)), skipped


def test_a_growing_log_read_in_parts_reads_as_a_whole(tmp_path):
    """A log still being written (a page that follows a job): read, appended
    to -- a line half written at one read, completed before the next --, read
    again by the same LogReader: the same runs, notes, ledger and sample as
    one read of the finished file, each line read once."""
    rng = random.Random(11)
    lines = [run_record(1000.0, 0, "a")]
    t = long_run(lines, 0, 1200, 10, 1000.0, rng)
    lines.append(run_record(t + 30.0, 11_990, "b"))
    long_run(lines, 11_990, 900, 10, t + 30.0, rng)
    text = "".join(json.dumps(line) + "\n" for line in lines)
    path = tmp_path / "live.jsonl"
    reader = LogReader(str(path), [BookIntervals(), KeepRuns("all", follows=drawn_keys)])
    for cut in (len(text) // 3, len(text) // 2 + 17, len(text)):   # mid-line, then whole
        path.write_text(text[:cut])
        live = reader.read(final=cut == len(text))
    assert live.cut is None and live.skipped == [] and reader.number == len(lines) + 1
    whole = stream_log(str(path), [BookIntervals(), KeepRuns("all", follows=drawn_keys)])
    assert [r.metrics for r in live.runs] == [r.metrics for r in whole.runs]
    assert job_ledger(live).figures() == job_ledger(whole).figures()


# ---- a long run, drawn from a sample ------------------------------------------------------

def numbers(out, key):
    """``step=N key=value`` pairs of the MFU panel (report --numbers)."""
    return [(int(s), float(v)) for s, v in re.findall(rf"  step=(\d+) {re.escape(key)}=(\S+)\n",
                                                      out)]


def test_a_spike_a_dip_and_a_step_change_survive_the_sample(tmp_path, capsys):
    """20,000 lines of noisy MFU around 0.40; one line at 0.90 (a spike), one
    at 0.05 (a dip), from line 15,000 on around 0.30 (a step change); one
    line whose data share spikes to 0.5. The picture is drawn from a few
    thousand lines (at most BUCKETS buckets, each its first and last line and
    the extremes of the six keys drawn), and each of them is among them, at
    its step."""
    rng = random.Random(6)
    lines = [run_record(1000.0, 0, "a")]
    long_run(lines, 0, 20000, 10, 1000.0, rng)
    for i, line in enumerate(lines[1:], 1):
        line[f"{P}/mfu"] = (0.40 if i < 15000 else 0.30) + 0.01 * rng.random()
    lines[6000][f"{P}/mfu"], lines[11000][f"{P}/mfu"] = 0.90, 0.05
    lines[8000][f"{P}/mfu_lost/data"] = 0.5
    path = write(tmp_path / "long.jsonl", lines)
    assert main(["report", str(path), "--out", str(tmp_path / "r.png"), "--numbers"]) == 0
    out = capsys.readouterr().out
    drawn = dict(numbers(out, f"{P}/mfu"))
    assert "20,000 metrics lines drawn" in out and len(drawn) <= BUCKETS * (2 + 2 * 6)
    assert drawn[60000] == 0.90 and drawn[110000] == 0.05          # line i is step 10 i
    # the step change: every line drawn before it at the old level, every one
    # after at the new; the last before and the first after it no further apart
    # than two buckets (the bucket holding it keeps a line of each level)
    change, width = 150000, int(re.search(r"buckets of (\d+) consecutive", out).group(1))
    assert all((v >= 0.40) == (s < change) for s, v in drawn.items() if v not in (0.90, 0.05))
    after, before = min(s for s in drawn if s >= change), max(s for s in drawn if s < change)
    assert after - before <= 2 * width * 10
    bar = re.search(r"\n  step=80000 (.*) sum=", out)
    assert bar and f"{P}/mfu_lost/data=0.5 " in bar.group(1), "the data share's spike is lost"
    steps = list(drawn)
    assert steps == sorted(steps) and steps[0] == 10 and steps[-1] == 200000


def test_the_sample_is_bounded_whatever_the_length():
    """A run of 10^4 lines and one of 10^5: the sample keeps a bounded number
    of lines (at most BUCKETS buckets, each its first, last and two per
    followed key), not a number that grows with the run."""
    rng = random.Random(7)
    layouts = Layouts()
    kept = []
    for count in (10_000, 100_000):
        sample = RecordSample(drawn_keys)
        lines = []
        long_run(lines, 0, 1000, 10, 0.0, rng)
        layout = layouts.of(lines[0])
        follows = len(drawn_keys(layout))
        block = []
        for i in range(count):
            line = dict(lines[i % 1000], _line=i + 1)
            line[f"{P}/mfu"] = rng.random()
            block.append(line)
            if len(block) == 50:
                sample.add_block(block, layout)
                block = []
        kept.append(len(sample.records()))
        assert kept[-1] <= BUCKETS * (2 + 2 * follows) + 2
    assert kept[1] < 2 * kept[0]          # ten times the lines, not ten times the sample


def test_a_short_run_is_drawn_whole(tmp_path):
    """Up to BUCKETS lines, every line is drawn (the figures of a short run
    are the full reading's, exactly)."""
    rng = random.Random(8)
    lines = [run_record(1000.0, 0, "a")]
    long_run(lines, 0, BUCKETS, 10, 1000.0, rng)
    path = str(write(tmp_path / "m.jsonl", lines))
    assert load_streamed(path).runs[0].metrics == read_log(path).runs[0].metrics
    assert load_streamed(path).runs[0].sampling is None


@pytest.mark.parametrize("shape", ["noisy", "rounded", "sorted", "two values", "all equal", "odd",
                                   "short"])
def test_the_median_of_many_mean_steps_is_statistics_median(shape):
    """The first step's excess is measured against the median of the run's
    mean steps; past 2^16 of them it is selected without sorting them all:
    the same number as ``statistics.median``, to the bit."""
    import statistics
    from array import array

    from mfu_tracker.job._intervals import median

    rng = random.Random(shape)
    count = {"odd": 300_001, "short": 1_001}.get(shape, 300_000)
    values = [0.1 * (1 + 0.05 * rng.random()) for _ in range(count)]
    if shape == "rounded":
        values = [round(v, 4) for v in values]          # many equal values
    elif shape == "sorted":
        values.sort()
    elif shape == "two values":
        values = [1.0] * (count // 2) + [2.0] * (count - count // 2)
    elif shape == "all equal":                           # every interval's mean step the same
        values = [0.1] * (count - 1) + [2.5]
    assert median(array("d", values)) == statistics.median(values)


def test_the_ledger_keeps_a_few_numbers_per_interval():
    """The ledger's memory per interval: seven 8-byte columns, no record."""
    book = IntervalBook(1)
    columns = [book.starts, book.ends, book.lines, book.step_s, book.data, book.flops,
               book.means]
    assert sum(c.itemsize for c in columns) == 56


# ---- the checks stay as strict ------------------------------------------------------------

def test_each_bad_line_in_a_long_log_is_named_once(tmp_path, capsys):
    """In a clean run of 3,000 lines, one invalid value and one corrupt line:
    each named once, at its line; the rest read; --strict refuses the
    corrupt line."""
    rng = random.Random(9)
    lines = [run_record(1000.0, 0, "a")]
    long_run(lines, 0, 3000, 10, 1000.0, rng)
    lines[1500][f"{P}/mfu"] = -0.1
    lines[2200] = '{"step": 22000, "time": \n'
    path = write(tmp_path / "m.jsonl", lines)
    log = read_goodput(str(path))
    assert log.invalid == [f"{path}:1501: {P}/mfu=-0.1: negative ratio; not drawn"]
    assert len(log.skipped) == 1 and log.skipped[0].startswith(f"{path}:2201: not a JSON line")
    assert log.runs[0].logged == 2999
    with pytest.raises(LogError, match=rf"{re.escape(str(path))}:2201: .*--strict"):
        read_goodput(str(path), strict=True)
    assert main(["goodput", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.count("negative ratio") == 1 and "skipped: 1 line(s)" in out


def test_the_report_says_what_it_drew(tmp_path, capsys):
    """A downsampled run says so in the summary: how many lines of how many."""
    rng = random.Random(10)
    lines = [run_record(1000.0, 0, "a")]
    long_run(lines, 0, 3 * BUCKETS, 10, 1000.0, rng)
    path = write(tmp_path / "m.jsonl", lines)
    assert main(["report", str(path), "--out", str(tmp_path / "r.png")]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "metrics lines drawn" in x)
    kept = int(line.split(":")[1].split(" of ")[0].replace(",", ""))
    assert line.startswith("run 1: ") and f"of {3 * BUCKETS:,} metrics lines" in line
    assert BUCKETS // 2 <= kept < 3 * BUCKETS
