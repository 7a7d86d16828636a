"""``log_path=``: every metric dict logged is one JSON line, equal to what the
caller got back; a failing write warns once and stops; only rank 0 writes.

The reference for each line is the dict ``metrics()`` returned in the same
call (and, for the Trainer, the callback's own ``history``); the step count
is the number of ``step()`` calls minus one (hand counted below).
"""
from __future__ import annotations

import json
import time
import warnings

import pytest

from mfu_tracker import Tracker
from mfu_tracker._metrics_log import MetricsLog

PEAK_TFLOPS = 1.0


def lines(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def tracker(path, **kwargs):
    # 100 FLOPs per step: MFU far below 1 however short a step is
    return Tracker(100.0, dtype="fp32", peak_tflops=PEAK_TFLOPS, clock="cpu", window=3, warmup=0,
                   log_path=path, **kwargs)


def test_each_metrics_call_is_one_line_equal_to_the_dict_returned(tmp_path, monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    path = tmp_path / "sub" / "metrics.jsonl"     # the parent is created
    t = tracker(path)
    assert t.metrics() == {}                      # before any step: nothing, no line
    returned, steps = [], []
    before = time.time()
    for i in range(5):
        t.step(num_tokens=64)
        m = t.metrics()
        if m:
            returned.append(m)
            steps.append(i)                       # i + 1 step() calls -> i steps completed
    after = time.time()
    assert len(returned) == 4                     # the first call had no completed step
    got = lines(path)
    assert len(got) == 4
    for line, m, step in zip(got, returned, steps):
        assert line.pop("step") == step
        assert before <= line.pop("time") <= after
        assert line == m                          # exactly the dict returned, nothing else
    assert [line["step"] for line in lines(path)] == [1, 2, 3, 4]


def test_prefix_and_appending_to_an_existing_file(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text('{"step": 0, "time": 0}\n')
    t = tracker(str(path))
    t.step(num_tokens=1)
    t.step(num_tokens=1)
    m = t.metrics("")
    got = lines(path)
    assert len(got) == 2 and got[0] == {"step": 0, "time": 0}
    assert "mfu" in got[1] and got[1]["mfu"] == m["mfu"]


def test_a_failing_write_warns_once_and_stops(tmp_path):
    t = tracker("/dev/full")                       # open works, every write fails (ENOSPC)
    t.step(num_tokens=1)
    t.step(num_tokens=1)
    with pytest.warns(RuntimeWarning, match="log_path") as record:
        m = t.metrics()
    assert m and len(record) == 1                  # the metrics still come back
    with warnings.catch_warnings():
        warnings.simplefilter("error")             # no second warning
        t.step(num_tokens=1)
        assert t.metrics()


def test_an_unopenable_path_warns_once(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    t = tracker(blocker / "m.jsonl")               # the parent is a file
    t.step(num_tokens=1)
    t.step(num_tokens=1)
    with pytest.warns(RuntimeWarning, match="metrics logging stops"):
        assert t.metrics()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t.metrics()


@pytest.mark.parametrize("bad, error", [(123, TypeError), (b"x.jsonl", TypeError), ("", ValueError)])
def test_bad_log_path_raises_naming_it(bad, error):
    with pytest.raises(error, match="log_path"):
        tracker(bad)


def test_a_directory_is_refused(tmp_path):
    with pytest.raises(ValueError, match="log_path .* is a directory"):
        tracker(tmp_path)


def test_only_rank_0_writes(tmp_path, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    t = tracker(tmp_path / "r1.jsonl")
    t.step(num_tokens=1)
    t.step(num_tokens=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")             # not a failure: no warning
        assert t.metrics()
    assert not (tmp_path / "r1.jsonl").exists()
    monkeypatch.setenv("RANK", "0")
    t = tracker(tmp_path / "r0.jsonl")
    t.step(num_tokens=1)
    t.step(num_tokens=1)
    t.metrics()
    (line,) = lines(tmp_path / "r0.jsonl")
    assert line["rank"] == 0 and line["world_size"] == 2


def test_non_finite_values_become_null(tmp_path):
    log = MetricsLog(tmp_path / "m.jsonl")
    log.write({"a": float("nan"), "b": float("inf"), "c": 1.5}, step=3)
    log.close()
    log.write({"c": 2.0}, step=4)                  # after close: dropped
    (line,) = lines(tmp_path / "m.jsonl")
    assert (line["a"], line["b"], line["c"], line["step"]) == (None, None, 1.5, 3)


def test_optimizer_wrapper_passes_log_path_through(tmp_path):
    torch = pytest.importorskip("torch")
    from mfu_tracker import MFUOptimizerWrapper

    torch.manual_seed(0)
    model = torch.nn.Linear(8, 8)
    opt = MFUOptimizerWrapper(torch.optim.SGD(model.parameters(), lr=0.1), model, dtype="fp32",
                              peak_tflops=PEAK_TFLOPS, clock="cpu", warmup=0,
                              log_path=tmp_path / "opt.jsonl")
    returned = []
    for _ in range(3):
        with opt.track_step(num_tokens=4):
            model(torch.randn(4, 8)).sum().backward()
            opt.step()
        returned.append(opt.metrics())
    got = [{k: v for k, v in line.items() if k not in ("step", "time")}
           for line in lines(tmp_path / "opt.jsonl")]
    assert got == [m for m in returned if m]
    assert got and "throughput/mfu" in got[-1]
