"""mfu_tracker/timing/_generation.py: generation_utilization over a plain
object with round figures (the duck-typed work it documents), every ratio by
hand; which figure is None and when; the arguments it refuses, by name."""
from __future__ import annotations

import warnings
from types import SimpleNamespace

import pytest

from mfu_tracker import user_gpu_spec
from mfu_tracker.timing import _generation
from mfu_tracker.timing._generation import generation_utilization

SPEC = user_gpu_spec(10.0, memory_bandwidth_tbs=1.0)   # 1e13 FLOP/s, 1e12 B/s per device


def work(**changes):
    """A prefill of 1,000 prompt tokens and a decode of 50 tokens."""
    values = dict(prefill_flops=4e12, decode_flops=1e12, prefill_bytes=2e11, decode_bytes=8e11,
                  prefill_tokens=1000, decode_tokens=50)
    values.update(changes)
    return SimpleNamespace(**values)


@pytest.fixture(autouse=True)
def _fresh_warnings():
    _generation._warned.clear()
    yield
    _generation._warned.clear()


def test_each_figure_by_hand():
    u = generation_utilization(work(), prefill_s=1.0, decode_s=4.0, spec=SPEC)
    assert u.prefill_mfu == pytest.approx(0.4, rel=1e-12)     # 4e12 / 1 s / 1e13
    assert u.prefill_mbu == pytest.approx(0.2, rel=1e-12)     # 2e11 / 1 s / 1e12
    assert u.decode_mfu == pytest.approx(0.025, rel=1e-12)    # 1e12 / 4 s / 1e13
    assert u.decode_mbu == pytest.approx(0.2, rel=1e-12)      # 8e11 / 4 s / 1e12
    assert u.mfu == pytest.approx(0.1, rel=1e-12)             # 5e12 / 5 s / 1e13
    assert u.mbu == pytest.approx(0.2, rel=1e-12)             # 1e12 / 5 s / 1e12
    assert u.prefill_tokens_per_sec == pytest.approx(1000.0)  # 1,000 prompt tokens / 1 s
    assert u.decode_tokens_per_sec == pytest.approx(12.5)     # 50 tokens / 4 s
    assert u.decode_bytes_per_sec == pytest.approx(2e11)      # 8e11 B / 4 s
    assert (u.peak_flops_per_sec, u.peak_bytes_per_sec, u.dtype) == (1e13, 1e12, "bf16")


def test_devices_divide_the_shares_not_the_rates():
    u = generation_utilization(work(), prefill_s=1.0, decode_s=4.0, spec=SPEC, num_gpus=4)
    assert u.prefill_mfu == pytest.approx(0.1, rel=1e-12)     # 4e12 / 1 s / (4 x 1e13)
    assert u.decode_mbu == pytest.approx(0.05, rel=1e-12)     # 2e11 B/s / (4 x 1e12)
    assert u.prefill_flops_per_sec == pytest.approx(4e12)     # all devices together
    assert u.num_gpus == 4


def test_the_works_own_times_unless_given():
    timed = work(prefill_s=2.0, decode_s=5.0)
    own = generation_utilization(timed, spec=SPEC)
    assert (own.prefill_s, own.decode_s) == (2.0, 5.0)
    assert own.prefill_mfu == pytest.approx(0.2, rel=1e-12)   # 4e12 / 2 s / 1e13
    given = generation_utilization(timed, prefill_s=1.0, spec=SPEC)
    assert given.prefill_s == 1.0 and given.decode_s == 5.0


def test_what_is_unknown_is_none_never_zero():
    # the decode's bytes unknown: its MBU and the total MBU, not its MFU
    u = generation_utilization(work(decode_bytes=None), prefill_s=1.0, decode_s=4.0, spec=SPEC)
    assert u.decode_mbu is None and u.mbu is None
    assert u.decode_mfu == pytest.approx(0.025) and u.prefill_mbu == pytest.approx(0.2)
    # only the prefill timed: no decode figures and none over both
    half = generation_utilization(work(), prefill_s=1.0, spec=SPEC)
    assert half.decode_mfu is None and half.decode_tokens_per_sec is None
    assert half.mfu is None and half.prefill_mfu == pytest.approx(0.4)
    # a phase of 0 s has no rate (never inf)
    instant = generation_utilization(work(), prefill_s=0.0, decode_s=4.0, spec=SPEC)
    assert instant.prefill_mfu is None and instant.mfu == pytest.approx(5e12 / 4.0 / 1e13)
    assert "MBU n/a" in str(half) and "MFU 0.4" in str(half)


def test_a_share_above_one_warns_once_per_figure():
    with pytest.warns(RuntimeWarning, match="prefill MFU 4.000 > 1") as caught:
        # 4e12 / 0.1 s / 1e13 = 4 (no bytes: no prefill MBU, which would be 2 at 0.1 s)
        generation_utilization(work(prefill_bytes=None), prefill_s=0.1, spec=SPEC)
    assert len(caught) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = generation_utilization(work(prefill_bytes=None), prefill_s=0.1, spec=SPEC)
    assert again.prefill_mfu == pytest.approx(4.0)                # unclamped
    with pytest.warns(RuntimeWarning, match="decode MBU 8.000") as caught:   # its own warning
        generation_utilization(work(), decode_s=0.1, spec=SPEC)    # 8e11 / 0.1 s / 1e12 = 8
    assert len(caught) == 1                                        # decode MFU 1e12/0.1/1e13 = 1


@pytest.mark.parametrize("kwargs, error, match", [
    ({"prefill_s": -1.0}, ValueError, "prefill_s must be .* got -1.0"),
    ({"decode_s": float("inf")}, ValueError, "decode_s .* got inf"),
    ({"decode_s": float("nan")}, ValueError, "decode_s .* got nan"),
    ({"prefill_s": True}, ValueError, "prefill_s .* got True"),
    ({"num_gpus": 0}, ValueError, "num_gpus must be >= 1, got 0"),
    ({"num_gpus": 2.0}, TypeError, "num_gpus must be an int"),
])
def test_bad_arguments_are_refused_by_name(kwargs, error, match):
    with pytest.raises(error, match=match):
        generation_utilization(work(), spec=SPEC, **kwargs)


def test_work_without_a_field_names_it():
    partial = work()
    del partial.decode_bytes
    with pytest.raises(TypeError, match=r"not SimpleNamespace \(no decode_bytes\)"):
        generation_utilization(partial, spec=SPEC)
