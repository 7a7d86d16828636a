"""Memory headroom per window, from the caching allocator's own statistics.

``torch.cuda.memory_stats(device)`` is host-side bookkeeping of PyTorch's
caching allocator: reading it launches nothing and never synchronizes. An
:class:`AllocatorMemory` reads it once when created (the baseline) and once per
:meth:`AllocatorMemory.figures` call (the window edges), giving:

=================================  ==================================================
figure                             meaning
=================================  ==================================================
``memory_peak_allocated_gib``      ``allocated_bytes.all.peak`` / 2^30: the most memory
                                   tensors held
``memory_peak_reserved_gib``       ``reserved_bytes.all.peak`` / 2^30: the most memory
                                   the allocator held from the driver (tensors + cache)
``memory_peak_allocated_frac``     the peak / the device's total memory
``memory_peak_reserved_frac``      the same for the reserved peak
``memory_alloc_retries``           ``num_alloc_retries`` now less at the previous edge:
                                   allocations that failed, freed the cache and retried
                                   (each a device-wide synchronization in the allocator)
``memory_ooms``                    ``num_ooms`` now less at the previous edge
=================================  ==================================================

**Peaks.** By default the peaks are the allocator's *running* peaks (since the
process started, or since the user last called
``torch.cuda.reset_peak_memory_stats``): reading them changes nothing. With
``per_window=True`` each edge calls ``torch.cuda.reset_peak_memory_stats``
after reading, so each window's peak is its own (it starts at the memory held
at the edge) -- and the user's own ``torch.cuda.max_memory_allocated()`` /
``max_memory_reserved()`` then also restart at every logging step: the side
effect of opting in.

Statistics the allocator does not report (another allocator backend) are
left out, with one warning; nothing here raises into a training loop.
"""
from __future__ import annotations

import warnings
from typing import Any, Dict, Optional

GIB = float(2 ** 30)

#: The allocator's keys read here (c10/cuda/CUDACachingAllocator DeviceStats,
#: as torch.cuda.memory_stats flattens them).
PEAK_ALLOCATED = "allocated_bytes.all.peak"
PEAK_RESERVED = "reserved_bytes.all.peak"
RETRIES = "num_alloc_retries"
OOMS = "num_ooms"


def _warn(message: str) -> None:
    warnings.warn(f"mfu_tracker: {message}", RuntimeWarning, stacklevel=5)


class AllocatorMemory:
    """The caching allocator's statistics of CUDA device ``index`` at window
    edges (see the module doc). ``torch`` is the torch module."""

    __slots__ = ("_cuda", "_index", "_per_window", "_total_bytes", "_last", "_warned")

    def __init__(self, torch: Any, index: int, per_window: bool = False) -> None:
        self._cuda = torch.cuda
        self._index = index
        self._per_window = per_window
        self._warned: set = set()
        try:
            self._total_bytes: Optional[float] = float(
                self._cuda.get_device_properties(index).total_memory)
        except Exception:  # noqa: BLE001 -- no fraction without the device's size
            self._total_bytes = None
        self._last = self._read()

    @property
    def per_window(self) -> bool:
        """Whether each edge resets the allocator's peaks (per-window peaks)."""
        return self._per_window

    def _once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            _warn(message)

    def _read(self) -> Dict[str, Any]:
        """The allocator's statistics now ({} when it has none), and the peaks
        reset after reading when per-window."""
        try:
            stats = dict(self._cuda.memory_stats(self._index))
            if self._per_window and stats:
                self._cuda.reset_peak_memory_stats(self._index)
        except Exception as exc:  # noqa: BLE001 -- never raise into the loop
            self._once("read", f"the caching allocator's statistics of cuda:{self._index} "
                               f"cannot be read ({exc!r}); the memory/* keys are left out")
            return {}
        if not stats:
            self._once("empty", f"the caching allocator reports no statistics for "
                                f"cuda:{self._index} (torch has not initialized CUDA there); "
                                f"the memory/* keys are left out")
        return stats

    def figures(self) -> Dict[str, float]:
        """Read the allocator now: the window's figures (module doc), those it
        reports."""
        now = self._read()
        last, self._last = self._last, now
        out: Dict[str, float] = {}
        if not now:
            return out
        for name, key in (("allocated", PEAK_ALLOCATED), ("reserved", PEAK_RESERVED)):
            peak = now.get(key)
            if peak is None:
                self._once(key, f"the caching allocator has no {key!r}: "
                                f"memory/peak_{name}_gib is left out")
                continue
            out[f"memory_peak_{name}_gib"] = peak / GIB
            if self._total_bytes:
                out[f"memory_peak_{name}_frac"] = peak / self._total_bytes
        for field, key in (("memory_alloc_retries", RETRIES), ("memory_ooms", OOMS)):
            count, before = now.get(key), last.get(key)
            if count is None:
                self._once(key, f"the caching allocator has no {key!r}: "
                                f"{field.replace('_', '/', 1)} is left out")
            elif before is not None and count >= before:
                out[field] = float(count - before)
        return out
