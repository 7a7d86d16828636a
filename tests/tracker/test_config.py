"""A Tracker's configuration (tracker/_config.py), through its behaviour:
each bad argument of ``Tracker(...)`` is a TypeError / ValueError naming it,
raised before anything is built; the checked values a config holds."""
from __future__ import annotations

import inspect

import pytest

from _process_group import process_group
from mfu_tracker import Tracker
from mfu_tracker.tracker._config import TrackerConfig


def _arguments(**given):
    """Tracker(...)'s keyword arguments: its signature's defaults, ``given`` in place."""
    arguments = {name: p.default for name, p in inspect.signature(Tracker.__init__).parameters.items()
                 if name != "self"}
    arguments.update(given)
    return arguments


@pytest.mark.parametrize("given, name", [
    ({"flops_per_step": -1.0}, "flops_per_step"),
    ({"flops_per_step": "many"}, "flops_per_step"),
    ({"executed_flops_per_step": -5}, "executed_flops_per_step"),
    ({"param_bytes": float("nan")}, "param_bytes"),
    ({"window": 0}, "window"),
    ({"window": 2.5}, "window"),
    ({"warmup": -1}, "warmup"),
    ({"num_gpus": 0}, "num_gpus"),
    ({"tensor_parallel": 0}, "tensor_parallel"),
    ({"clock": "sundial"}, "clock"),
    ({"stream": -1}, "stream"),
    ({"distributed": "yes"}, "distributed"),
    ({"distributed_timeout": 0}, "distributed_timeout"),
    ({"measure_peak": "no"}, "measure_peak"),
    ({"telemetry": 3}, "telemetry"),
    ({"start_step": -2}, "start_step"),
    ({"metrics_port": 70000}, "metrics_port"),
    ({"comm": "on"}, "comm"),
    ({"link_bandwidth_gbs": -1}, "link_bandwidth_gbs"),
    ({"log_path": 12}, "log_path"),
])
def test_a_bad_argument_names_itself(given, name):
    arguments = {"flops_per_step": 1e9, "peak_tflops": 1.0, **given}
    with pytest.raises((TypeError, ValueError), match=name):
        Tracker(**arguments)


def test_a_bad_argument_leaves_no_log_behind(tmp_path):
    log = tmp_path / "run.jsonl"
    with pytest.raises(ValueError, match="window"):
        Tracker(1e9, peak_tflops=1.0, window=0, log_path=str(log))
    assert not log.exists()


def test_the_checked_values():
    config = TrackerConfig.check(**_arguments(
        flops_per_step=2e9, param_bytes=4e6, window=8, warmup=2, num_gpus=8,
        tensor_parallel=2, pipeline_parallel=2, start_step=10, distributed_timeout=30))
    assert (config.model_flops, config.param_bytes) == (2e9, 4e6)
    assert (config.window, config.warmup, config.start_step) == (8, 2, 10)
    assert config.num_gpus == 8
    assert config.model_parallel == 2 * 2          # the product of the parallel degrees
    assert config.distributed_timeout == 30.0 and isinstance(config.distributed_timeout, float)
    assert config.aggregate is False               # no process group here
    assert config.executed_flops is None and config.link_bandwidth_gbs is None
    with pytest.raises(Exception):
        config.window = 9                          # frozen


def test_distributed_and_comm_true_need_a_process_group():
    with pytest.raises(ValueError, match="distributed=True needs an initialized"):
        Tracker(1e9, peak_tflops=1.0, distributed=True)
    with pytest.raises(ValueError, match="comm=True needs an initialized"):
        Tracker(1e9, peak_tflops=1.0, comm=True)


def test_under_a_process_group_the_tracker_aggregates_unless_told_not_to():
    with process_group("gloo", 1):
        assert TrackerConfig.check(**_arguments()).aggregate is True
        assert TrackerConfig.check(**_arguments(distributed=False)).aggregate is False
        # degrees that do not divide the world (of 1)
        with pytest.raises(ValueError, match="multiply to 2, which does not divide the world size 1"):
            TrackerConfig.check(**_arguments(tensor_parallel=2, num_gpus=2))
