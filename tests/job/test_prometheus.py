"""mfu_tracker/job/_prometheus.py: gauge names, the port rule, each rank's
gauges from its row, and the exposition a scrape reads -- parsed by
prometheus_client's own parser, an independent reader."""
from __future__ import annotations

import pytest

from mfu_tracker.distributed import RankFigures
from mfu_tracker.timing._totals import StepSums
from mfu_tracker.job._prometheus import PORT_ENV, gauge_name, metrics_port, rank_values, serve

prometheus_client = pytest.importorskip("prometheus_client")
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402


def row(rank, mfu, step_s, **extra):
    """A rank's row on a 1 TFLOP/s device: 10 steps of ``step_s``."""
    return RankFigures(rank=rank, boundaries=11, steps=10, window_s=10 * step_s,
                       step_time_s=step_s, step_time_min_s=step_s, step_time_max_s=step_s,
                       sums=StepSums(model_flops=mfu * 1e12), peak_flops_per_sec=1e12,
                       peak_bytes_per_sec=None, num_devices=1, model_parallel=1, interval_s=None,
                       interval_steps=10, **extra)


def test_gauge_names():
    assert gauge_name("mfu") == "mfu_tracker_mfu"
    assert gauge_name("phase_s/data") == "mfu_tracker_phase_s_data"
    assert gauge_name("mfu", "mfu_tracker_rank") == "mfu_tracker_rank_mfu"


def test_port_argument_then_environment(monkeypatch):
    monkeypatch.delenv(PORT_ENV, raising=False)
    assert metrics_port(None) is None
    assert metrics_port(9400) == 9400
    monkeypatch.setenv(PORT_ENV, " 9401 ")
    assert metrics_port(None) == 9401
    assert metrics_port(9402) == 9402  # the argument wins
    monkeypatch.setenv(PORT_ENV, "70000")
    with pytest.raises(ValueError, match=PORT_ENV):
        metrics_port(None)
    with pytest.raises(ValueError, match="metrics_port"):
        metrics_port(-1)


def test_rank_values_leave_out_what_a_rank_lacks():
    values = rank_values([row(0, 0.4, 0.5, phase_data_s=0.1), row(3, 0.2, 1.0, power_w=300.0)])
    assert values[0] == {"mfu": 0.4, "step_time_s": 0.5, "achieved_tflops": pytest.approx(0.4),
                         "phase_s/data": 0.1}
    assert values[3]["power_w"] == 300.0 and "phase_s/data" not in values[3]
    assert "hfu" not in values[0]  # no executed FLOPs: no HFU, not a zero


def test_the_exposition_holds_the_cached_values_and_every_rank(monkeypatch):
    monkeypatch.setenv("MFU_TRACKER_METRICS_PER_RANK", "1")   # per-rank series: opt-in
    endpoint = serve(0)  # port 0: a free one
    endpoint.update({"throughput/mfu": 0.3, "throughput/step_time_s": 0.5}, prefix="throughput",
                    step=42, job="J", rank=0, ranks=[row(0, 0.3, 0.5), row(1, 0.1, 1.5)])
    text = prometheus_client.generate_latest(endpoint.registry).decode()
    samples = {(s.name, s.labels.get("rank")): (s.value, s.labels)
               for family in text_string_to_metric_families(text) for s in family.samples}
    assert samples[("mfu_tracker_mfu", "0")] == (0.3, {"job": "J", "rank": "0",
                                                       "prefix": "throughput"})
    assert samples[("mfu_tracker_step", "0")][0] == 42.0
    assert samples[("mfu_tracker_rank_mfu", "1")][0] == 0.1
    assert samples[("mfu_tracker_rank_step_time_s", "1")][0] == 1.5
    assert "HELP mfu_tracker_mfu " in text
    assert serve(endpoint.port) is endpoint  # one server per port per process
