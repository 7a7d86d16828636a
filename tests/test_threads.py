"""Thread safety: trackers, the shared GPU mark timer and FlopCounter used from
several threads. The behaviour defined here (docs/reliability.md
points here):

* ``Tracker`` (``_C.StepTracker``): one object may be stepped, read
  (``metrics()`` / ``summary()`` / ``counters()``) and flushed from any number
  of threads. Each call is atomic under the tracker's lock: every ``step()``
  is one boundary (none lost, none doubled), the figures are those of a
  single-threaded run with the same calls in some order.
* ``track()``: each block is its own object; blocks on different threads may
  overlap and use different dtypes / peaks at once (the resolution cache
  never hands one thread another thread's peak). GPU blocks share one
  ``_C.MarkTimer`` per device, whose lock serializes marks and resolution; a
  thread waiting for the GPU holds that lock with the GIL released, and other
  threads queue on the lock, never on the GIL.
* ``_C.MarkTimer``: mark ids are unique and increasing across threads.
* ``FlopCounter``: counts the ops of the thread that entered it (libtorch's
  thread-local observer; module attribution likewise), so counters on
  different threads are independent and exact. Entering an active counter
  (from any thread) and exiting it from another thread raise
  ``RuntimeError`` with a message saying so, and leave the counter usable by
  its owner. At most 8 counters are active in the process at once; the 9th
  raises ``RuntimeError``.

Threads are switched every microsecond (``sys.setswitchinterval``) so the
interleavings are dense. The fake driver (tests/conftest.py) stands in for
the GPU.
"""
from __future__ import annotations

import sys
import threading
import time
from typing import Any, Callable, List

import pytest

from mfu_tracker import _C, Tracker, track
from mfu_tracker.timing import _clock

THREADS = 4


@pytest.fixture(autouse=True)
def dense_switching():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


def run_threads(targets: List[Callable[[], Any]]) -> List[Any]:
    """Start every target behind one barrier, join, re-raise the first error."""
    barrier = threading.Barrier(len(targets), timeout=60)
    results: List[Any] = [None] * len(targets)
    errors: List[BaseException] = []

    def wrap(i: int, fn: Callable[[], Any]) -> None:
        try:
            barrier.wait()
            results[i] = fn()
        except BaseException as exc:  # noqa: BLE001 -- reported below
            errors.append(exc)

    threads = [threading.Thread(target=wrap, args=(i, fn)) for i, fn in enumerate(targets)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
        assert not t.is_alive(), "a thread hung"
    if errors:
        raise errors[0]
    return results


# ---- Tracker ----------------------------------------------------------------------


@pytest.mark.parametrize("clock", ["cpu", "cuda"])
def test_one_tracker_stepped_from_several_threads_counts_every_step(clock, fake):
    steps_per_thread = 25_000
    if clock == "cuda":
        fake.set_work_ns(1000)  # the fake GPU spends 1 us per step
    tracker = Tracker(3.0, dtype="bf16", peak_tflops=1.0, device="cpu", clock=clock,
                      window=1 << 24, warmup=0)
    assert tracker.clock == clock
    # The first boundary, resolved before the threads start (see
    # test_soak.py::test_a_timer_far_ahead_of_the_gpu_keeps_exact_times).
    tracker.step(2)
    tracker.flush()
    done = threading.Event()

    def stepper() -> None:
        step = tracker.step
        for _ in range(steps_per_thread):
            step(2)

    def reader() -> int:
        reads = 0
        while not done.is_set():
            m = tracker.metrics()
            s = tracker.summary()
            tracker.counters()
            if clock == "cuda":
                tracker.flush()
            assert s["steps_dropped"] == 0
            if m:
                assert m["throughput/peak_tflops"] == 1.0
            reads += 1
        return reads

    def steppers_then_done() -> None:
        try:
            run_threads([stepper] * THREADS)
        finally:
            done.set()

    _, reads = run_threads([steppers_then_done, reader])
    assert reads > 0
    tracker.flush()
    s = tracker.summary()
    total = THREADS * steps_per_thread + 1
    assert s["boundaries"] == total                  # every step() one boundary
    assert s["steps"] == total - 1                   # the first only starts the clock
    assert s["steps_pending"] == 0 and s["steps_dropped"] == 0
    assert s["clock"] == clock
    # 2 tokens and 3 model FLOPs per closed step, exactly
    assert s["tokens_per_sec"] * s["window_s"] == pytest.approx(2 * (total - 1), rel=1e-9)
    assert s["achieved_flops_per_sec"] * s["window_s"] == pytest.approx(3 * (total - 1), rel=1e-9)
    tracker.close()
    assert tracker.closed


def test_trackers_on_several_threads_are_independent(fake):
    """One tracker per thread on the shared fake GPU: each counts its own steps."""
    fake.set_work_ns(1000)
    def one(i: int) -> Callable[[], dict]:
        def run() -> dict:
            tracker = Tracker(float(i + 1), dtype="bf16", peak_tflops=float(i + 1), clock="cuda",
                              window=1 << 24, warmup=0)
            tracker.step(i + 1)
            tracker.flush()
            for _ in range(4999 + i):
                tracker.step(i + 1)
            tracker.close()
            return tracker.summary()
        return run

    for i, s in enumerate(run_threads([one(i) for i in range(THREADS)])):
        assert s["boundaries"] == 5000 + i and s["steps"] == 4999 + i
        assert s["peak_flops_per_sec"] == (i + 1) * 1e12
        assert s["tokens_per_sec"] * s["window_s"] == pytest.approx((i + 1) * (4999 + i), rel=1e-9)


# ---- track() ----------------------------------------------------------------------


@pytest.mark.parametrize("clock", ["cpu", "cuda"])
def test_track_blocks_on_several_threads_keep_their_own_peak(clock, fake):
    """Threads with different dtypes and peaks at once: the single-entry
    resolution cache in track() never mixes them."""
    dtypes = ["bf16", "fp16", "fp32", "tf32"]
    blocks = 20_000 if clock == "cpu" else 5_000
    if clock == "cuda":
        fake.set_work_ns(1000)  # every block takes 1 us of GPU time

    def worker(i: int) -> Callable[[], int]:
        dtype, peak, flops = dtypes[i % 4], float(i + 1), float(10 * (i + 1))

        def run() -> int:
            seen = 0
            for n in range(blocks):
                with track(flops, dtype=dtype, peak_tflops=peak, device="cpu", clock=clock) as r:
                    pass
                assert r.peak_flops_per_sec == peak * 1e12, (i, n, r.peak_flops_per_sec)
                assert r.dtype == dtype and r.model_flops == flops and r.clock == clock
                if n % 7 == 0:  # read now (may wait for the fake GPU); others read later
                    assert r.elapsed_sec is not None and r.elapsed_sec >= 0
                seen += 1
            return seen
        return run

    assert run_threads([worker(i) for i in range(THREADS)]) == [blocks] * THREADS
    if clock == "cuda":
        timer = _clock.MARK_TIMERS[("cuda", None)]
        assert timer is not None and not timer.failed
        assert fake.calls("cuEventRecord") == 2 * THREADS * blocks


def test_track_cache_reset_while_other_threads_track():
    """track()'s one-entry cache is swapped and cleared under a critical
    section (csrc/python/py_track.c): a thread re-registering the resolver
    (which empties the cache) while others alternate between two peaks never
    gives a block another key's peak, and results read and re-set from other
    threads stay consistent."""
    done = threading.Event()
    shared = track(1.0, peak_tflops=1.0, device="cpu", clock="cpu")
    with shared:
        pass

    def tracker_thread(i: int) -> Callable[[], int]:
        def run() -> int:
            for n in range(10_000):
                peak = 1.0 if (n + i) % 2 else 2.0
                with track(peak, peak_tflops=peak, device="cpu", clock="cpu") as r:
                    pass
                assert r.peak_flops_per_sec == peak * 1e12 and r.model_flops == peak, (i, n)
                mfu = shared.mfu
                assert mfu is not None and shared.model_flops in (1.0, 3.0)
            return n + 1
        return run

    def resetter() -> int:
        resets = 0
        while not done.is_set():
            _C.set_track_resolver(_clock.resolve_track)
            shared.set_work(3.0 if resets % 2 else 1.0, None, None)
            resets += 1
        return resets

    def trackers_then_done() -> List[int]:
        try:
            return run_threads([tracker_thread(i) for i in range(THREADS - 1)])
        finally:
            done.set()

    per_thread, resets = run_threads([trackers_then_done, resetter])
    assert per_thread == [10_000] * (THREADS - 1) and resets > 0


def test_track_block_exception_on_one_thread_does_not_disturb_another():
    def raiser() -> int:
        caught = 0
        for _ in range(10_000):
            try:
                with track(1.0, peak_tflops=1.0, device="cpu", clock="cpu"):
                    raise KeyError("mine")
            except KeyError as exc:
                assert exc.args == ("mine",)
                caught += 1
        return caught

    def clean() -> int:
        ok = 0
        for _ in range(10_000):
            with track(2.0, peak_tflops=2.0, device="cpu", clock="cpu") as r:
                pass
            ok += r.elapsed_sec is not None and r.model_flops == 2.0
        return ok

    assert run_threads([raiser, clean, raiser, clean]) == [10_000] * 4


# ---- the shared MarkTimer --------------------------------------------------------------


@pytest.mark.parametrize("clock", ["cpu", "cuda"])
def test_shared_mark_timer_ids_are_unique_across_threads(clock, fake):
    if clock == "cuda":
        fake.set_work_ns(500)
    timer = _C.MarkTimer(clock, history=1 << 20)  # every mark stays readable
    marks_per_thread = 20_000
    done = threading.Event()

    def marker() -> List[int]:
        ids = []
        for n in range(marks_per_thread):
            a = timer.mark()
            b = timer.mark()
            ids += (a, b)
            if n % 50 == 0:  # a wait (GIL released, timer lock held) among other threads' marks
                elapsed = timer.elapsed_s(a, b)
                assert elapsed is not None and elapsed >= 0
        return ids

    def flusher() -> int:
        flushes = 0
        while not done.is_set():
            timer.flush()
            timer.poll()
            timer.counters()
            flushes += 1
        return flushes

    def markers_then_done() -> List[List[int]]:
        try:
            return run_threads([marker] * THREADS)
        finally:
            done.set()

    per_thread, flushes = run_threads([markers_then_done, flusher])
    assert flushes > 0
    everything = sorted(i for ids in per_thread for i in ids)
    assert everything == list(range(2 * THREADS * marks_per_thread))  # unique, none skipped
    for ids in per_thread:
        assert ids == sorted(ids)  # increasing within a thread
    assert not timer.failed


# ---- FlopCounter -------------------------------------------------------------------------

torch = pytest.importorskip("torch")
from mfu_tracker import FlopCounter  # noqa: E402  (needs torch at use)


def _mm_flops(m: int, k: int, n: int) -> int:
    return 2 * m * k * n


def test_counters_on_several_threads_count_only_their_own_ops():
    """Thread i multiplies [i+1, 16] x [16, 8] matrices 300 times under its own
    counter, all at once: each counter sees exactly its thread's FLOPs."""
    calls = 300

    def worker(i: int) -> Callable[[], tuple]:
        a = torch.randn(i + 1, 16)
        b = torch.randn(16, 8)
        model = torch.nn.Linear(16, 8, bias=False)

        def run() -> tuple:
            with FlopCounter(modules=True) as fc:
                for _ in range(calls):
                    torch.mm(a, b)
                with torch.no_grad():
                    model(a)
            return fc.executed_flops, fc.model_flops, fc.by_module
        return run

    results = run_threads([worker(i) for i in range(THREADS)])
    for i, (executed, model, by_module) in enumerate(results):
        expected = (calls + 1) * _mm_flops(i + 1, 16, 8)  # 2 * (i+1) * 16 * 8 per call
        assert executed == expected, (i, executed, expected)
        assert model == expected  # no grad anywhere: model = forward
        assert list(by_module) == ["Linear"]
        assert by_module["Linear"].forward_flops == _mm_flops(i + 1, 16, 8)


def test_a_counter_does_not_count_another_threads_ops():
    a, b = torch.randn(4, 32), torch.randn(32, 32)
    started, stop = threading.Event(), threading.Event()

    def noise() -> int:
        n = 0
        started.set()
        while not stop.is_set() or n < 1000:
            torch.mm(a, b)
            n += 1
        return n

    def counted() -> int:
        started.wait()
        with FlopCounter() as fc:
            for _ in range(500):
                torch.mm(b, b)
        stop.set()
        return fc.executed_flops

    noise_calls, executed = run_threads([noise, counted])
    assert noise_calls >= 1000
    assert executed == 500 * _mm_flops(32, 32, 32)  # 500 * 2 * 32^3


def test_entering_or_exiting_a_counter_on_another_thread_raises_and_leaves_it_usable():
    fc = FlopCounter()
    a = torch.randn(8, 8)
    fc.__enter__()
    try:
        torch.mm(a, a)
        errors: List[str] = []

        def intruder() -> None:
            with pytest.raises(RuntimeError, match="already active") as enter_error:
                fc.__enter__()
            with pytest.raises(RuntimeError, match="thread that entered it") as exit_error:
                fc.__exit__(None, None, None)
            errors.extend([str(enter_error.value), str(exit_error.value)])
            torch.mm(a, a)  # not counted: another thread

        run_threads([intruder])
        assert len(errors) == 2
        torch.mm(a, a)
    finally:
        fc.__exit__(None, None, None)
    assert fc.executed_flops == 2 * _mm_flops(8, 8, 8)
    with fc:  # re-enterable by anyone once idle; counts add up
        torch.mm(a, a)
    assert fc.executed_flops == 3 * _mm_flops(8, 8, 8)


def test_at_most_eight_counters_are_active_in_the_process():
    held = threading.Event()
    release = threading.Event()
    counters = [FlopCounter(modules=False) for _ in range(8)]

    def holder(c: FlopCounter) -> Callable[[], None]:
        def run() -> None:
            with c:
                held.wait()
                release.wait(timeout=60)
        return run

    threads = [threading.Thread(target=holder(c)) for c in counters]
    for t in threads:
        t.start()
    try:
        deadline = time.monotonic() + 120     # a slot held elsewhere: fail, never hang
        while not all(c._handle is not None for c in counters):
            assert time.monotonic() < deadline and all(t.is_alive() for t in threads), \
                "a counter could not start: a slot is held by a counter left active"
            threading.Event().wait(0.001)
        held.set()
        with pytest.raises(RuntimeError, match="too many FLOP counters"):
            with FlopCounter():
                pass
    finally:
        held.set()
        release.set()
        for t in threads:
            t.join(timeout=60)
    with FlopCounter() as fc:  # every slot is free again
        torch.mm(torch.ones(2, 2), torch.ones(2, 2))
    assert fc.executed_flops == _mm_flops(2, 2, 2)


def test_racing_to_enter_one_counter_never_leaks_a_slot(monkeypatch):
    """Two threads enter the same idle counter at once, many times: one wins
    each round, the other gets RuntimeError; no observer slot is lost (8
    counters can still be active afterwards). The backend lookup sleeps, so
    a check-then-start __enter__ lets both threads through every round."""
    from mfu_tracker.flops.counter import _counter as counter_module

    real_get_backend = counter_module.get_backend

    def slow_get_backend() -> Any:
        time.sleep(0.001)  # a thread switch here, inside __enter__
        return real_get_backend()

    monkeypatch.setattr(counter_module, "get_backend", slow_get_backend)
    rounds = 50
    fc = FlopCounter(modules=False)
    barrier = threading.Barrier(2, timeout=60)  # a failure in one breaks it for the other
    wins = [0, 0]
    losses = [0, 0]

    def contender(i: int) -> Callable[[], None]:
        def run() -> None:
            for _ in range(rounds):
                barrier.wait()
                try:
                    fc.__enter__()
                except RuntimeError as exc:
                    assert "already active" in str(exc)
                    losses[i] += 1
                    barrier.wait()
                else:
                    wins[i] += 1
                    barrier.wait()
                    fc.__exit__(None, None, None)
                barrier.wait()
        return run

    run_threads([contender(0), contender(1)])
    assert sum(wins) + sum(losses) == 2 * rounds
    assert sum(wins) == rounds, (wins, losses)  # exactly one winner per round
    stack = [FlopCounter(modules=False) for _ in range(8)]
    for c in stack:
        c.__enter__()
    for c in reversed(stack):
        c.__exit__(None, None, None)
