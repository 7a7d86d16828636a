"""One record per step (csrc/core/steps/records.h) and the Tracker as a composition.

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

from mfu_tracker import Tracker, user_gpu_spec
from mfu_tracker.timing._metrics import FAMILIES, KEYS, ROLE_KEYS
from mfu_tracker.timing._totals import NO_TOTALS, WindowTotals
from mfu_tracker.timing._waterfall import COMM_KINDS, LOSSES, PHASES
from mfu_tracker.tracker._config import TrackerConfig

PEAK = 1e18  # FLOP/s: peak_tflops=1e6 (no MFU > 1 on CPU periods)
MS = 1_000_000  # ns
SPEC = user_gpu_spec(1000.0, name="fake GPU")  # 1e15 FLOP/s


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


def test_steps_lost_to_a_clock_failure_carry_no_flops_in_the_ledger(fake, tmp_path):
    """A step the clock lost has no record: it counts as dropped in the
    ledger's interval, not among the steps with FLOPs."""
    log = tmp_path / "m.jsonl"
    fake.set_lag_ns(5 * MS)                       # nothing resolves before a flush
    t = Tracker(1e9, spec=SPEC, clock="cuda", stream=0, warmup=0, log_path=log)
    for _ in range(4):                            # opens 1, closes 1..3, opens 4
        t.step()
        fake.advance(MS)
    fake.fail_next("cuEventSynchronize", 700)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")           # the clock's failure: one warning
        t.flush()                                 # 1..3 dropped; 4 lost with its start
        for _ in range(3):                        # CPU clock: 4 dropped, 5 and 6 timed
            t.step()
        t.close()
    end = [json.loads(line) for line in log.read_text().splitlines()][-1]["ledger"]
    assert (end["from_step"], end["to_step"], end["dropped"]) == (0, 6, 4)
    assert end["flops_steps"] == 2 and end["model_flops"] == 2e9     # steps 5 and 6


# ---- the composition ----------------------------------------------------------------


def test_the_configuration_is_checked_once_naming_the_argument():
    t = Tracker(1e9, peak_tflops=1e6, clock="cpu", window=7, tensor_parallel=2)
    config = t._config
    assert isinstance(config, TrackerConfig)
    assert (config.model_flops, config.window, config.warmup, config.model_parallel) == \
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
    members = set(LOSSES) | set(PHASES) | set(COMM_KINDS) | {"<phase>", "<kind>", "<loss>", "<class>",
                                                               "<layer>"}
    role_keys = {f"role/<role>/{key.name}" for key in ROLE_KEYS}
    for key in documented:
        family, _, member = key.rpartition("/")   # a family's name may hold a "/"
        assert key in names or key in role_keys or (family in families and member in members), key
    assert role_keys <= documented
    assert names - documented == {"goodput", "goodput_s", "job_mfu", "job_wall_s"}
    used = {key.rpartition("/")[0] for key in documented if "/" in key}
    assert families - used == {"badput", "badput_s"}


def test_a_ranks_row_is_its_share_by_hand(every_matmul_counts):
    """The row a rank contributes (distributed/_rank_row.py): rates and peaks
    over the model-parallel degree; MBU and HFU back to rates over the
    bandwidth and the peak of every device the figures cover; the measured
    peak of this process's devices."""
    spec = user_gpu_spec(1e6, memory_bandwidth_tbs=2.0)     # 1e18 FLOP/s, 2e12 B/s
    t = Tracker(4e9, spec=spec, clock="cpu", warmup=0, num_gpus=2, tensor_parallel=3,
                param_bytes=1e6, executed_flops_per_step=6e9, measure_peak=True)
    for _ in range(4):
        t.step(num_tokens=30)
    row = t.rank_figures()
    window_s = sum(s["period_s"] for s in t.window_steps())
    mp, devices = 3, 2 * 3                      # 2 GPUs x tensor parallel 3
    assert row.model_parallel == mp and row.num_devices == 2 and row.steps == 3
    assert row.achieved_flops_per_sec == pytest.approx(3 * 4e9 / window_s / mp, rel=1e-12)
    assert row.executed_flops_per_sec == pytest.approx(3 * 6e9 / window_s / mp, rel=1e-12)
    assert row.achieved_bytes_per_sec == pytest.approx(3 * 1e6 / window_s / mp, rel=1e-12)
    assert row.tokens_per_sec == pytest.approx(90 / window_s / mp, rel=1e-12)
    assert row.peak_flops_per_sec == pytest.approx(1e18 * devices / mp, rel=1e-12)
    assert row.peak_bytes_per_sec == pytest.approx(2e12 * devices / mp, rel=1e-12)
    measured = t.measured_peak_flops_per_sec
    assert row.measured_flops_per_sec == pytest.approx(measured * 2, rel=1e-12)
    # the ledger's interval since construction: 3 steps x 4e9, this rank's share
    assert row.ledger_model_flops == pytest.approx(3 * 4e9 / mp, rel=1e-12)
    # mfu_vs_measured: the window's FLOP/s over the measured peak of every device
    m = t.summary()
    assert m["mfu_vs_measured"] == pytest.approx(3 * 4e9 / window_s / (measured * devices),
                                                 rel=1e-12)


# ---- the integrations book onto the tracker's records ------------------------------


def test_a_step_record_books_every_figure_of_its_step():
    """StepFlops.book(): a counted step's model, executed and over-compute
    FLOPs and its tokens land on its record (no window of its own)."""
    from mfu_tracker.integrations._step_flops import Flops, StepFlops, StepRecord
    from mfu_tracker.timing._totals import StepSums

    warned = []
    policy = StepFlops(count_every=1, causal_attention="full", hfu_factor=None,
                       warn_once=lambda key, message: warned.append(key))
    t = _tracker(2)
    records = []
    for model, executed, forward, over in ((10.0, 15.0, 4.0, 2.0), (20.0, 30.0, 8.0, 0.0)):
        record = StepRecord()
        record.add_block(8)
        record.counted = Flops(StepSums(model_flops=model, executed_flops=executed,
                                        overcompute_flops=over), forward)
        records.append(record)
    policy.book(t, [(1, records[0]), (2, records[1])], [None] * 6)
    steps = t.window_steps()
    assert [(s["model_flops"], s["executed_flops"], s["overcompute_flops"], s["num_tokens"])
            for s in steps] == [(10.0, 15.0, 2.0, 8.0), (20.0, 30.0, 0.0, 8.0)]
    assert t.summary()["overcompute_flops"] == 2.0 and warned == []


def test_a_callbacks_history_is_the_trackers_window():
    """CallbackCore (the Trainer callbacks' core) keeps no window: a log's
    history entry is the tracker's window as booked; a step without FLOPs
    leaves the window's FLOPs unknown (None), never a partial sum."""
    torch = pytest.importorskip("torch")
    from mfu_tracker.integrations._callback import CallbackCore

    cb = CallbackCore(peak_tflops=1e6, clock="cpu", warmup=0, count_every=0, phases=False)
    cb._start(torch.nn.Linear(4, 4), dtype="fp32", window=4, device="cpu")
    for tokens in (10, 20, 30):
        cb._open_step()
        cb._step.add_block(tokens)
        cb._close_step()
    with pytest.warns(RuntimeWarning, match="no FLOPs for some steps"):
        out = cb._window_metrics(3)
    (entry,) = cb.history
    steps = cb._tracker.window_steps()
    assert entry["steps"] == len(steps) == 3 and entry["tokens"] == 60.0
    assert entry["window_s"] == sum(s["period_s"] for s in steps)
    assert entry["model_flops"] is None and entry["step_flops"] == [None, None, None]
    assert "throughput/mfu" not in out and "throughput/tokens_per_sec" in out
    cb._stop()
