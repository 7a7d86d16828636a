"""CUDA graph replay under a counter: warned about, never counted.

A replayed CUDA graph launches its kernels without the dispatcher, so their
FLOPs are not in any count (``torch.compile(mode="reduce-overhead")``,
``make_graphed_callables``, a hand-captured graph). ``CUDAGraph.replay`` is
wrapped once, at the first counter's entry, to warn once while a counter is
active on the thread (:data:`counting`). Replay is not counted as capture x
replays: what a graph captured, and whether capture ran inside a counter, is
not known reliably enough to multiply.
"""
from __future__ import annotations

import threading
import warnings
from typing import Any

__all__ = ["counting", "watch_cuda_graphs"]

#: Per thread: ``.active``, the FlopCounters active on it.
counting = threading.local()
_watched = False


def watch_cuda_graphs() -> None:
    """Wrap ``CUDAGraph.replay`` (once per process) to warn once when a graph
    is replayed while a FlopCounter counts on the thread."""
    global _watched
    if _watched:
        return
    _watched = True
    try:
        from torch.cuda.graphs import CUDAGraph
    except Exception:  # noqa: BLE001 -- a torch without CUDA graphs
        return
    replay = CUDAGraph.replay
    warned: list[bool] = []

    def watched_replay(self: Any) -> None:
        if getattr(counting, "active", 0) and not warned:
            warned.append(True)
            warnings.warn(
                "mfu_tracker.FlopCounter: a CUDA graph was replayed while counting; its "
                "kernels run without the dispatcher, so their FLOPs are missing from the "
                "count (torch.compile(mode='reduce-overhead'), CUDA graphs). Count a step run "
                "without CUDA graphs (profile_flops, or mode='default') and give those FLOPs "
                "to the tracker.", RuntimeWarning, stacklevel=2)
        return replay(self)

    watched_replay.__wrapped__ = replay  # type: ignore[attr-defined]
    CUDAGraph.replay = watched_replay  # type: ignore[method-assign]
