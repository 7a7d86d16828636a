"""mfu_tracker/peaks/_cpu_share.py: the CPU share of a timed matmul -- the
least CPU time of a thread that worked on it over its wall time."""
from __future__ import annotations

import threading
import time

from mfu_tracker.peaks._cpu_share import CPU_SHARE_MIN, CpuClocks, cpu_threads


def _spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_a_thread_that_sleeps_is_not_on_a_cpu():
    clocks = CpuClocks()
    before = clocks.read()
    start = time.perf_counter()
    time.sleep(0.2)
    share = clocks.share_since(before, time.perf_counter() - start)
    # sleeping: no thread worked, or the one that did had a tiny share
    assert share < CPU_SHARE_MIN


def test_spinning_in_this_thread_counts_its_cpu_time():
    clocks = CpuClocks()
    before_threads, before_cpu = clocks.read()
    start = time.perf_counter()
    _spin(0.15)
    wall_s = time.perf_counter() - start
    threads, cpu = clocks.read()
    assert cpu - before_cpu > 0.0
    if clocks.per_thread:
        tid = threading.get_native_id()
        assert tid in threads
        # this thread's CPU clock grew by at most the wall time spun (plus slack)
        assert 0 < threads[tid] - before_threads[tid] <= wall_s + 0.05


def test_zero_wall_time_gives_zero_share():
    clocks = CpuClocks()
    assert clocks.share_since(clocks.read(), 0.0) == 0.0


def test_cpu_threads_is_capped_by_torch_threads():
    import torch

    assert 1 <= cpu_threads() <= torch.get_num_threads()
