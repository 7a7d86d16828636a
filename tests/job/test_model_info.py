"""mfu_tracker/job/_model_info.py: ``Tracker(model_info=...)`` checked and
made JSON-safe for the run record; every bad entry named."""
from __future__ import annotations

import json
import math

import pytest

from mfu_tracker.job._model_info import FLOPS_SOURCES, check_model_info


class Config:
    """A config object with transformers' ``to_dict()`` interface."""

    def to_dict(self):
        return {"hidden_size": 64, "rope_scaling": {"factor": math.inf}, "dtype": object()}


def test_nothing_to_record():
    assert check_model_info(None) is None
    assert check_model_info({}) is None
    assert check_model_info(None, declared=True) == {"flops": "declared"}


def test_config_object_becomes_json():
    out = check_model_info({"config": Config(), "seq_len": 128, "flops": "counted"})
    assert out["config"]["hidden_size"] == 64
    assert out["config"]["rope_scaling"] == {"factor": "inf"}  # not a finite JSON number
    assert isinstance(out["config"]["dtype"], str)
    assert out["seq_len"] == 128 and out["flops"] == "counted"
    json.dumps(out, allow_nan=False)  # the run record can hold it


def test_preset_name_and_declared_default():
    assert check_model_info({"config": "llama-3.1-8b"}, declared=True) == {
        "config": "llama-3.1-8b", "flops": "declared"}
    assert check_model_info({"flops": "analytic"}, declared=True)["flops"] == "analytic"
    assert set(FLOPS_SOURCES) == {"counted", "declared", "analytic"}


@pytest.mark.parametrize("info, error, words", [
    ([("seq_len", 1)], TypeError, "model_info must be a mapping"),
    ({"seqlen": 1}, ValueError, "unknown key.*'seqlen'"),
    ({"seq_len": 0}, ValueError, r"model_info\['seq_len'\]"),
    ({"flops": "guessed"}, ValueError, r"model_info\['flops'\] must be one of"),
    ({"config": 3}, TypeError, r"model_info\['config'\]"),
    ({"convention": ""}, TypeError, r"model_info\['convention'\]"),
])
def test_bad_entries_are_named(info, error, words):
    with pytest.raises(error, match=words):
        check_model_info(info)
