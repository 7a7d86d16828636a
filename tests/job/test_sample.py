"""mfu_tracker/job/_sample.py: a run's lines downsampled as they stream in
-- bounded, every spike and the first and newest line kept, a short run
kept whole, whole lines never recombined."""
from __future__ import annotations

from mfu_tracker.job._check import Layouts
from mfu_tracker.job._sample import RecordSample

KEY = "throughput/mfu"


def lines(values):
    return [{"step": i, KEY: v, "_line": i + 1} for i, v in enumerate(values)]


def sample_of(records, buckets, block=False):
    layouts = Layouts()
    sample = RecordSample(follows=lambda layout: (KEY,), buckets=buckets)
    if block:
        sample.add_block(records, layouts.of(records[0]))
    else:
        for record in records:
            sample.add(record, layouts.of(record))
    return sample


def test_a_short_run_is_kept_whole():
    records = lines([0.5] * 8)
    sample = sample_of(records, buckets=8)
    assert sample.records() == records
    assert sample.describe(len(records)) is None


def test_a_spike_and_a_dip_survive_and_memory_is_bounded():
    values = [0.4] * 1000
    values[333], values[777] = 0.9, 0.05  # a spike, a dip
    records = lines(values)
    for block in (False, True):
        sample = sample_of(records, buckets=8, block=block)
        kept = sample.records()
        # at most 8 buckets x (first, last, low, high), plus the layout's first and newest
        assert len(kept) <= 8 * 4 + 2
        kept_lines = [r["_line"] for r in kept]
        assert kept_lines == sorted(kept_lines)            # file order
        assert 334 in kept_lines and 778 in kept_lines      # the spike and the dip
        assert kept[0] is records[0] and kept[-1] is records[-1]
        assert all(r in records for r in kept)              # whole lines, never recombined
        assert "of 1,000 metrics lines drawn" in sample.describe(len(kept))


def test_a_step_change_keeps_a_line_of_each_level():
    records = lines([0.2] * 500 + [0.6] * 500)
    kept = [r[KEY] for r in sample_of(records, buckets=8).records()]
    assert 0.2 in kept and 0.6 in kept
    assert kept == sorted(kept)  # never a 0.6 before a 0.2: the change is where it was


def test_zero_buckets_keeps_the_first_and_newest_line_only():
    records = lines([0.1, 0.9, 0.3, 0.2])
    sample = sample_of(records, buckets=0)
    assert sample.records() == [records[0], records[-1]]
    assert "2 of 4 metrics lines kept" in sample.describe(2)
