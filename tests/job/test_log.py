"""``log_path=``: every metric dict logged is one JSON line, equal to what the
caller got back; a failing write warns once and stops; only rank 0 writes.
(The run records and ledger intervals beside them: tests/test_goodput.py.)

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
from mfu_tracker.job._log import MetricsLog

PEAK_TFLOPS = 1.0


def records(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def lines(path):
    """The metrics lines (not the run / run-end records: tests/test_goodput.py),
    without their job-ledger interval."""
    out = []
    for line in records(path):
        if "record" not in line:
            line.pop("ledger", None)
            out.append(line)
    return out


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
    # open works, every write fails (ENOSPC): the run record, written at construction
    with pytest.warns(RuntimeWarning, match="log_path") as record:
        t = tracker("/dev/full")
    assert len(record) == 1
    t.step(num_tokens=1)
    t.step(num_tokens=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")             # no second warning
        m = t.metrics()
    assert m                                       # the metrics still come back
    with warnings.catch_warnings():
        warnings.simplefilter("error")             # no second warning
        t.step(num_tokens=1)
        assert t.metrics()


def test_an_unopenable_path_warns_once(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.warns(RuntimeWarning, match="metrics logging stops"):
        t = tracker(blocker / "m.jsonl")           # the parent is a file: the run record fails
    t.step(num_tokens=1)
    t.step(num_tokens=1)
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


WORKER = r'''
import json, sys, time
import torch.distributed as dist
from mfu_tracker import Tracker

out = sys.argv[1]
dist.init_process_group("gloo")
rank = dist.get_rank()
t = Tracker(100.0, dtype="fp32", peak_tflops=1.0, clock="cpu", window=3, warmup=0,
            log_path=out + "/m.jsonl")
returned = []
for i in range(5):
    t.step(num_tokens=8)
    time.sleep(0.002 * (rank + 1))
    returned.append(t.metrics())          # a collective: every rank, every step
json.dump(returned, open(f"{out}/rank{rank}.json", "w"))
t.close()
dist.destroy_process_group()
'''


def test_torchrun_two_ranks_only_rank_0_writes_the_global_figures(tmp_path, capsys):
    import os
    import socket
    import subprocess
    import sys
    from pathlib import Path

    torchrun = Path(sys.executable).with_name("torchrun")
    if not torchrun.exists():
        pytest.skip("torchrun not installed")
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(root))
    proc = subprocess.run([str(torchrun), "--nproc_per_node=2", f"--master_port={port}",
                           str(script), str(tmp_path)], env=env, capture_output=True, text=True,
                          timeout=240)
    assert proc.returncode == 0, proc.stderr[-4000:]
    returned = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    assert returned[0] == returned[1]              # global figures: the same on both ranks
    expected = [(i, m) for i, m in enumerate(returned[0]) if m]   # i steps completed
    got = lines(tmp_path / "m.jsonl")
    # one writer: rank 0's lines only, one per non-empty dict (the distributed dict has
    # the peak even before a step completes; the rank timing starts with the first
    # interval after the clock's start: the time before it is no step's)
    assert len(got) == len(expected) >= 4
    for line, (step, m) in zip(got, expected):
        assert (line.pop("step"), line.pop("rank"), line.pop("world_size")) == (step, 0, 2)
        line.pop("time")
        assert line == m
        if step == 0:
            assert line == {"throughput/peak_tflops": 2.0}          # 2 ranks x 1.0
        else:
            assert "throughput/slowest_rank" in line
    # the ledger's intervals hold the job's FLOPs: both ranks' 100 per step, summed
    ledgers = [r["ledger"] for r in records(tmp_path / "m.jsonl") if "ledger" in r]
    for ledger in ledgers:
        steps = ledger["to_step"] - ledger["from_step"]
        if ledger.get("flops_ranks") == 2:
            assert ledger["model_flops"] == 2 * 100.0 * steps       # 2 ranks x 100 x steps
    assert sum(ledger.get("flops_ranks") == 2 for ledger in ledgers) == len(got)

    from mfu_tracker.cli import main

    assert main(["report", str(tmp_path / "m.jsonl"), "--out", str(tmp_path / "r.png"),
                 "--numbers"]) == 0
    out = capsys.readouterr().out
    assert "per-rank MFU:" in out and "missing: throughput/mfu_rank" not in out
    for step, m in expected[-4:]:
        assert f"step={step} throughput/mfu_rank_min={m['throughput/mfu_rank_min']!r}" in out


def test_threads_write_whole_lines(tmp_path):
    import threading

    log = MetricsLog(tmp_path / "m.jsonl")
    payload = {f"k{i}": float(i) for i in range(20)}

    def writer(n):
        for i in range(200):
            log.write(payload, step=n * 1000 + i)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    log.close()
    got = lines(tmp_path / "m.jsonl")              # every line parses: none interleaved
    assert sorted(line["step"] for line in got) == sorted(n * 1000 + i for n in range(4)
                                                          for i in range(200))
    assert all({k: v for k, v in line.items() if k not in ("step", "time")} == payload
               for line in got)
