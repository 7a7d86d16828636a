"""CUDA graph replay under a counter (mfu_tracker/flops/counter/_graphs.py):
warned about once while a counter is active, never counted. No GPU here: the
real replay the watch wraps fails after the check, on a shell graph."""
from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")

from mfu_tracker.flops.counter import FlopCounter  # noqa: E402
from mfu_tracker.flops.counter._graphs import counting, watch_cuda_graphs  # noqa: E402


def test_the_watch_wraps_replay_once_and_tracks_active_counters():
    from torch.cuda.graphs import CUDAGraph

    watch_cuda_graphs()
    wrapped = CUDAGraph.replay
    assert callable(wrapped.__wrapped__)  # the real replay, kept
    watch_cuda_graphs()  # once per process: not wrapped twice
    assert CUDAGraph.replay is wrapped
    before = getattr(counting, "active", 0)
    with FlopCounter(modules=False):
        assert counting.active == before + 1
        with FlopCounter(modules=False):
            assert counting.active == before + 2
    assert counting.active == before


def test_cuda_graph_replay_while_counting_gives_one_warning():
    """Replayed kernels run without the dispatcher: one clear warning while
    a counter is active, none outside."""
    from torch.cuda.graphs import CUDAGraph

    with FlopCounter(modules=False):  # installs the watch on CUDAGraph.replay
        pass
    graph = object.__new__(CUDAGraph)  # no CUDA: a shell the real replay rejects

    def replay() -> None:
        try:
            CUDAGraph.replay(graph)
        except Exception:  # noqa: BLE001 -- the real replay, after the watch
            pass

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        replay()  # outside a counter
        with FlopCounter(modules=False):
            for _ in range(3):
                replay()
    ours = [w for w in caught if "CUDA graph was replayed" in str(w.message)]
    assert len(ours) == 1 and "reduce-overhead" in str(ours[0].message)
