"""Session set-up: the fake GPU driver.

There is no GPU here or in CI. The GPU clock is tested against a fake driver
(tests/c/fake_driver/fake_cuda.c: a simulated GPU timeline that counts every
call), built here once with ``cc`` and named in MFU_TRACKER_CUDA_LIBRARY and
MFU_TRACKER_HIP_LIBRARY. The core loads a driver once per process, so these
are set when this file is imported -- before any test can load one.

The ``fake`` fixture gives ctypes access to the same library: dlopen of the
same path returns the handle the core already has, so the counters it reads
are the ones the core's calls moved.
"""
from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FAKE_SOURCE = ROOT / "tests" / "c" / "fake_driver" / "fake_cuda.c"
FAKE_LIBRARY = ROOT / "build" / "pytest" / "libfake_cuda.so"


def _build_fake_driver() -> Path:
    if FAKE_LIBRARY.exists() and FAKE_LIBRARY.stat().st_mtime >= FAKE_SOURCE.stat().st_mtime:
        return FAKE_LIBRARY
    FAKE_LIBRARY.parent.mkdir(parents=True, exist_ok=True)
    cc = os.environ.get("CC") or shutil.which("cc") or "gcc"
    partial = FAKE_LIBRARY.with_suffix(f".so.{os.getpid()}")
    subprocess.run([cc, "-std=c11", "-O1", "-fPIC", "-shared", "-o", str(partial), str(FAKE_SOURCE)],
                   check=True)
    partial.replace(FAKE_LIBRARY)  # atomic: parallel sessions never see half a file
    return FAKE_LIBRARY


FAKE_PATH = str(_build_fake_driver())
os.environ["MFU_TRACKER_CUDA_LIBRARY"] = FAKE_PATH
os.environ["MFU_TRACKER_HIP_LIBRARY"] = FAKE_PATH


class FakeDriver:
    """The fake driver's test knobs (see fake_cuda.c), through ctypes."""

    path = FAKE_PATH

    def __init__(self) -> None:
        lib = ctypes.CDLL(FAKE_PATH)
        lib.fake_call_count.argtypes = [ctypes.c_char_p]
        lib.fake_call_count.restype = ctypes.c_long
        lib.fake_sync_calls.restype = ctypes.c_long
        lib.fake_fail_next.argtypes = [ctypes.c_char_p, ctypes.c_int]
        lib.fake_fail_next.restype = ctypes.c_int
        lib.fake_advance.argtypes = [ctypes.c_uint64]
        lib.fake_now_ns.restype = ctypes.c_uint64
        lib.fake_set_gpu_lag_ns.argtypes = [ctypes.c_uint64]
        lib.fake_set_work_ns.argtypes = [ctypes.c_uint64]
        lib.fake_set_no_context.argtypes = [ctypes.c_int]
        lib.fake_live_events.restype = ctypes.c_long
        lib.fake_enqueue_ns.argtypes = [ctypes.c_uint64, ctypes.c_uint64]
        lib.fake_stream_wait_stream.argtypes = [ctypes.c_uint64, ctypes.c_uint64]
        self._lib = lib

    def reset(self) -> None:
        self._lib.fake_reset()

    def calls(self, name: str) -> int:
        count = self._lib.fake_call_count(name.encode())
        assert count >= 0, f"the fake driver does not export {name}"
        return count

    def sync_calls(self) -> int:
        """cuEvent/cuStream/cuCtx synchronize + the HIP ones."""
        return self._lib.fake_sync_calls()

    def fail_next(self, name: str, code: int) -> None:
        assert self._lib.fake_fail_next(name.encode(), code) == 0, name

    def advance(self, ns: int) -> None:
        self._lib.fake_advance(ns)

    def now_ns(self) -> int:
        return self._lib.fake_now_ns()

    def set_lag_ns(self, ns: int) -> None:
        self._lib.fake_set_gpu_lag_ns(ns)

    def set_work_ns(self, ns: int) -> None:
        self._lib.fake_set_work_ns(ns)

    def set_no_context(self, flag: bool) -> None:
        self._lib.fake_set_no_context(int(flag))

    def live_events(self) -> int:
        return self._lib.fake_live_events()

    def enqueue_ns(self, stream: int, ns: int) -> None:
        """A kernel of `ns` GPU nanoseconds on `stream` (fake_cuda.c)."""
        self._lib.fake_enqueue_ns(stream, ns)

    def stream_wait_stream(self, waiter: int, waited: int) -> None:
        """`waiter`'s next work waits for `waited`'s work so far."""
        self._lib.fake_stream_wait_stream(waiter, waited)


@pytest.fixture
def fake():
    """The fake driver, reset, with the shared track() timers forgotten (an
    old timer's events would not survive the reset of the fake's clock)."""
    from mfu_tracker.timing import _clock

    driver = FakeDriver()
    _clock.reset_caches()
    driver.reset()
    yield driver
    _clock.reset_caches()
    driver.reset()


@pytest.fixture(autouse=True)
def _fresh_process_state(monkeypatch):
    """Every test starts from the process state of a fresh import: an empty
    warn-once registry (peaks._table._warned: a test counting a "warned once" warning
    must not find it used up by an earlier test) and no cached peak / clock
    resolution (_clock.reset_caches: the track() and resolve_peak caches,
    the shared MarkTimers). Not resettable from Python: _C's "MFU > 1"
    warned-once flag (tests of that warning run in a subprocess)."""
    from mfu_tracker.peaks import _table
    from mfu_tracker.timing import _clock

    monkeypatch.setattr(_table, "_warned", set())
    _clock.reset_caches()
    yield
    _clock.reset_caches()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Every metrics log (``*.jsonl``) the session's tests wrote, read by the
    streamed readers the commands use and by the reading path they replaced
    (``_reader_check.py``): the same figures, or the session fails."""
    factory = getattr(session.config, "_tmp_path_factory", None)
    base = getattr(factory, "_basetemp", None)
    if base is None or not Path(base).is_dir():
        return
    from _reader_check import differences

    found, logs = [], sorted(Path(base).rglob("*.jsonl"))
    for path in logs:
        try:
            found += differences(str(path))
        except Exception as error:  # noqa: BLE001 -- the new readers crashed: say so
            found.append(f"{path}: the streamed readers raised {error!r}")
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and logs:
        reporter.write_sep("-", f"streamed readers vs the reading path before them: "
                                f"{len(logs)} log(s) written by this session's tests, "
                                f"{len(found)} difference(s)")
        for line in found:
            reporter.write_line(f"  {line}", red=True)
    if found:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture
def every_matmul_counts(monkeypatch):
    """The measured peak counts every timed matmul, whether or not its threads
    got their CPU (peaks._measure.CPU_SHARE_MIN = 0): for tests of what is
    done with a measured peak, which a busy machine must not turn into a
    refusal. The check itself is tested in test_measured_peak.py."""
    from mfu_tracker.peaks import _measure

    monkeypatch.setattr(_measure, "CPU_SHARE_MIN", 0.0)


@pytest.fixture(autouse=True, scope="module")
def _no_counter_left_active(request):
    """A FlopCounter a test module left active holds one of the process's
    eight counter slots for every test after it, which then fail far from
    the cause: the module that left one fails here, naming itself. The
    slots are read from the backend (_backends.active_counter_slots), so a
    counter no object refers to any more is found too; one still alive on
    this thread is stopped, so the modules after it run as usual."""
    yield
    from _backends import active_counter_slots

    if active_counter_slots() == 0:
        return
    import gc

    from mfu_tracker.flops.counter._counter import FlopCounter

    for obj in gc.get_objects():
        try:        # a weak proxy whose referent is gone raises on any look
            active = type(obj) is FlopCounter and obj._handle is not None
            if active:
                obj.stop(warn=False)
        except Exception:  # noqa: BLE001 -- ReferenceError, or entered on a thread now gone
            continue
    pytest.fail(f"{request.module.__name__} left a FlopCounter active (a counter slot held "
                f"after its tests; {active_counter_slots()} still held)", pytrace=False)
