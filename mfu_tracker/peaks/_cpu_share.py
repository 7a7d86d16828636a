"""Whether a timed CPU matmul got the CPU it asked for (:class:`CpuClocks`).

A matmul on a CPU runs on torch's intra-op threads; when another process
holds a core, one of them waits for it, the others wait for that one, and the
wall time stretches while the work does not. So each timed matmul is checked
against the CPU time of the threads that worked on it:

* on Linux, each thread's own CPU clock (``clock_gettime`` on the per-thread
  clock id glibc's ``pthread_getcpuclockid`` builds, read for every thread of
  the process in ``/proc/self/task``): the share is the least CPU time of a
  thread that worked on the matmul over its wall time -- a thread that
  waited for a core shows it however the others spun;
* elsewhere, the process's CPU time over the wall time times torch's
  threads (capped at the CPUs this process may run on).

A thread waiting at a barrier spins for a while (GNU OpenMP: several ms)
before it sleeps, so under load CPU time grows too: only the share tells a
matmul that got its CPU from one that did not.
"""
from __future__ import annotations

import os
import threading
import time
from typing import Dict, Tuple

__all__ = ["CPU_SHARE_MIN", "CpuClocks"]

#: A timed matmul counts when each thread that worked on it was on a CPU for
#: at least this share of its wall time.
CPU_SHARE_MIN = 0.9
#: A thread worked on the matmul when its CPU time over it was at least this
#: share of the busiest thread's (a sleeping pool thread's is 0; a thread
#: that waited for a core still did its part of the work).
_WORKING = 0.1
_TASKS = "/proc/self/task"


def _thread_clock(tid: int) -> int:
    """The CPU-time clock id of thread ``tid`` of this process (Linux:
    CPUCLOCK_SCHED | CPUCLOCK_PERTHREAD_MASK over the negated tid, as glibc's
    pthread_getcpuclockid builds it)."""
    return ((~tid) << 3) | 6


def _per_thread_clocks_work() -> bool:
    """Whether this system reads a thread's CPU clock by its id (the calling
    thread's reads as ``time.thread_time``)."""
    try:
        own = time.clock_gettime(_thread_clock(threading.get_native_id()))
        return abs(own - time.thread_time()) < 0.05 and os.path.isdir(_TASKS)
    except (AttributeError, OSError, OverflowError, ValueError):
        return False


def _cpus_allowed() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class CpuClocks:
    """Reads the CPU time of this process's threads around a timed matmul."""

    def __init__(self) -> None:
        self.per_thread = _per_thread_clocks_work()

    def read(self) -> Tuple[Dict[int, float], float]:
        """(CPU seconds per thread id -- empty without per-thread clocks,
        the process's CPU seconds)."""
        threads: Dict[int, float] = {}
        if self.per_thread:
            for name in os.listdir(_TASKS):
                try:
                    threads[int(name)] = time.clock_gettime(_thread_clock(int(name)))
                except (OSError, ValueError):  # the thread ended meanwhile
                    pass
        return threads, time.process_time()

    def share_since(self, before: Tuple[Dict[int, float], float], wall_s: float) -> float:
        """The share of ``wall_s`` each thread that worked on the matmul was
        on a CPU since ``before`` (the least of them)."""
        threads, process_s = self.read()
        if wall_s <= 0:
            return 0.0
        if not self.per_thread:
            return (process_s - before[1]) / (wall_s * cpu_threads())
        spent = [threads[tid] - then for tid, then in before[0].items() if tid in threads]
        busiest = max(spent, default=0.0)
        working = [s for s in spent if s > 0 and s >= _WORKING * busiest]
        return min(working, default=0.0) / wall_s


def cpu_threads() -> int:
    """torch's intra-op threads, capped at the CPUs this process may use."""
    import torch

    return max(1, min(torch.get_num_threads(), _cpus_allowed()))
