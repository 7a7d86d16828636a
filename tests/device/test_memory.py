"""mfu_tracker/device/_memory.py: AllocatorMemory read directly over the fake
caching allocator (tests/_fake_allocator.py, torch.cuda's statistics calls)
given as its ``torch``: each figure by hand, the device it asks about, peaks
reset only when per-window, and what it leaves out -- with one warning each
-- when the allocator cannot tell."""
from __future__ import annotations

import types
import warnings

import pytest

from _fake_allocator import GIB, FakeAllocator
from mfu_tracker.device._memory import OOMS, PEAK_RESERVED, AllocatorMemory


def torch_with(cuda):
    return types.SimpleNamespace(cuda=cuda)


def test_each_figure_by_hand():
    allocator = FakeAllocator(total_memory=16 * GIB)
    memory = AllocatorMemory(torch_with(allocator), 0)
    allocator.malloc(3 * GIB)
    allocator.free(1 * GIB)
    allocator.retry()
    allocator.retry()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = memory.figures()
    assert out == {
        "memory_peak_allocated_gib": 3.0,         # 3 GiB held at most
        "memory_peak_allocated_frac": 0.1875,     # 3 / 16 GiB
        "memory_peak_reserved_gib": 3.0,          # 3 GiB is whole 2 MiB segments
        "memory_peak_reserved_frac": 0.1875,
        "memory_alloc_retries": 2.0,              # 2 since the construction's reading
        "memory_ooms": 0.0,
    }
    allocator.oom()
    assert memory.figures()["memory_ooms"] == 1.0          # since the previous edge
    assert memory.figures()["memory_peak_allocated_gib"] == 3.0   # the running peak stays
    assert allocator.resets == 0 and not memory.per_window


def test_per_window_resets_the_peak_after_each_reading():
    allocator = FakeAllocator()
    memory = AllocatorMemory(torch_with(allocator), 0, per_window=True)
    assert memory.per_window and allocator.resets == 1     # the baseline's reading
    allocator.malloc(4 * GIB)
    allocator.free(3 * GIB)
    assert memory.figures()["memory_peak_allocated_gib"] == 4.0
    allocator.malloc(1 * GIB)                              # 1 held + 1
    assert memory.figures()["memory_peak_allocated_gib"] == 2.0   # this window's own
    assert allocator.resets == 3


class OnDevice(FakeAllocator):
    """The fake allocator, recording which device each call asked about."""

    def __init__(self):
        super().__init__(total_memory=8 * GIB)
        self.asked = []

    def memory_stats(self, device=None):
        self.asked.append(("stats", device))
        return super().memory_stats(device)

    def reset_peak_memory_stats(self, device=None):
        self.asked.append(("reset", device))
        super().reset_peak_memory_stats(device)

    def get_device_properties(self, device=None):
        self.asked.append(("properties", device))
        return super().get_device_properties(device)


def test_it_asks_about_its_own_device():
    allocator = OnDevice()
    AllocatorMemory(torch_with(allocator), 3, per_window=True).figures()
    assert allocator.asked == [("properties", 3), ("stats", 3), ("reset", 3),
                               ("stats", 3), ("reset", 3)]


def test_without_the_devices_size_there_is_no_fraction():
    allocator = FakeAllocator()

    def no_properties(device=None):
        raise RuntimeError("no device")
    allocator.get_device_properties = no_properties
    allocator.malloc(GIB)
    out = AllocatorMemory(torch_with(allocator), 0).figures()
    assert out["memory_peak_allocated_gib"] == 1.0
    assert "memory_peak_allocated_frac" not in out and "memory_peak_reserved_frac" not in out


def test_statistics_that_cannot_be_read_warn_once_and_give_nothing():
    allocator = FakeAllocator()

    def broken(device=None):
        raise RuntimeError("allocator gone")
    allocator.memory_stats = broken
    with pytest.warns(RuntimeWarning, match=r"cuda:2 cannot be read .*allocator gone") as caught:
        memory = AllocatorMemory(torch_with(allocator), 2)
        assert memory.figures() == {} and memory.figures() == {}
    assert len(caught) == 1


def test_a_missing_statistic_is_left_out_with_one_warning_naming_it():
    allocator = FakeAllocator(total_memory=4 * GIB)
    full = allocator.memory_stats

    def partial(device=None):
        stats = dict(full(device))
        del stats[PEAK_RESERVED], stats[OOMS]
        return stats
    allocator.memory_stats = partial
    memory = AllocatorMemory(torch_with(allocator), 0)
    allocator.malloc(GIB)
    with pytest.warns(RuntimeWarning) as caught:
        out = memory.figures()
        memory.figures()
    assert sorted(str(w.message).split("has no ")[1].split(":")[0] for w in caught) == \
        ["'num_ooms'", "'reserved_bytes.all.peak'"]
    assert out == {"memory_peak_allocated_gib": 1.0, "memory_peak_allocated_frac": 0.25,
                   "memory_alloc_retries": 0.0}   # 1 of 4 GiB; 0 retries


def test_a_counter_without_a_baseline_or_gone_back_is_left_out():
    allocator = FakeAllocator()
    real = allocator.memory_stats
    allocator.memory_stats = lambda device=None: {}       # CUDA not yet initialized
    with pytest.warns(RuntimeWarning, match="reports no statistics"):
        memory = AllocatorMemory(torch_with(allocator), 0)
    allocator.memory_stats = real
    allocator.retry()
    first = memory.figures()
    assert "memory_alloc_retries" not in first            # no count at the previous edge
    assert first["memory_peak_allocated_gib"] == 0.0
    allocator.retry()
    assert memory.figures()["memory_alloc_retries"] == 1.0   # 2 - 1
    allocator.reset_accumulated_memory_stats()             # the user's reset: 2 -> 0
    assert "memory_alloc_retries" not in memory.figures()  # 0 - 2: unknown, never -2
