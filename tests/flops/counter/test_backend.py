"""The borrowed dispatch keys (docs/dispatch_keys.md), driven into every
situation the decision names: another library registers a fallback on the
counting key first, registers an ``aten::mm`` kernel on it after a count, or
a torch without the key (simulated: torch's own parser says it has none) --
each time the count is right (2 * 8 * 8 * 8 = 1024 for an 8 x 8 x 8 mm),
with one warning naming the reason; the same for the communication key
(a gloo world of one: 256 floats all-reduced = 1024 bytes). The key is on a
thread only while a counter that counted there lives. Each situation
changes the process's dispatcher for good, so each runs in a subprocess.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from mfu_tracker.counter import FlopCounter, counter_backend  # noqa: E402

TESTS = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(counter_backend() != "torch-ext",
                                reason="the C++ observer's keys (the fallback is forced)")

# Counts an 8 x 8 x 8 mm in a fresh process after `setup` ran, with one
# counter over three blocks: `after` runs between the first two, `during`
# inside the second; the figures after each block, and how often the foreign
# kernel ran for an mm outside any block while the counter still lives.
_SCRIPT = r"""
import json, warnings, sys
import torch
warnings.simplefilter("always")
calls = []
key = "TESTING_ONLY_GenericMode"

def foreign_mm(a, b):   # another library's kernel on the key: counts its calls, runs on
    calls.append(1)
    skip = torch._C.DispatchKeySet(torch._C._parse_dispatch_key(key))
    with torch._C._ExcludeDispatchKeyGuard(skip):
        return torch.mm(a, b)

def register_foreign():
    global lib
    lib = torch.library.Library('aten', 'IMPL', key)
    lib.impl('mm', foreign_mm)

%(setup)s
from mfu_tracker.counter import FlopCounter, counter_backend
a = torch.randn(8, 8)
out = {}
with warnings.catch_warnings(record=True) as caught:
    fc = FlopCounter(modules=False)
    with fc:
        torch.mm(a, a)
    out["first"] = [fc.executed_flops, counter_backend()]
    %(after)s
    with fc:
        %(during)s
        torch.mm(a, a)
    out["second"] = [fc.executed_flops, counter_backend(), fc.errors]
    with fc:
        torch.mm(a, a)
    out["third"] = [fc.executed_flops, counter_backend()]
    before = len(calls)
    torch.mm(a, a)                  # outside any block: nothing of the key runs
    out["outside_calls"] = len(calls) - before
    del fc
    before = len(calls)
    torch.mm(a, a)                  # and none alive
    out["outside_calls"] += len(calls) - before
out["warnings"] = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
print(json.dumps(out))
"""


def _run(setup: str = "", after: str = "pass", during: str = "pass",
         env: dict | None = None) -> dict:
    code = _SCRIPT % {"setup": setup, "after": after, "during": during}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600, env=dict(os.environ, **(env or {})))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "frame #" not in proc.stderr  # no C++ backtrace reaches the user's log
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_own_keys_count_and_warn_nothing():
    out = _run()
    # 2 * 8 * 8 * 8 = 1,024 per mm
    assert out["first"] == [1024, "torch-ext"] and out["second"] == [2048, "torch-ext", 0]
    assert out["third"] == [3072, "torch-ext"]
    assert out["warnings"] == [] and out["outside_calls"] == 0


def test_a_fallback_registered_first_falls_back_with_one_warning():
    setup = ("lib = torch.library.Library('_', 'IMPL', key)\n"
             "lib.fallback(torch.library.fallthrough_kernel)")
    out = _run(setup)
    assert out["first"] == [1024, "dispatch"] and out["third"] == [3072, "dispatch"]
    [warning] = out["warnings"]
    assert "TorchDispatchMode fallback" in warning
    assert "another library registered a fallback on the dispatch key " \
           "TESTING_ONLY_GenericMode first" in warning


def test_an_mm_kernel_registered_before_the_first_count_falls_back_with_one_warning():
    """Kernels of another library already on the key when the observer
    loads: the key is someone else's; ours are never registered over them."""
    out = _run(setup="register_foreign()")
    assert out["first"] == [1024, "dispatch"] and out["third"] == [3072, "dispatch"]
    [warning] = out["warnings"]
    assert "another library registered kernels on the dispatch key " \
           "TESTING_ONLY_GenericMode (aten::mm)" in warning


def test_an_mm_kernel_registered_after_a_count_falls_back_with_one_warning():
    """torch lets the newer kernel win with only a printed warning; the next
    block's start finds it (its registration is not ours), counts on the
    fallback -- the same counter keeps its first block --, and the key
    leaves the thread: the foreign kernel no longer runs for an mm outside
    a block, though the counter lives."""
    out = _run(after="register_foreign()")
    assert out["first"] == [1024, "torch-ext"]
    assert out["second"] == [2048, "dispatch", 0]  # not the silent 0 of the borrowed key
    assert out["third"] == [3072, "dispatch"]
    [warning] = out["warnings"]
    assert "another library registered a kernel on the dispatch key " \
           "TESTING_ONLY_GenericMode for aten::mm" in warning
    assert out["outside_calls"] == 0


def test_an_mm_kernel_registered_during_a_block_is_an_error_not_a_silent_zero():
    """Registered inside a block, after its start: the block's mm never
    reached the counter. Its end finds the kernel: one call that could not
    be counted (the block's warning says so), then the fallback."""
    out = _run(during="register_foreign()")
    assert out["second"] == [1024, "dispatch", 1]
    assert out["third"] == [2048, "dispatch"]
    assert len(out["warnings"]) == 2
    assert any("could not be counted" in w and "while counting" in w for w in out["warnings"])
    assert any("TorchDispatchMode fallback" in w for w in out["warnings"])


@pytest.mark.parametrize("answer, reason", [
    ("None if name == key else real(name)", "has no dispatch key TESTING_ONLY_GenericMode"),
    ("real('PythonDispatcher') if name == key else real(name)", "not at"),
    ("real('PythonDispatcher') if name == 'AutogradOther' else real(name)",
     "is not above AutogradOther"),
])
def test_a_torch_without_the_key_falls_back_with_one_warning(answer, reason):
    """Simulated: torch's own key parser -- what the loader asks -- says the
    key does not exist (a torch that removed it), sits at another value
    (moved), or below autograd (moved in the order)."""
    setup = ("real = torch._C._parse_dispatch_key\n"
             f"torch._C._parse_dispatch_key = lambda name: {answer}")
    out = _run(setup)
    assert out["first"] == [1024, "dispatch"] and out["third"] == [3072, "dispatch"]
    [warning] = out["warnings"]
    assert "TorchDispatchMode fallback" in warning and reason in warning


def _included(name: str) -> bool:
    return name in repr(torch._C._dispatch_tls_local_include_set())


def test_the_key_is_on_only_while_a_counter_lives():
    """Off on a thread that never counted; on from its first count while the
    counter lives (between blocks too: torch.compile's guards hash the
    included keys, tests/flops/counter/test_compiled.py); off once it is garbage
    collected."""
    seen: dict[str, bool] = {}

    def fresh_thread() -> None:
        a = torch.randn(4, 4)
        seen["before"] = _included("TESTING_ONLY_GenericMode")
        fc = FlopCounter(modules=False)
        with fc:
            torch.mm(a, a)
        seen["between"] = _included("TESTING_ONLY_GenericMode")
        other = FlopCounter(modules=False)
        with other:
            pass
        del fc
        seen["one left"] = _included("TESTING_ONLY_GenericMode")
        del other
        seen["none left"] = _included("TESTING_ONLY_GenericMode")

    worker = threading.Thread(target=fresh_thread)
    worker.start()
    worker.join()
    assert seen == {"before": False, "between": True, "one left": True, "none left": False}


_COMM = r"""
import json, warnings
import torch, torch.distributed as dist
warnings.simplefilter("always")
%(setup)s
from mfu_tracker import user_gpu_spec
from mfu_tracker.step import Tracker
dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
spec = user_gpu_spec(1000.0, name="fake GPU")
with warnings.catch_warnings(record=True) as caught:
    first = Tracker(1e9, spec=spec, warmup=0)   # the observer loaded, its kernels registered
    first.close()
    %(between)s
    t = Tracker(1e9, spec=spec, warmup=0)
    t.step()
    dist.all_reduce(torch.ones(256))               # 256 * 4 = 1024 bytes
    dist.broadcast(torch.ones(8), src=0)            # 8 * 4 = 32 bytes
    t.step()
    summary = t.summary()
    t.close()
    included = "TESTING_ONLY_GenericWrapper" in repr(torch._C._dispatch_tls_local_include_set())
    mode = torch.utils._python_dispatch._get_current_dispatch_mode()
out = {"bytes": summary.get("comm_bytes"), "included_after_close": included,
       "mode_after_close": mode is not None,
       "warnings": [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]}
dist.destroy_process_group()
print(json.dumps(out))
"""


def _run_comm(setup: str = "", between: str = "pass") -> dict:
    if not torch.distributed.is_available() or not torch.distributed.is_gloo_available():
        pytest.skip("no torch.distributed / gloo")
    code = _COMM % {"setup": setup, "between": between}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "frame #" not in proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_comm_on_its_own_key_and_off_after_the_last_tracker():
    out = _run_comm()
    assert out["bytes"] == {"all_reduce": 1024.0, "broadcast": 32.0}
    assert out["warnings"] == []
    assert not out["included_after_close"] and not out["mode_after_close"]


@pytest.mark.parametrize("setup, reason", [
    ("lib = torch.library.Library('_', 'IMPL', 'TESTING_ONLY_GenericWrapper')\n"
     "lib.fallback(torch.library.fallthrough_kernel)",
     "another library registered a fallback on the dispatch key TESTING_ONLY_GenericWrapper"),
    ("real = torch._C._parse_dispatch_key\n"
     "torch._C._parse_dispatch_key = lambda name: None if name == "
     "'TESTING_ONLY_GenericWrapper' else real(name)",
     "has no dispatch key TESTING_ONLY_GenericWrapper"),
])
def test_comm_key_taken_or_missing_observes_through_the_mode(setup, reason):
    out = _run_comm(setup)
    assert out["bytes"] == {"all_reduce": 1024.0, "broadcast": 32.0}
    [warning] = out["warnings"]
    assert "TorchDispatchMode fallback" in warning and reason in warning
    assert not out["included_after_close"] and not out["mode_after_close"]


def test_comm_kernel_registered_after_a_tracker_observes_through_the_mode():
    """Another library's kernel on the communication key for
    c10d::allreduce_ (a fallthrough: the collective would skip the
    observer), registered after a first tracker: the next tracker's start
    finds it and observes through the mode, one warning."""
    between = ("lib = torch.library.Library('c10d', 'IMPL', 'TESTING_ONLY_GenericWrapper')\n"
               "    lib.impl('allreduce_', torch.library.fallthrough_kernel)")
    out = _run_comm(between=between)
    assert out["bytes"] == {"all_reduce": 1024.0, "broadcast": 32.0}
    [warning] = out["warnings"]
    assert "TorchDispatchMode fallback" in warning
    assert "another library registered a kernel on the dispatch key " \
           "TESTING_ONLY_GenericWrapper for c10d::allreduce_" in warning
    assert not out["included_after_close"] and not out["mode_after_close"]

