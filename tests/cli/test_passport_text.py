"""The passport as Markdown, from hand-built data (the data's figures:
tests/cli/test_passport.py)."""
from __future__ import annotations

from mfu_tracker.cli._passport_text import _si, markdown


def _fig(value, source="x"):
    return {"value": value, "unit": "", "from": source}


def _data(**over):
    data = {
        "log": "m.jsonl", "job": 1, "job_id": "j7", "runs": [1, 2], "version": "1.2.3",
        "hardware": {"device": _fig(["H100 SXM"]), "devices": _fig([8]), "ranks": _fig([8]),
                     "dtype": _fig(["bf16"]), "hosts": _fig(["n7"])},
        "device_hours": _fig(8 * 700 / 3600), "job_wall_s": _fig(700.0),
        "model_flops": _fig(4.56e18),
        "mfu": {"job_mfu": _fig(0.41234), "last_window_mfu": _fig(0.5), "convention": _fig("ours"),
                "flops_obtained": _fig("counted"), "peak_per_device": _fig(989.4),
                "peak_source": _fig("datasheet"), "denominator": _fig(989.4 * 8)},
        "goodput": _fig(380 / 700),
        "energy": {"energy_j": _fig(7.2e6), "energy_kwh": _fig(2.0),
                   "lines_with_power": _fig(2, "2 of 3 metrics lines hold power_w")},
    }
    data.update(over)
    return data


def test_si_prefixes():
    assert _si(4.56e18, "FLOP") == "4.56 EFLOP"
    assert _si(1.5e24, "FLOP") == "1.5 YFLOP"
    assert _si(2.5e6, "J") == "2.5 MJ"
    assert _si(999.0, "J") == "999 J"


def test_every_row_by_hand():
    text = markdown(_data())
    lines = text.splitlines()
    assert lines[:4] == ["## Compute", "", "| | |", "|---|---|"]
    assert "| Hardware | 8 x H100 SXM (bf16); 8 process(es); host n7 |" in lines
    # 8 devices x 700 s / 3600 = 1.556 device-hours; 700 s / 3600 = 0.1944 h
    assert "| Device-hours | 1.556 device-hours (GPU-hours on GPUs) over 0.1944 h of wall time |" \
        in lines
    assert "| Training compute | 4.56 EFLOP model FLOPs (4.56e+18) |" in lines
    # 989.4 x 8 = 7915.2 TFLOP/s
    assert ("| MFU | 41.23% over the job (job MFU), 50.00% in the last logged window; convention "
            "ours, model FLOPs counted; vs 989.4 TFLOP/s per device (datasheet) = 7915 TFLOP/s |"
            ) in lines
    assert "| Goodput | 54.29% of the job's wall time |" in lines       # 380 / 700
    assert ("| Energy | 2 kWh (7.2e+06 J) measured by NVML, 2 of 3 metrics lines hold "
            "power_w |") in lines
    assert lines[-1].startswith("Measured by mfu-tracker 1.2.3 from `m.jsonl` (job j7, runs 1, 2)")


def test_missing_figures_say_why():
    data = _data(device_hours=_fig(None), model_flops=_fig(None), runs=[3],
                 energy={"energy_j": _fig(None), "lines_with_power": _fig(0)})
    data["mfu"].update(job_mfu=_fig(None), peak_per_device=_fig(None), flops_obtained=_fig(None))
    data["hardware"]["devices"] = _fig(None)
    text = markdown(data)
    assert "| Device-hours | not available (a run without its devices) |" in text
    assert "| Training compute | not available (the log lacks some steps' model FLOPs) |" in text
    assert "not available over the job (job MFU)" in text
    assert "FLOPs source not recorded; no peak: MFU not available |" in text
    assert "| Energy | not measured (no power readings in the log) |" in text
    assert "| Hardware | ? x H100 SXM" in text
    assert "(job j7, run 3)" in text
