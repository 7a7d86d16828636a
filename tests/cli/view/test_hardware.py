"""mfu_tracker/cli/view/_hardware.py: the utilization ladder, the MFU
self-check and its verdict, and the memory headroom."""
from __future__ import annotations

import pytest

from mfu_tracker.cli.report.panels.hardware import MISSING
from mfu_tracker.cli.view._figure import Newest
from mfu_tracker.cli.view._hardware import ladder, memory

from cli.view._pages import figures


def gpm(mfu, active, **extra):
    return [{"_line": 2, "step": 10, "p/mfu": mfu, "p/hw/gpu_busy": 0.95, "p/hw/sm_active": 0.8,
             "p/hw/tensor_active": active, "p/hw/mfu_consistency": mfu / active, **extra}]


def test_the_ladder_top_down_and_the_self_check():
    out = ladder(Newest(gpm(0.4, 0.5, **{"p/clock_ratio": 0.9}), "p"), "bf16")
    assert [(r["id"], r["value"]) for r in out["rungs"]] == \
        [("hw/gpu_busy", 0.95), ("hw/sm_active", 0.8), ("hw/tensor_active", 0.5), ("mfu", 0.4)]
    assert out["ofu"]["id"] == "ofu" and out["ofu"]["value"] == 0.5
    assert out["ofu_clock"]["value"] == pytest.approx(0.45)        # 0.5 x 0.9
    assert out["self_check"]["value"] == pytest.approx(0.8)        # 0.4 / 0.5, as logged
    assert out["self_check"]["check"] == pytest.approx(0.8)
    assert out["verdict"] == "MFU is within what the tensor pipes did"
    assert "absent" not in out


def test_the_verdicts():
    # the counters' window: 10 s since the previous line (line 2 is the newest), so the
    # limit is 1 + 0.10 + 2 x 0.1 / 10 = 1.12; MFU / tensor-active = 0.9 / 0.6 = 1.5 is above
    high = ladder(Newest(gpm(0.9, 0.6), "p"), "bf16", (2, 10.0))["verdict"]
    assert high.startswith("MFU is clearly above what the tensor pipes did (above 1.12 x")
    # without the window the limit is 1 + 0.10 + 2 = 3.1: 1.5 is within it
    assert ladder(Newest(gpm(0.9, 0.6), "p"), "bf16")["verdict"] == \
        "MFU is within what the tensor pipes did"
    # MFU under half of tensor-active (LOW_RATIO 0.5, pipes busy >= 0.10)
    assert ladder(Newest(gpm(0.2, 0.6), "p"), "bf16")["verdict"].startswith(
        "the tensor pipes were busy far beyond MFU")
    # fp32 is not a tensor-core dtype: no high/low reading
    assert ladder(Newest(gpm(0.9, 0.6), "p"), "fp32", (2, 10.0))["verdict"] == \
        "MFU is within what the tensor pipes did"


def test_no_counters():
    out = ladder(Newest([{"_line": 2, "step": 1, "p/mfu": 0.4}], "p"), "bf16")
    assert out["absent"] == MISSING and out["verdict"] is None
    assert out["rungs"][0]["absent"].startswith("no p/hw/gpu_busy in the log (GPM")


def test_memory_headroom_is_one_less_the_reserved_share():
    out = memory(Newest([{"_line": 2, "step": 1, "p/memory/peak_reserved_frac": 0.75,
                          "p/memory/ooms": 0}], "p"))
    found = figures(out)
    assert found["memory_headroom"]["value"] == 0.25               # 1 - 0.75
    assert found["memory/ooms"]["value"] == 0 and "absent" not in out
    none = memory(Newest([{"_line": 2, "step": 1, "p/mfu": 0.4}], "p"))
    assert none["absent"].startswith("no memory/* keys in the log")
    assert figures(none)["memory_headroom"]["value"] is None
