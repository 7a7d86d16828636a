"""The Prometheus endpoint (docs/prometheus.md): a scrape during training reads the
values of the last ``metrics()``, as ``mfu_tracker_*`` gauges with the job,
rank and prefix labels, from a cache -- never calling ``metrics()``.

The reference for each gauge is the dict ``metrics()`` returned; the scrape
is a real HTTP GET on the port, parsed with prometheus_client's own text
parser.
"""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("prometheus_client")
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from mfu_tracker import Tracker  # noqa: E402
from mfu_tracker.job._prometheus import gauge_name  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def scrape(port):
    """{(gauge, labels as a tuple of (name, value)): value} of one scrape."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
        text = reply.read().decode()
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def test_a_scrape_during_training_reads_the_last_metrics(monkeypatch):
    monkeypatch.setenv("MFU_TRACKER_JOB", "job-7")
    t = Tracker(100.0, dtype="fp32", peak_tflops=1.0, clock="cpu", window=4, warmup=0,
                metrics_port=0, start_step=10)
    port = t.metrics_port
    assert isinstance(port, int) and port > 0
    labels = (("job", "job-7"), ("prefix", "throughput"), ("rank", "0"))
    assert not [k for k in scrape(port) if k[0] == "mfu_tracker_mfu"]   # nothing logged yet
    calls = []
    real = Tracker.metrics

    def counted(self, *args, **kwargs):
        calls.append(threading.current_thread().name)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Tracker, "metrics", counted)
    for step in range(12):
        time.sleep(0.001)
        t.step(num_tokens=8)
        if step % 4 == 3:
            m = t.metrics()
            got = scrape(port)   # between steps, while "training"
            assert got[("mfu_tracker_mfu", labels)] == m["throughput/mfu"]
            assert got[("mfu_tracker_step_time_s", labels)] == m["throughput/step_time_s"]
            assert got[("mfu_tracker_step", labels)] == t.global_step == 10 + step
            # every key of the dict is a gauge, {prefix}/a/b -> mfu_tracker_a_b
            assert {name for name, _ in got if name != "mfu_tracker_step"} == \
                {gauge_name(key.split("/", 1)[1]) for key in m}
    # the scrapes never called metrics(): three calls, all from this thread
    assert calls == [threading.current_thread().name] * 3
    t.close()


def test_a_scrape_in_the_middle_of_a_step_does_not_block_it():
    t = Tracker(100.0, dtype="fp32", peak_tflops=1.0, clock="cpu", window=4, warmup=0,
                metrics_port=0)
    t.step()
    t.step()
    m = t.metrics("")                        # a bare prefix: prefix=""
    stop = threading.Event()
    seen = []

    def scraper():
        while not stop.is_set():
            seen.append(scrape(t.metrics_port))

    thread = threading.Thread(target=scraper)
    thread.start()
    try:
        for _ in range(200):                 # steps run while the scraper hammers the port
            t.step()
        while not seen:
            time.sleep(0.01)
    finally:
        stop.set()
        thread.join()
    labels = (("job", t.run_id), ("prefix", ""), ("rank", "0"))   # no job variable: the run id
    assert all(s[("mfu_tracker_mfu", labels)] == m["mfu"] for s in seen)
    t.close()


def test_the_environment_variable_and_a_second_tracker_on_the_port(monkeypatch):
    first = Tracker(1.0, dtype="fp32", peak_tflops=1.0, clock="cpu", metrics_port=0)
    monkeypatch.setenv("MFU_TRACKER_METRICS_PORT", str(first.metrics_port))
    second = Tracker(1.0, dtype="fp32", peak_tflops=1.0, clock="cpu", warmup=0)
    assert second.metrics_port == first.metrics_port        # one endpoint per port
    second.step()
    second.step()
    m = second.metrics()
    got = scrape(first.metrics_port)
    assert got[("mfu_tracker_mfu", (("job", second.run_id), ("prefix", "throughput"),
                                     ("rank", "0")))] == m["throughput/mfu"]


@pytest.mark.parametrize("value", ["x", "-1", "70000"])
def test_a_bad_port_variable_names_it(monkeypatch, value):
    monkeypatch.setenv("MFU_TRACKER_METRICS_PORT", value)
    with pytest.raises(ValueError, match="MFU_TRACKER_METRICS_PORT"):
        Tracker(1.0, dtype="fp32", peak_tflops=1.0)


@pytest.mark.parametrize("bad, error", [(-1, ValueError), (65536, ValueError), ("80", TypeError)])
def test_a_bad_port_argument_names_it(bad, error):
    with pytest.raises(error, match="metrics_port"):
        Tracker(1.0, dtype="fp32", peak_tflops=1.0, metrics_port=bad)


def test_a_port_in_use_names_it():
    first = Tracker(1.0, dtype="fp32", peak_tflops=1.0, clock="cpu", metrics_port=0)
    import socket

    with socket.socket() as busy:
        busy.bind(("0.0.0.0", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(ValueError, match=f"metrics_port {port}: cannot serve"):
            Tracker(1.0, dtype="fp32", peak_tflops=1.0, metrics_port=port)
    first.close()


def test_without_prometheus_client_one_clear_error():
    code = ("import sys; sys.modules['prometheus_client'] = None\n"
            "from mfu_tracker import Tracker\n"
            "try:\n"
            "    Tracker(1.0, dtype='fp32', peak_tflops=1.0, metrics_port=0)\n"
            "except ImportError as e:\n"
            "    print(e); sys.exit(3)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=120)
    assert done.returncode == 3, done.stderr
    assert "prometheus_client" in done.stdout and "[prometheus]" in done.stdout


def test_only_rank_0_serves(monkeypatch):
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    t = Tracker(1.0, dtype="fp32", peak_tflops=1.0, clock="cpu", metrics_port=0)
    assert t.metrics_port is None


# ---- every rank's series, read from the exposition text (no Prometheus server) -------------

def _row(rank, step_s, mfu, *, executed=None, tokens=None, power=None, interval_s=None,
         **phases):
    """A rank row of a 1 TFLOP/s device: 10 steps of ``step_s``, ``mfu`` of the peak."""
    from mfu_tracker.distributed import RankFigures
    from mfu_tracker.timing._totals import StepSums

    # the row carries sums per second of the window: model FLOP/s = mfu x the peak
    sums = StepSums(**{**dict.fromkeys(StepSums.__dataclass_fields__),
                       "model_flops": mfu * 1e12, "executed_flops": executed,
                       "num_tokens": tokens})
    return RankFigures(rank=rank, boundaries=11, steps=10, window_s=10 * step_s,
                       step_time_s=step_s, step_time_min_s=step_s, step_time_max_s=step_s,
                       sums=sums, peak_flops_per_sec=1e12, peak_bytes_per_sec=None,
                       num_devices=1, model_parallel=1, interval_s=interval_s, interval_steps=10,
                       power_w=power, **{f"phase_{k}_s": v for k, v in phases.items()})


def test_every_ranks_series_in_the_exposition_text(monkeypatch):
    """Three ranks' rows served from one endpoint, one series per rank asked
    for (``MFU_TRACKER_METRICS_PER_RANK=1``): the text a scrape reads,
    parsed by prometheus_client's parser (an independent reader), holds one
    series per rank and figure, labelled job / rank / prefix, each the
    rank's own value; a figure a rank lacks has no series; the job's gauges
    (combine()'s keys) sit beside them unlabelled by rank."""
    from mfu_tracker.distributed import combine
    from mfu_tracker.job._prometheus import serve

    rows = [_row(0, 0.10, 0.40, executed=0.5e12, tokens=800.0, power=300.0, interval_s=1.0,
                 data=0.01, forward=0.03),
            _row(1, 0.20, 0.25, tokens=400.0, interval_s=2.5, data=0.02, forward=0.08),
            _row(2, 0.125, 0.30, power=250.0, interval_s=1.25, forward=0.05)]
    job = combine(rows).metrics("throughput")
    monkeypatch.setenv("MFU_TRACKER_METRICS_PER_RANK", "1")
    endpoint = serve(0)
    endpoint.update(job, prefix="throughput", step=42, job="job-9", rank=0, ranks=rows)
    endpoint.update({"eval/mfu": 0.1}, prefix="eval", step=40, job="job-9", rank=0)
    got = {key: value for key, value in scrape(endpoint.port).items()
           if not key[0].startswith("mfu_tracker_ranks_")}   # the quantiles: the test below
    series = {}
    for (name, labels), value in got.items():
        assert [k for k, _ in labels] == ["job", "prefix", "rank"], name   # every series
        d = dict(labels)
        assert d["job"] == "job-9"
        if name.startswith("mfu_tracker_rank_"):
            assert d["prefix"] == "throughput"
            series.setdefault(name[len("mfu_tracker_rank_"):], {})[int(d["rank"])] = value
        else:
            assert d["rank"] == "0"                 # the job's gauges: the serving rank
    # each rank's own figure, by hand: hfu = executed / peak (rank 0 only: 0.5e12 / 1e12);
    # achieved TFLOP/s = mfu x 1 TFLOP/s (x 1e-12 from FLOP/s: to rounding); the
    # interval's step time = interval_s / 10 steps
    achieved = series.pop("achieved_tflops")
    assert achieved == pytest.approx({0: 0.40, 1: 0.25, 2: 0.30}, rel=1e-15)
    assert series == {
        "mfu": {0: 0.40, 1: 0.25, 2: 0.30},
        "hfu": {0: 0.5},
        "step_time_s": {0: 0.10, 1: 0.20, 2: 0.125},
        "step_time_interval_s": {0: 0.1, 1: 0.25, 2: 0.125},
        "tokens_per_sec": {0: 800.0, 1: 400.0},
        "power_w": {0: 300.0, 2: 250.0},
        "phase_s_data": {0: 0.01, 1: 0.02},
        "phase_s_forward": {0: 0.03, 1: 0.08, 2: 0.05},
    }
    # what a dashboard's max() / min() / topk() over the rank series give is what was logged
    assert max(series["mfu"].values()) == job["throughput/mfu_rank_max"] == 0.40
    assert min(series["mfu"].values()) == job["throughput/mfu_rank_min"] == 0.25
    slowest = max(series["step_time_interval_s"], key=series["step_time_interval_s"].get)
    assert slowest == job["throughput/slowest_rank"] == 1
    # the job's gauges, one per key of the logged dict, and the step; the second prefix
    assert got[("mfu_tracker_mfu", (("job", "job-9"), ("prefix", "throughput"), ("rank", "0")))] \
        == job["throughput/mfu"]
    assert got[("mfu_tracker_step", (("job", "job-9"), ("prefix", "throughput"), ("rank", "0")))] \
        == 42
    assert got[("mfu_tracker_mfu", (("job", "job-9"), ("prefix", "eval"), ("rank", "0")))] == 0.1
    assert got[("mfu_tracker_step", (("job", "job-9"), ("prefix", "eval"), ("rank", "0")))] == 40
    endpoint.close()


def _three_ranks():
    return [_row(0, 0.10, 0.40, executed=0.5e12, tokens=800.0, power=300.0, interval_s=1.0,
                 data=0.01, forward=0.03),
            _row(1, 0.20, 0.25, tokens=400.0, interval_s=2.5, data=0.02, forward=0.08),
            _row(2, 0.125, 0.30, power=250.0, interval_s=1.25, forward=0.05)]


def test_by_default_quantiles_over_ranks_and_no_series_per_rank(monkeypatch):
    """Without MFU_TRACKER_METRICS_PER_RANK the scrape holds, per figure, its
    quantiles over the ranks that have it (labelled job / prefix / quantile /
    rank = the serving rank), and no series per rank. Quantiles by hand:
    linear between order statistics at (n - 1) q."""
    from mfu_tracker.distributed import combine
    from mfu_tracker.job._prometheus import serve

    monkeypatch.delenv("MFU_TRACKER_METRICS_PER_RANK", raising=False)
    rows = _three_ranks()
    job = combine(rows).metrics("throughput")
    endpoint = serve(0)
    endpoint.update(job, prefix="throughput", step=42, job="job-9", rank=0, ranks=rows)
    got = scrape(endpoint.port)
    endpoint.close()
    assert not [name for name, _ in got if name.startswith("mfu_tracker_rank_")]
    quantiles = {}
    for (name, labels), value in got.items():
        if name.startswith("mfu_tracker_ranks_"):
            d = dict(labels)
            assert (d["job"], d["prefix"], d["rank"]) == ("job-9", "throughput", "0")
            quantiles.setdefault(name[len("mfu_tracker_ranks_"):], {})[d["quantile"]] = value
    # mfu over ranks, sorted 0.25, 0.30, 0.40: q 0.1 at 0.2 -> 0.25 + 0.2 x 0.05 = 0.26;
    # q 0.9 at 1.8 -> 0.30 + 0.8 x 0.10 = 0.38
    assert quantiles["mfu"] == pytest.approx(
        {"0": 0.25, "0.1": 0.26, "0.5": 0.30, "0.9": 0.38, "1": 0.40}, rel=1e-12)
    assert quantiles["mfu"]["0"] == job["throughput/mfu_rank_min"]
    assert quantiles["mfu"]["1"] == job["throughput/mfu_rank_max"]
    # power of ranks 0 and 2 only (250, 300): 255 / 275 / 295 in between; hfu of rank 0 alone
    assert quantiles["power_w"] == pytest.approx(
        {"0": 250.0, "0.1": 255.0, "0.5": 275.0, "0.9": 295.0, "1": 300.0}, rel=1e-12)
    assert set(quantiles["hfu"].values()) == {0.5}
    # the interval step times 0.1, 0.125, 0.25: the highest is the logged step_time_rank_max
    assert quantiles["step_time_interval_s"]["1"] == job["throughput/step_time_rank_max"] == 0.25
    assert quantiles["phase_s_forward"]["0.5"] == 0.05
    assert set(quantiles) == {"mfu", "hfu", "step_time_s", "step_time_interval_s",
                              "tokens_per_sec", "achieved_tflops", "power_w", "phase_s_data",
                              "phase_s_forward"}


def test_the_default_series_count_does_not_grow_with_the_ranks():
    """1,024 ranks serve as many series as 3 by default; one per rank adds
    a series per rank and figure."""
    from prometheus_client import generate_latest
    from prometheus_client.registry import CollectorRegistry

    from mfu_tracker.job._prometheus import Gauges

    def samples(rows, per_rank):
        gauges = Gauges(per_rank=per_rank)
        gauges.update({"throughput/mfu": 0.3}, prefix="throughput", step=1, job="j", rank=0,
                      ranks=rows)
        registry = CollectorRegistry(auto_describe=False)
        registry.register(gauges)
        text = generate_latest(registry).decode()
        return sum(len(f.samples) for f in text_string_to_metric_families(text))

    many = [_row(r, 0.1 + r * 1e-4, 0.3, tokens=800.0, interval_s=1.0, forward=0.03)
            for r in range(1024)]
    # 2 job gauges (mfu, step) + 6 figures (mfu, hfu absent, step_time_s,
    # step_time_interval_s, tokens_per_sec, achieved_tflops, phase_s_forward: 6) x 5 quantiles
    assert samples(many[:3], False) == samples(many, False) == 2 + 6 * 5
    assert samples(many, True) == 2 + 6 * 5 + 6 * 1024


def test_a_bad_per_rank_switch_is_refused_naming_it(monkeypatch):
    monkeypatch.setenv("MFU_TRACKER_METRICS_PER_RANK", "yes")
    with pytest.raises(ValueError, match="MFU_TRACKER_METRICS_PER_RANK='yes'"):
        Tracker(1.0, dtype="fp32", peak_tflops=1.0, clock="cpu", metrics_port=0)
