"""The step record declared once (csrc/core/steps/step_fields.h, ``_C.STEP_FIELDS``)
and every ratio formed by one formula (csrc/core/steps/stats.h, ``_C.form_figures``):
the table is the Python value type (``StepSums``), the keywords of step(),
book() and metrics(), the keys of summary() and window_steps(), and the rank
row's columns; the window's figures and the job's are the formula's, bit for
bit; the rank row of the previous layout is still read. docs/step-records.md.
"""
from __future__ import annotations

import math
import random

import pytest

from mfu_tracker import _C, user_gpu_spec
from mfu_tracker.distributed import ROW_FIELDS, ROW_LAYOUT, RankFigures, combine
from mfu_tracker.distributed._row_v5 import LAYOUT_5_FIELDS
from mfu_tracker.step import Tracker
from mfu_tracker.timing._totals import GIVEN_FIELDS, NO_TOTALS, StepSums
from mfu_tracker.timing._waterfall import LOSSES, closing_share

NAMES = [field.name for field in _C.STEP_FIELDS]


def _tracker(**kwargs):
    kwargs.setdefault("peak_tflops", 1.0)
    return Tracker(kwargs.pop("flops", None), clock="cpu", warmup=0, **kwargs)


def test_the_table_is_the_value_type_and_every_key():
    assert [f.name for f in _C.STEP_FIELDS] == list(StepSums.__dataclass_fields__)
    assert set(GIVEN_FIELDS) == {f.name for f in _C.STEP_FIELDS if f.given}
    assert {f.unit for f in _C.STEP_FIELDS} <= {"FLOPs", "bytes", "tokens", "s"}
    t = _tracker()
    t.step()
    for i, name in enumerate(GIVEN_FIELDS):          # every given field, at step()
        t.step(**({"model_flops": 1.0} if name == "model_flops" else {name: float(i + 1)}))
    steps = t.window_steps()
    for i, name in enumerate(GIVEN_FIELDS):
        assert steps[i][name] == (1.0 if name == "model_flops" else float(i + 1)), name
        assert set(NAMES) <= set(steps[i])
    summary = _C.StepTracker.summary(t)
    assert set(NAMES) <= set(summary) and {r.name for r in _C.RATIOS} <= set(summary)


def test_book_and_metrics_take_the_fields_or_one_value():
    t = _tracker(window=4)
    for _ in range(3):
        t.step()
    assert t.book(1, StepSums(model_flops=2e9, num_tokens=8.0))
    assert t.book(2, model_flops=2e9, num_tokens=8.0)
    assert [(s["model_flops"], s["num_tokens"]) for s in t.window_steps()] == [(2e9, 8.0)] * 2
    by_value = t.metrics("t", StepSums(model_flops=6e9, num_tokens=30.0))
    by_keywords = t.metrics("t", model_flops=6e9, num_tokens=30.0)
    assert by_value["t/mfu"] == by_keywords["t/mfu"] and by_value["t/tokens_per_sec"] > 0
    assert t.metrics("t", StepSums(model_flops=6e9), num_tokens=30.0) == by_keywords
    with pytest.raises(TypeError, match="nonsense"):
        t.metrics(nonsense=1.0)
    with pytest.raises(TypeError, match="nonsense"):
        t.book(1, nonsense=1.0)
    with pytest.raises(TypeError, match="ideal_s or flops_by_dtype"):
        t.step(ideal_s=1.0, flops_by_dtype={"bf16": 1.0})
    assert StepSums.given(model_flops=None) is NO_TOTALS


def test_the_value_type():
    s = StepSums(model_flops=10.0, executed_flops=15.0)
    assert s.kwargs() == {"model_flops": 10.0, "executed_flops": 15.0} and s and not NO_TOTALS
    assert s.scaled(2.0).kwargs() == {"model_flops": 20.0, "executed_flops": 30.0}
    assert s.minus(StepSums(model_flops=4.0)).kwargs() == {"model_flops": 6.0}
    assert s.replace(num_tokens=3.0).num_tokens == 3.0

    class Counter:
        model_flops, executed_flops, forward_flops = 7, 9, 3
    assert StepSums.read(Counter()).kwargs() == {"model_flops": 7.0, "executed_flops": 9.0}


def test_every_figure_of_the_window_is_the_one_formula_bit_for_bit():
    """summary() (the window), combine() of one rank (the job) and
    _C.form_figures over the same sums agree exactly."""
    spec = user_gpu_spec(2.0, memory_bandwidth_tbs=1.0)
    t = Tracker(4e9, spec=spec, clock="cpu", warmup=0, param_bytes=1e6, num_gpus=2,
                executed_flops_per_step=6e9, flops_by_dtype={"bf16": 4e9})
    for _ in range(4):
        with t.phase("forward"):
            pass
        t.step(num_tokens=30, overcompute_flops=1e8, language_flops=3e9)
    s = t.summary()
    sums = {name: s.get(name) for name in NAMES}
    per_step = {f.name: s.get(f"{f.name}_per_step") for f in _C.STEP_FIELDS if f.per_step}
    formed = _C.form_figures(sums, s["window_s"], peak_flops_per_sec=s["peak_flops_per_sec"],
                             peak_bytes_per_sec=2e12, devices=2.0, step_s=s["step_time_s"],
                             phase_s=t.phases()["phase_s"], per_step=per_step)
    for ratio in _C.RATIOS:
        if ratio.name != "mfu_vs_measured":
            assert s.get(ratio.name) == formed[ratio.name], ratio.name
    assert s["mfu_lost"] == formed["mfu_lost"] and list(s["mfu_lost"]) == \
        [k for k in LOSSES if k in s["mfu_lost"]]
    job = t.aggregate()
    for name in ("mfu", "hfu", "mbu", "mfu_mixed", "mfu_language", "tokens_per_sec"):
        assert getattr(job, name) == pytest.approx(s[name], rel=1e-12), name
    assert math.fsum([job.mfu, *job.mfu_lost.values()]) == 1.0


def test_the_row_carries_the_record_not_ratios():
    record = [c for c in ROW_FIELDS if c.endswith(("_per_sec", "_per_step"))
              and c.rsplit("_per_", 1)[0] in NAMES]
    assert record == list(ROW_FIELDS[-len(NAMES):]) and len(record) == len(NAMES)
    assert not {"mfu", "hfu", "mfu_mixed", "mfu_language"} & set(ROW_FIELDS)
    assert int(ROW_LAYOUT) == 6 and ROW_LAYOUT != 6.0     # the columns' fingerprint
    with pytest.raises(ValueError, match="layout"):
        RankFigures.from_row([7.0, 0.0])


def _v5_row(**values):
    """A layout-5 row: NaN where not given."""
    return [5.0 if name == "layout" else float(values.get(name, math.nan))
            for name in LAYOUT_5_FIELDS]


def test_a_layout_5_row_is_still_read():
    """Layout 5 carried rates and ratios: its FLOP/s, bytes/s and tokens/s
    are the record's sums per second; mfu_mixed x devices its ideal seconds
    per second, mfu_language x peak its language FLOP/s."""
    common = dict(rank=1, boundaries=11, steps=10, window_s=1.0, step_time_s=0.1,
                  step_time_min_s=0.09, step_time_max_s=0.11, peak_flops_per_sec=2e12,
                  peak_bytes_per_sec=1e12, num_devices=4, model_parallel=1, interval_s=1.0,
                  interval_steps=10, phase_forward_s=0.04, comm_observed=1.0,
                  comm_bytes_all_reduce=100.0)
    r = RankFigures.from_row(_v5_row(
        achieved_flops_per_sec=5e11, executed_flops_per_sec=6e11, achieved_bytes_per_sec=2e11,
        tokens_per_sec=1000.0, overcompute_flops_per_sec=1e10, mfu=0.25, mfu_mixed=0.0625,
        mfu_language=0.2, **common))
    assert r.sums == StepSums(model_flops=5e11, executed_flops=6e11, param_bytes=2e11,
                              num_tokens=1000.0, overcompute_flops=1e10,
                              ideal_s=0.0625 * 4, language_flops=0.2 * 2e12)
    assert (r.rank, r.steps, r.num_devices, r.phase_s) == (1, 10, 4, {"forward": 0.04})
    assert r.comm_family("comm_bytes") == {"all_reduce": 100.0}
    g = combine([r])
    assert g.mfu == 0.25 and g.hfu == 0.3 and g.mbu == 0.2 and g.mfu_language == 0.2
    assert g.mfu_mixed == 0.0625 and g.tokens_per_sec == 1000.0
    assert RankFigures.from_row(r.to_row()) == r      # and written in today's layout
    with pytest.raises(ValueError, match="layout-5"):
        RankFigures.from_row([5.0, 1.0])


def test_the_rank_named_for_a_loss_has_the_largest_share_of_it():
    """mfu_lost_rank compares the shares the waterfall reports: rank 0's
    over-compute (hfu - mfu = 0.2, of which 0.15 is over-compute) is no
    recompute, so rank 1 (recompute 0.1) has the larger recompute share."""
    def rank(r, over):
        return RankFigures(rank=r, boundaries=11, steps=10, window_s=1.0, step_time_s=0.1,
                           step_time_min_s=0.1, step_time_max_s=0.1,
                           sums=StepSums(model_flops=3e11, executed_flops=(5e11 if over else 4e11),
                                         overcompute_flops=over),
                           peak_flops_per_sec=1e12, peak_bytes_per_sec=None, num_devices=1,
                           model_parallel=1, interval_s=1.0, interval_steps=10,
                           phase_forward_s=0.08)
    g = combine([rank(0, 1.5e11), rank(1, 0.0)])
    assert g.mfu_lost_rank["recompute"] == 1.0 and g.mfu_lost_rank["compute"] == 0.0


def _reference_closing_share(shares):
    """The closing share by math.fsum: 1 - sum, moved by halves of the
    remaining error, then by single ulps (the C core's rule, in Python)."""
    x, step = 1.0 - math.fsum(shares), 0.0
    for _ in range(64):
        total = math.fsum([*shares, x])
        if total == 1.0:
            break
        step = (total - 1.0) / 2.0 if step == 0.0 else step / 2.0
        if x - step == x:
            x = math.nextafter(x, -math.inf if total > 1.0 else math.inf)
        else:
            x -= step
    return x


def test_closing_share_is_exact_and_is_math_fsums():
    """Shares of a waterfall (an MFU, losses within [-0.2, 0.6], some tiny):
    the C closing share is, bit for bit, the share math.fsum's own search
    finds; where the rest is a share of the step (0 <= other < 1) it closes
    the sum to exactly 1."""
    rng = random.Random(7)
    closed = 0
    for _ in range(3000):
        shares = [rng.uniform(0.0, 0.9)] + [rng.uniform(-0.2, 0.6) * 10 ** -rng.randint(0, 17)
                                            for _ in range(rng.randint(1, 9))]
        x = closing_share(shares)
        assert x == _reference_closing_share(shares), shares
        if 0.0 <= 1.0 - math.fsum(shares) < 1.0:
            closed += 1
            assert math.fsum([*shares, x]) == 1.0, shares
    assert closed > 1000
