"""track() on the GPU clock, against the fake driver (tests/conftest.py).

The fake's host clock stands still until a test moves it (``fake.advance``);
a record on a stream completes at max(previous record + work_ns, now + lag_ns).
So every GPU time below is known exactly from the knobs.
"""
from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time
import tracemalloc
import types
import warnings

import pytest

from mfu_tracker import _C, track, user_gpu_spec
from mfu_tracker.timing import _clock

from _bracket import Bracket

MS = 1_000_000  # ns
SPEC = user_gpu_spec(1000.0, name="fake GPU", memory_bandwidth_tbs=2.0)  # 1e15 FLOP/s, 2e12 B/s


def _shared_timer(kind: str = "cuda") -> _C.MarkTimer:
    timer = _clock.MARK_TIMERS[(kind, None)]
    assert timer is not None
    return timer


@pytest.mark.parametrize("clock, record", [("cuda", "cuEventRecord"), ("hip", "hipEventRecord")])
def test_block_time_is_the_fake_gpu_time(fake, clock, record):
    fake.set_work_ns(3 * MS)  # the GPU does 3 ms between two records
    with track(1.5e12, 3e9, num_tokens=6000, spec=SPEC, clock=clock, stream=0) as r:
        pass
    # start completes at 0 + 3 ms, end at 3 + 3 ms: 3 ms on the GPU, 0 on the host clock
    assert r.clock == clock
    assert fake.calls(record) == 2
    fake.advance(6 * MS)
    assert r.ready
    assert r.elapsed_sec == pytest.approx(0.003, abs=1e-12)
    assert r.mfu == pytest.approx(1.5e12 / 0.003 / 1e15, rel=1e-9)  # = 0.5
    assert r.mbu == pytest.approx(3e9 / 0.003 / 2e12, rel=1e-9)  # = 0.5
    assert r.tokens_per_sec == pytest.approx(6000 / 0.003, rel=1e-9)  # = 2e6
    assert fake.sync_calls() == 0


def test_ready_is_false_then_true_without_waiting(fake):
    fake.set_work_ns(2 * MS)
    fake.set_lag_ns(5 * MS)
    with track(1e12, spec=SPEC, clock="cuda", stream=0) as r:
        pass
    # start at max(0 + 2, 0 + 5) = 5 ms, end at max(5 + 2, 0 + 5) = 7 ms
    assert not r.ready
    fake.advance(6 * MS)
    assert not r.ready  # the end event is at 7 ms
    assert repr(r).endswith("pending)")
    fake.advance(1 * MS)
    assert r.ready
    assert fake.sync_calls() == 0
    assert r.elapsed_sec == pytest.approx(0.002, abs=1e-12)
    assert fake.sync_calls() == 0


def test_reading_early_waits_exactly_once(fake):
    fake.set_work_ns(2 * MS)
    fake.set_lag_ns(5 * MS)
    with track(1e12, spec=SPEC, clock="cuda", stream=0) as r:
        pass
    assert not r.ready
    assert fake.sync_calls() == 0
    assert r.elapsed_sec == pytest.approx(0.002, abs=1e-12)  # waits: host moves to 7 ms
    assert fake.calls("cuEventSynchronize") == 1
    assert fake.sync_calls() == 1
    assert fake.now_ns() == 7 * MS
    assert r.ready and r.mfu == pytest.approx(1e12 / 0.002 / 1e15, rel=1e-9)
    assert fake.sync_calls() == 1  # the value is cached: no second wait
    assert _shared_timer().counters()["waits"] == 1


def test_results_read_late_keep_their_value_through_pool_wraparound(fake):
    gc.collect()  # earlier tests' unreachable timers release their events first
    fake.set_work_ns(1 * MS)
    fake.set_lag_ns(0)
    with track(1e12, spec=SPEC, clock="cuda", stream=0) as first:
        pass
    fake.set_work_ns(2 * MS)
    kept = []
    # 3000 blocks = 6000 marks: far past the 16-event pool and the 1024-mark history.
    # The host keeps pace with the GPU, 40 marks behind it (so the pool grows once).
    for i in range(3000):
        with track(1e12, spec=SPEC, clock="cuda", stream=0) as r:
            pass
        if i % 500 == 0:
            kept.append(r)
        if i >= 20:
            fake.advance(4 * MS)
    counters = _shared_timer().counters()
    assert counters["marks"] == 6002
    assert counters["events"] <= 64 and counters["pool_full_waits"] == 0
    assert fake.live_events() <= 64 + 16
    # Read last: 6000 marks later, long out of the timer's history.
    assert first.elapsed_sec == pytest.approx(0.001, abs=1e-9)
    for r in kept:
        assert r.elapsed_sec == pytest.approx(0.002, abs=1e-9)
    assert fake.sync_calls() == 0


def test_unread_result_resolved_by_later_blocks_needs_no_query(fake):
    fake.set_work_ns(1 * MS)
    with track(1e12, spec=SPEC, clock="cuda", stream=0) as r:
        pass
    fake.advance(10 * MS)
    with track(1e12, spec=SPEC, clock="cuda", stream=0):  # its enter polls and sweeps
        pass
    queries = fake.calls("cuEventQuery")
    elapsed = fake.calls("cuEventElapsedTime")
    assert r.elapsed_sec == pytest.approx(0.001, abs=1e-12)
    assert fake.calls("cuEventQuery") == queries  # the value was cached at the sweep
    assert fake.calls("cuEventElapsedTime") == elapsed


def test_nested_blocks_on_two_streams_reach_the_driver(fake):
    fake.set_work_ns(1 * MS)
    with track(1e12, spec=SPEC, clock="cuda", stream=7) as outer:
        with track(1e12, spec=SPEC, clock="cuda", stream=9) as inner:
            pass
    fake.advance(100 * MS)
    # stream 7: outer start 1 ms, outer end 2 ms; stream 9: inner 1 ms -> 2 ms.
    # Were both on one stream, outer would span 1 ms -> 4 ms.
    assert outer.elapsed_sec == pytest.approx(0.001, abs=1e-12)
    assert inner.elapsed_sec == pytest.approx(0.001, abs=1e-12)


def test_stream_forms(fake):
    fake.set_work_ns(1 * MS)
    torch_like = types.SimpleNamespace(cuda_stream=11)  # what torch.cuda.Stream exposes
    for stream in (0, None, 11, torch_like, 2**64 - 1):
        with track(1e12, spec=SPEC, clock="cuda", stream=stream) as r:
            pass
        fake.advance(10 * MS)
        assert r.clock == "cuda" and r.elapsed_sec == pytest.approx(0.001, abs=1e-12)


@pytest.mark.parametrize("clock", ["cuda", "cpu", "auto"])
@pytest.mark.parametrize(
    "stream, exc",
    [("7", TypeError), (1.0, TypeError), (True, TypeError), (object(), TypeError),
     (-1, ValueError), (2**64, ValueError), (types.SimpleNamespace(cuda_stream="x"), TypeError)],
)
def test_bad_stream_is_a_clear_error_on_every_clock(fake, clock, stream, exc):
    with pytest.raises(exc, match="stream"):
        track(1e12, spec=SPEC, clock=clock, stream=stream)


def test_auto_on_a_cpu_build_uses_the_cpu_clock(fake):
    with track(1e12, peak_tflops=1.0, device="cpu") as r:
        time.sleep(0.01)
    assert r.clock == "cpu" and r.ready and r.elapsed_sec >= 0.01
    with track(1e12, spec=SPEC) as r:  # no device: torch has no GPU here
        pass
    assert r.clock == "cpu"
    assert fake.calls("cuEventRecord") == 0 and fake.calls("cuEventCreate") == 0


def test_exception_in_a_gpu_block_propagates_unchanged(fake):
    error = ValueError("from the step")
    with pytest.raises(ValueError) as caught:
        with track(1e12, spec=SPEC, clock="cuda", stream=0) as r:
            raise error
    assert caught.value is error
    fake.advance(10 * MS)
    assert r.ready and r.clock == "cuda"


def _runtime_warnings(caught):
    return [w for w in caught if issubclass(w.category, RuntimeWarning) and "clock" in str(w.message)]


@pytest.mark.parametrize("call, code, name", [
    ("cuEventRecord", 700, "CUDA_ERROR_ILLEGAL_ADDRESS"),
    ("cuEventQuery", 700, "CUDA_ERROR_ILLEGAL_ADDRESS"),
    ("cuEventElapsedTime", 1, "CUDA_ERROR_INVALID_VALUE"),
])
def test_driver_failure_warns_once_then_cpu_clock(fake, call, code, name):
    fake.set_work_ns(1 * MS)
    with Bracket() as pending_block:
        with track(1e12, spec=SPEC, clock="cuda", stream=0) as pending:  # GPU-timed, unresolved
            time.sleep(0.02)
    fake.fail_next(call, code)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = []
        for _ in range(3):
            with Bracket() as block:
                with track(1e12, spec=SPEC, clock="cuda", stream=0) as r:
                    time.sleep(0.01)
            results.append(r)
            fake.advance(10 * MS)
        values = [r.elapsed_sec for r in results]
        first = pending.elapsed_sec
    got = _runtime_warnings(caught)
    assert len(got) == 1, [str(w.message) for w in caught]
    assert call in str(got[0].message) and name in str(got[0].message)
    assert "CPU clock" in str(got[0].message)
    if call == "cuEventRecord":  # failed on the next mark: the pending block falls back too
        assert pending.clock == "cpu" and 0.02 <= first <= pending_block.s
    # Blocks after the failure are timed by the CPU clock (a real 10 ms sleep, within
    # the test's own bracket of the block).
    assert results[-1].clock == "cpu" and 0.01 <= values[-1] <= block.s
    assert _shared_timer().failed and call in _shared_timer().error


def test_no_cuda_context_warns_once_and_uses_the_cpu_clock(fake):
    fake.set_no_context(True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            with Bracket() as block:
                with track(1e12, spec=SPEC, clock="cuda", stream=0) as r:
                    time.sleep(0.005)
    assert len(_runtime_warnings(caught)) == 1
    assert "context" in str(_runtime_warnings(caught)[0].message)
    assert r.clock == "cpu" and 0.005 <= r.elapsed_sec <= block.s


ABSENT_SCRIPT = r"""
import json, time, warnings
warnings.simplefilter("always")
brackets = []   # each block's seconds on the test's own CLOCK_MONOTONIC readings
def bracketed(start_ns):
    brackets.append((time.monotonic_ns() - start_ns) * 1e-9 + 1e-9)
from mfu_tracker import track, user_gpu_spec
from mfu_tracker.step import Tracker
spec = user_gpu_spec(1000.0, name="x")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    def timed_blocks():
        out = []
        for _ in range(3):
            start = time.monotonic_ns()
            with track(1e12, spec=spec, clock=CLOCK) as r:
                time.sleep(0.01)
            bracketed(start)
            out.append(r.elapsed_sec)
        return out, r
    if FIRST == "track":
        blocks, r = timed_blocks()
        tr = Tracker(1e12, spec=spec, clock=CLOCK, warmup=0)
    else:
        tr = Tracker(1e12, spec=spec, clock=CLOCK, warmup=0)
        blocks, r = timed_blocks()
    start = time.monotonic_ns()
    for _ in range(3):
        tr.step(100)
        time.sleep(0.01)
    tr.step(100)
    bracketed(start)
    m = tr.metrics()
print(json.dumps({"warnings": [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)],
                  "block_clock": r.clock, "blocks": blocks, "tracker_clock": tr.clock,
                  "step_time_s": m.get("throughput/step_time_s"), "brackets": brackets}))
"""


@pytest.mark.parametrize("first", ["track", "tracker"])
@pytest.mark.parametrize("clock, variable", [("cuda", "MFU_TRACKER_CUDA_LIBRARY"),
                                             ("hip", "MFU_TRACKER_HIP_LIBRARY")])
def test_absent_library_warns_once_per_process(tmp_path, first, clock, variable):
    # The driver is loaded once per process: a fresh interpreter sees the bad path.
    env = dict(os.environ)
    env[variable] = str(tmp_path / "no-such-driver.so")
    script = f"FIRST = {first!r}\nCLOCK = {clock!r}\n" + ABSENT_SCRIPT
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                         check=True, timeout=120)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(result["warnings"]) == 1, result["warnings"]
    assert "no-such-driver.so" in result["warnings"][0] and "CPU clock" in result["warnings"][0]
    assert result["block_clock"] == "cpu" and result["tracker_clock"] == "cpu"
    # real 10 ms sleeps, each within the script's own bracket of its block (of the
    # three steps, for their mean)
    *blocks, steps = result["brackets"]
    assert all(0.01 <= b <= bracket for b, bracket in zip(result["blocks"], blocks))
    assert 0.01 <= result["step_time_s"] <= steps / 3


def test_mark_timer_api(fake):
    fake.set_work_ns(2 * MS)
    timer = _C.MarkTimer("cuda", events_initial=2, events_max=4, history=8)
    assert timer.clock == "cuda" and not timer.failed and timer.error is None
    a = timer.mark(0)
    b = timer.mark(0)
    assert (a, b) == (0, 1)
    assert not timer.ready(b)
    assert timer.elapsed_s(a, b, wait=False) is None
    fake.advance(4 * MS)
    assert timer.ready(b)
    assert timer.elapsed_s(a, b) == pytest.approx(0.002, abs=1e-12)
    assert timer.time_s(b, wait=False) == pytest.approx(0.002, abs=1e-12)
    c = timer.mark()
    timer.flush()
    assert timer.time_s(c) == pytest.approx(0.004, abs=1e-12)
    counters = timer.counters()
    assert counters["marks"] == 3 and counters["resolved"] == 3 and counters["waits"] == 1
    with pytest.raises(ValueError, match="never issued"):
        timer.time_s(99)
    with pytest.raises(ValueError, match="events_initial"):
        _C.MarkTimer("cpu", events_initial=1)
    with pytest.raises(ValueError, match="clock"):
        _C.MarkTimer("gpu")
    with pytest.raises(TypeError, match="clock"):
        _C.MarkTimer(1)
    with pytest.raises(TypeError, match="timer"):
        _C.new_track(1e12, None, None, None, None, None, 1, "bf16", None, object(), 0)


def test_gpu_blocks_do_not_grow_memory(fake):
    fake.set_work_ns(1 * MS)
    for _ in range(1000):
        with track(1e9, spec=SPEC, clock="cuda", stream=0) as r:
            pass
        fake.advance(2 * MS)
        r.mfu
    live = fake.live_events()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for _ in range(20000):
        with track(1e9, spec=SPEC, clock="cuda", stream=0) as r:
            pass
        fake.advance(2 * MS)
        r.mfu
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert after - before < 64 * 1024
    assert fake.live_events() == live  # events reused, none created
    assert fake.sync_calls() == 0


@pytest.mark.parametrize("argument", ["events_initial", "events_max", "history"])
@pytest.mark.parametrize("value", [-1, 2**32 + 16, 2**24 + 1])
def test_mark_timer_sizes_out_of_range_are_refused_naming_the_value(argument, value):
    # Regression: the sizes were parsed with "I", which wraps silently:
    # 2**32 + 16 became 16 (accepted) and -1 was reported as 4294967295.
    with pytest.raises(ValueError, match=rf"{argument}: .*got {value}$"):
        _C.MarkTimer("cpu", **{argument: value})
    # a value too large for any C integer is refused too (not truncated)
    with pytest.raises(OverflowError):
        _C.MarkTimer("cpu", **{argument: 2**64 + 16})


# ---- compute_mfu / compute_mbu (mfu_tracker/timing/_track.py), by hand -------------------

def test_compute_mfu_and_mbu_by_hand():
    from mfu_tracker.timing._track import compute_mbu, compute_mfu
    # 3e14 FLOPs in 2 s on 2 devices of 100 TFLOP/s: 3e14 / 2 / 2e14 = 0.75
    assert compute_mfu(3e14, 2.0, num_gpus=2, peak_tflops=100.0) == 0.75
    # never clamped: twice the peak reads 2.0
    assert compute_mfu(4e14, 2.0, peak_tflops=100.0) == 2.0
    spec = user_gpu_spec(100.0, memory_bandwidth_tbs=2.0)
    # 1e12 bytes in 1 s against 2 TB/s: 0.5
    assert compute_mbu(1e12, 1.0, spec=spec) == 0.5


def test_block_clock_and_track_resolution_are_named_records(fake):
    block = _clock.block_clock("cuda", None)
    assert isinstance(block, _clock.BlockClock)
    assert block.timer is _shared_timer("cuda") and block.index is None
    assert _clock.block_clock("cpu", None) == _clock.BlockClock(None, None, None)

    resolved = _clock.resolve_track("bf16", None, SPEC, None, "cuda")
    assert isinstance(resolved, _clock.TrackResolution)
    assert resolved.peak_flops_per_sec == 1e15 and resolved.peak_bytes_per_sec == 2e12
    assert resolved.timer is block.timer and resolved.spec is SPEC

    # C reads the record by field position: a resolver giving other peaks by
    # name moves MFU and MBU by exactly those peaks.
    other = resolved._replace(peak_flops_per_sec=4e15, peak_bytes_per_sec=8e12,
                              timer=None, current_stream=None)
    _C.set_track_resolver(lambda *key: other)
    try:
        with track(2e12, 6e9, peak_tflops=1.0, clock="cpu") as r:
            time.sleep(0.002)
    finally:
        _clock.reset_caches()
    assert r.clock == "cpu"
    assert r.mfu == pytest.approx(2e12 / r.elapsed_sec / 4e15, rel=1e-12)
    assert r.mbu == pytest.approx(6e9 / r.elapsed_sec / 8e12, rel=1e-12)
