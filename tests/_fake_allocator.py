"""A fake of PyTorch's CUDA caching allocator statistics, for machines
without a GPU: ``torch.cuda.memory_stats``, ``reset_peak_memory_stats``,
``max_memory_allocated`` / ``max_memory_reserved`` and the device's
``total_memory``, kept the way c10's CUDACachingAllocator keeps them.

The allocator's DeviceStats hold, per stat (allocated_bytes, reserved_bytes,
active_bytes, ...) and pool ("all", "small_pool", "large_pool"), ``current``,
``peak``, ``allocated`` and ``freed``, plus the plain counters
``num_alloc_retries`` and ``num_ooms``; ``torch.cuda.memory_stats`` flattens
them into ``"allocated_bytes.all.peak"``-style keys, sorted.
``reset_peak_memory_stats`` sets every peak to its current value;
``reset_accumulated_memory_stats`` sets the cumulative counters to 0. Memory is reserved in 2 MiB segments (the large pool's
rounding: kLargeBuffer = 20 MiB aside, a segment of at least the request).
"""
from __future__ import annotations

import types
from collections import OrderedDict
from typing import Any, Dict

GIB = 2 ** 30
SEGMENT = 2 * 2 ** 20


class FakeAllocator:
    def __init__(self, total_memory: int = 80 * GIB) -> None:
        self.total_memory = total_memory
        self.stat: Dict[str, Dict[str, int]] = {
            name: {"current": 0, "peak": 0, "allocated": 0, "freed": 0}
            for name in ("allocated_bytes", "reserved_bytes", "active_bytes")}
        self.num_alloc_retries = 0
        self.num_ooms = 0
        self.resets = 0

    def _add(self, name: str, amount: int) -> None:
        s = self.stat[name]
        s["current"] += amount
        if amount > 0:
            s["allocated"] += amount
        else:
            s["freed"] -= amount
        s["peak"] = max(s["peak"], s["current"])

    def malloc(self, nbytes: int) -> None:
        self._add("allocated_bytes", nbytes)
        self._add("active_bytes", nbytes)
        short = self.stat["allocated_bytes"]["current"] - self.stat["reserved_bytes"]["current"]
        if short > 0:  # a new segment, rounded up
            self._add("reserved_bytes", -(-short // SEGMENT) * SEGMENT)

    def free(self, nbytes: int) -> None:   # the segment stays cached (reserved)
        self._add("allocated_bytes", -nbytes)
        self._add("active_bytes", -nbytes)

    def retry(self) -> None:              # a failed cudaMalloc, cache freed, retried
        self.num_alloc_retries += 1

    def oom(self) -> None:
        self.num_ooms += 1

    # ---- torch.cuda's API ------------------------------------------------------

    def memory_stats(self, device: Any = None) -> "OrderedDict[str, int]":
        flat: Dict[str, int] = {"num_alloc_retries": self.num_alloc_retries,
                                "num_ooms": self.num_ooms}
        for name, s in self.stat.items():
            for field, value in s.items():
                flat[f"{name}.all.{field}"] = value
                flat[f"{name}.large_pool.{field}"] = value
                flat[f"{name}.small_pool.{field}"] = 0
        return OrderedDict(sorted(flat.items()))

    def reset_peak_memory_stats(self, device: Any = None) -> None:
        self.resets += 1
        for s in self.stat.values():
            s["peak"] = s["current"]

    def reset_accumulated_memory_stats(self, device: Any = None) -> None:
        """The cumulative counters (allocated, freed, retries, OOMs) back to 0."""
        for s in self.stat.values():
            s["allocated"] = s["freed"] = 0
        self.num_alloc_retries = self.num_ooms = 0

    def max_memory_allocated(self, device: Any = None) -> int:
        return self.stat["allocated_bytes"]["peak"]

    def max_memory_reserved(self, device: Any = None) -> int:
        return self.stat["reserved_bytes"]["peak"]

    def get_device_properties(self, device: Any = None) -> Any:
        return types.SimpleNamespace(total_memory=self.total_memory, name="fake GPU")

    def install(self, monkeypatch: Any, torch: Any) -> "FakeAllocator":
        """Put this allocator behind torch.cuda's statistics calls."""
        for name in ("memory_stats", "reset_peak_memory_stats", "reset_accumulated_memory_stats",
                     "max_memory_allocated",
                     "max_memory_reserved", "get_device_properties"):
            monkeypatch.setattr(torch.cuda, name, getattr(self, name))
        return self
