"""The Prometheus endpoint (issue 28): a scrape during training reads the
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
