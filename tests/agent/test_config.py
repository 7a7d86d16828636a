"""mfu_tracker/agent/_config.py: the run's settings, checked on both sides of
the one environment variable."""
from __future__ import annotations

import json
import os

import pytest

from mfu_tracker.agent._config import BOOT_DIR, ENV_VAR, RunConfig


def test_round_trip_through_the_environment(tmp_path):
    config = RunConfig.checked(log_path=str(tmp_path / "m.jsonl"), dtype="bfloat16",
                               flops_per_step=1e12, tokens_per_step=4096, peak_tflops=312.0,
                               log_every=5, warmup=0, count_every=2)
    assert config.dtype == "bf16"                     # normalized
    assert RunConfig.from_env({ENV_VAR: config.to_env()}) == config
    assert json.loads(config.to_env())["log_every"] == 5
    assert RunConfig.from_env({}) is None             # not under mfu-tracker run


@pytest.mark.parametrize("values, error, match", [
    ({"log_path": None}, ValueError, "log_path must name the metrics log"),
    ({"log_every": 0}, ValueError, "log_every"),
    ({"warmup": -1}, ValueError, "warmup"),
    ({"count_every": -1}, ValueError, "count_every"),
    ({"flops_per_step": -5.0}, ValueError, "flops_per_step"),
    ({"peak_tflops": 0.0}, ValueError, "peak_tflops"),
    ({"measure_peak": "yes"}, TypeError, "measure_peak"),
    ({"dtype": "fp12"}, ValueError, "fp12"),
])
def test_a_bad_value_is_named(tmp_path, values, error, match):
    with pytest.raises(error, match=match):
        RunConfig.checked(**{"log_path": str(tmp_path / "m.jsonl"), **values})


def test_a_bad_environment_value_is_named():
    with pytest.raises(ValueError, match=f"{ENV_VAR} is not JSON"):
        RunConfig.from_env({ENV_VAR: "{"})
    with pytest.raises(ValueError, match=f"{ENV_VAR} must hold a JSON object, got list"):
        RunConfig.from_env({ENV_VAR: "[]"})
    with pytest.raises(ValueError, match=r"unknown settings \['window'\]"):
        RunConfig.from_env({ENV_VAR: json.dumps({"log_path": "m.jsonl", "window": 3})})


def test_the_boot_directory_holds_only_the_startup_hook():
    assert [n for n in os.listdir(BOOT_DIR) if n.endswith(".py")] == ["sitecustomize.py"]
