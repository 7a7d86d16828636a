"""The timing layer's front (mfu_tracker/timing/__init__.py): the names it
re-exports are the ones of ``_track`` and ``_generation``, one object each."""
from __future__ import annotations

import mfu_tracker
from mfu_tracker import timing
from mfu_tracker.timing import _generation, _track


def test_the_front_is_track_and_generation_and_nothing_else():
    assert timing.__all__ == [*_track.__all__, *_generation.__all__]
    for name in timing.__all__:
        module = _track if name in _track.__all__ else _generation
        assert getattr(timing, name) is getattr(module, name), name


def test_the_package_root_and_the_layer_give_the_same_objects():
    assert mfu_tracker.compute_mfu is timing.compute_mfu
    assert mfu_tracker.generation_utilization is timing.generation_utilization
