"""mfu_tracker/cli/view/_conventions.py: MFU as each framework would report
it for the same run, from the run record's model and our MFU line."""
from __future__ import annotations

import pytest

from mfu_tracker import transformer_flops
from mfu_tracker.cli.view._conventions import NO_MODEL, ConventionRange
from mfu_tracker.cli.view._figure import Newest
from mfu_tracker.flops.presets import resolve_model_config
from mfu_tracker.job._records import Run

# our MFU line: 4000 tokens/s against 100 TFLOP/s of every device
RECORDS = [{"_line": 2, "step": 10, "p/mfu": 0.3, "p/tokens_per_sec": 4000.0,
            "p/peak_tflops": 100.0}]


def run(model):
    return Run(number=1, record={"record": "run", "run_id": "a", "model": model}, line=1)


def test_each_framework_mfu_is_its_flops_per_token_times_tokens_over_the_peak():
    state = ConventionRange().state(run({"config": "gpt2", "seq_len": 128}),
                                    Newest(RECORDS, "p"), 0.3)
    assert state["convention"] == "mfu_tracker" and state["ours"] is True
    assert state["frameworks"], state
    config = resolve_model_config("gpt2")
    for figure in state["frameworks"]:
        name = figure["id"][len("mfu_"):]
        per_token = transformer_flops(config, seq_len=128, batch_size=1,
                                      convention=name).flops_per_token
        assert figure["value"] == pytest.approx(per_token * 4000.0 / 100e12, rel=1e-12)
    values = [f["value"] for f in state["frameworks"]] + [0.3]
    assert state["range"] == [min(values), max(values)]
    assert state["ours_analytic_flops_per_token"] == \
        transformer_flops(config, seq_len=128, batch_size=1).flops_per_token


def test_no_range_without_the_model_or_with_a_declared_convention():
    newest = Newest(RECORDS, "p")
    assert ConventionRange().state(run({}), newest, 0.3)["absent"] == NO_MODEL
    chosen = ConventionRange().state(run({"convention": "megatron"}), newest, 0.3)
    assert chosen["ours"] is False and "follow megatron's convention" in chosen["absent"]
    no_tokens = ConventionRange().state(run({"config": "gpt2", "seq_len": 128}),
                                        Newest([{"_line": 2, "step": 1, "p/mfu": 0.3}], "p"), 0.3)
    assert no_tokens["absent"].startswith("no range: it needs our MFU line's tokens/s")
