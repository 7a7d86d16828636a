"""One record per step (csrc/core/records.h) and the Tracker as a composition.

* ``Tracker.book()``: work learned after a step's boundary lands on that
  step's record, so the window's figures, ``window_steps()`` and the job
  ledger's log lines read it -- the one path of a step's FLOPs.
* The Tracker's parts: its checked configuration (``TrackerConfig``), the
  window totals as one value (``WindowTotals``), and the class docstring's
  key tables against the one key table (``timing/_metrics.py``).

The hand arithmetic is written beside each expected number; periods come
from the step engine itself (``window_steps()``), so no test asserts a time.
"""
from __future__ import annotations

import json
import math
import re
import warnings

import pytest

from mfu_tracker import Tracker
from mfu_tracker.timing._metrics import FAMILIES, KEYS
from mfu_tracker.timing._totals import NO_TOTALS, WindowTotals
from mfu_tracker.timing._waterfall import COMM_KINDS, LOSSES, PHASES
from mfu_tracker.tracker._config import TrackerConfig

PEAK = 1e18  # FLOP/s: peak_tflops=1e6 (no MFU > 1 on CPU periods)


def _tracker(steps: int = 3, **kwargs) -> Tracker:
    """A CPU-clock tracker without per-step work, `steps` steps closed."""
    t = Tracker(None, peak_tflops=1e6, clock="cpu", warmup=0, **kwargs)
    for _ in range(steps + 1):
        t.step()
    return t


# ---- booking ---------------------------------------------------------------------


def test_booked_work_is_the_windows_work():
    t = _tracker(3, start_step=10)
    assert "throughput/mfu" not in t.metrics()          # no FLOPs yet: no MFU
    # global steps 11, 12, 13 (start_step 10 + the steps closed)
    for step, flops in ((11, 1e9), (12, 2e9), (13, 3e9)):
        assert t.book(step, model_flops=flops, executed_flops=2 * flops, num_tokens=100) is True
    steps = t.window_steps()
    assert [s["step"] for s in steps] == [11, 12, 13]
    assert [s["model_flops"] for s in steps] == [1e9, 2e9, 3e9]
    window_s = sum(s["period_s"] for s in steps)
    m = t.metrics()
    # 6e9 FLOPs over the window's time at 1e18 FLOP/s; executed twice that
    assert m["throughput/mfu"] == pytest.approx(6e9 / window_s / PEAK, rel=1e-12)
    assert m["throughput/hfu"] == pytest.approx(12e9 / window_s / PEAK, rel=1e-12)
    assert m["throughput/tokens_per_sec"] == pytest.approx(300 / window_s, rel=1e-12)
    s = t.summary()
    assert (s["model_flops"], s["executed_flops"], s["num_tokens"]) == (6e9, 12e9, 300.0)


def test_a_step_is_bookable_once_closed_and_while_held():
    t = Tracker(None, peak_tflops=1e6, clock="cpu", warmup=0)
    assert t.book(0, model_flops=1.0) is False          # no step at all
    t.step()                                            # opens step 1
    assert t.book(1, model_flops=1.0) is False          # open: not closed yet
    t.step()
    assert t.book(1, model_flops=1.0) is True
    assert t.book(-1, model_flops=1.0) is False and t.book(2, model_flops=1.0) is False
    with pytest.raises(TypeError, match="step must be an int"):
        t.book(1.0, model_flops=1.0)                    # type: ignore[arg-type]


def test_a_bad_booked_value_warns_once_and_is_unknown():
    t = _tracker(2)
    assert t.book(1, model_flops=1e9) and t.book(2, model_flops=1e9)
    assert "throughput/mfu" in t.metrics()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert t.book(2, model_flops=-5.0) is True
        assert t.book(1, model_flops=float("inf")) is True
    ours = [str(w.message) for w in caught if "book()" in str(w.message)]
    assert len(ours) == 1 and "model_flops" in ours[0]
    assert "throughput/mfu" not in t.metrics()          # unknown while in the window
    assert t.window_steps()[1]["model_flops"] is None


def test_language_and_mixed_precision_book_per_step():
    t = _tracker(2)
    t.book(1, model_flops=1e9, language_flops=4e8, ideal_s=2e-9)
    t.book(2, model_flops=1e9, language_flops=2e8, ideal_s=2e-9)
    m = t.metrics("t")
    # 6e8 of the window's 2e9 model FLOPs are the language model's: 0.3 x mfu
    assert m["t/mfu_language"] == pytest.approx(0.3 * m["t/mfu"], rel=1e-12)
    window_s = sum(s["period_s"] for s in t.window_steps())
    assert m["t/mfu_mixed"] == pytest.approx(4e-9 / window_s, rel=1e-12)


def test_booked_flops_are_the_ledgers(tmp_path):
    """The log line's ledger interval holds the booked FLOPs: the ledger reads
    the step records, as the window does (no second path)."""
    log = tmp_path / "m.jsonl"
    t = _tracker(3, log_path=log)
    t.book(1, model_flops=1e9)
    t.book(3, model_flops=3e9)
    t.metrics()                                   # step 2 unknown: the ledger says so
    t.book(2, model_flops=2e9)
    t.step()                                      # step 4, never booked
    t.close()
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    first = lines[1]["ledger"]
    assert first["model_flops"] == 4e9 and first["flops_steps"] == 2   # 1e9 + 3e9, 2 of 3
    end = lines[-1]["ledger"]                     # the run end: step 2 booked since, step 4 not
    assert end["from_step"] == 3 and end["to_step"] == 4
    assert end["model_flops"] == 2e9 and end["flops_steps"] == 1


# ---- the composition ----------------------------------------------------------------


def test_the_configuration_is_checked_once_naming_the_argument():
    t = Tracker(1e9, peak_tflops=1e6, clock="cpu", window=7, tensor_parallel=2)
    config = t._config
    assert isinstance(config, TrackerConfig)
    assert (config.flops_per_step, config.window, config.warmup, config.model_parallel) == \
        (1e9, 7, 1, 2)
    with pytest.raises(ValueError, match="window"):
        Tracker(1e9, clock="cpu", window=0)
    with pytest.raises(TypeError, match="measure_peak"):
        Tracker(1e9, clock="cpu", measure_peak="yes")
    with pytest.raises(ValueError, match="flops_per_step"):
        Tracker(0, clock="cpu")


def test_window_totals_are_one_checked_value():
    assert WindowTotals.given(model_flops=None, num_tokens=None) is NO_TOTALS
    assert not NO_TOTALS and NO_TOTALS.summary_kwargs() == {}
    totals = WindowTotals.given(model_flops=6e11, num_tokens=3000)
    assert totals and totals.summary_kwargs() == {"model_flops": 6e11, "num_tokens": 3000.0}
    with pytest.warns(RuntimeWarning, match="ideal_s"):
        bad = WindowTotals.given(ideal_s=-1.0)
    assert math.isnan(bad.ideal_s)


def _documented_keys(doc: str):
    return set(re.findall(r"``\{prefix\}/([A-Za-z_<>/]+)``", doc))


def test_tracker_doc_keys_are_the_key_table():
    """Every key the class docstring's tables name is a key of the one table
    (or a family of it, with a member of its kinds), and every key of that
    table a Tracker logs is documented there: only the job ledger's
    (``mfu-tracker goodput``'s) are not."""
    documented = _documented_keys(Tracker.__doc__)
    names = {key.name for key in KEYS}
    families = {family for family, _, _ in FAMILIES}
    members = set(LOSSES) | set(PHASES) | set(COMM_KINDS) | {"<phase>", "<kind>", "<loss>"}
    for key in documented:
        family, _, member = key.partition("/")
        assert key in names or (family in families and member in members), key
    assert names - documented == {"goodput", "goodput_s", "job_mfu", "job_wall_s"}
    used = {key.partition("/")[0] for key in documented if "/" in key}
    assert families - used == {"badput", "badput_s"}
