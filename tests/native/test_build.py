"""The first-use build of mfu_tracker._torch (mfu_tracker/_native/_build.py) and
`mfu-tracker build-ext`.

Each test runs real processes on a copy of the package without ``_torch``
(the observer's sources come from the checkout's csrc/, as from a wheel's
mfu_tracker/_csrc), with a cache in tmp_path. The compiler is a stand-in
script (``fake-c++``) that logs every call and, when it "links", copies the
observer built in place by setup.py: these tests are about the locking,
caching and failure handling, not about compiling (the real compile runs in
`make install-check`, tests/install/). A stand-in is the only way to make a
compiler fail on demand or to slow it down so two builders overlap.
"""
from __future__ import annotations

import json
import re
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mfu_tracker._native import _build

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "mfu_tracker"
BUILT = sorted(PKG.glob("_torch.*.so"))
CPP_SOURCES = sorted((ROOT / "csrc" / "torch").glob("*.cpp"))
# the first-use build compiles the sources in units (one compiler call each)
UNITS = len(_build.compile_units(CPP_SOURCES))

pytestmark = pytest.mark.skipif(not BUILT, reason="needs mfu_tracker._torch built in place")

FAKE_CXX = r'''#!%(python)s
import os, shutil, sys, time
args = sys.argv[1:]
if args == ["--version"]:
    print("fake-c++ 1.0"); sys.exit(0)
with open(os.environ["FAKE_CXX_LOG"], "a") as log:
    log.write(("link" if "-shared" in args else "compile") + " %%d\n" %% os.getpid())
if os.environ.get("FAKE_CXX_MODE") == "fail":
    print("In file included from observer.cpp:3:", file=sys.stderr)
    print("mfu_torch.h:63:10: fatal error: ATen/core/ivalue.h: No such file or directory",
          file=sys.stderr)
    sys.exit(1)
time.sleep(float(os.environ.get("FAKE_CXX_SLEEP", "0")))
out = args[args.index("-o") + 1]
if "-shared" in args:
    shutil.copyfile(os.environ["FAKE_CXX_SO"], out)
else:
    open(out, "w").close()
'''

# One counted matmul: [4, 8] @ [8, 3] = 2 * 4 * 8 * 3 = 192 FLOPs.
COUNT = r'''
import json, sys, warnings
# The shared venv's editable install maps mfu_tracker.* to its checkout:
# drop that finder so the copy under test (without _torch) is imported.
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in type(f).__module__
                    and "editable" not in getattr(f, "__module__", "")]
import torch
if len(sys.argv) > 1 and sys.argv[1]:
    torch.__version__ = sys.argv[1]   # "another torch is installed"
if len(sys.argv) > 2:
    import sysconfig
    _paths = sysconfig.get_paths
    sysconfig.get_paths = lambda *a, **k: {**_paths(*a, **k), "include": sys.argv[2]}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    from mfu_tracker.counter import FlopCounter, counter_backend
    with FlopCounter() as fc:
        torch.randn(4, 8) @ torch.randn(8, 3)
module = sys.modules.get("mfu_tracker._torch")
print(json.dumps({"backend": counter_backend(), "flops": fc.executed_flops,
                  "module": getattr(module, "__file__", None),
                  "warnings": [str(w.message) for w in caught
                               if issubclass(w.category, RuntimeWarning)]}))
'''

CLI = r'''
import sys
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in type(f).__module__
                    and "editable" not in getattr(f, "__module__", "")]
from mfu_tracker.cli import main
sys.exit(main(sys.argv[1:]))
'''


class Sandbox:
    """The package without _torch, a cache, a stand-in compiler and its log."""

    def __init__(self, tmp: Path) -> None:
        self.tree = tmp / "tree"
        shutil.copytree(PKG, self.tree / "mfu_tracker",
                        ignore=shutil.ignore_patterns("_torch.*", "__pycache__"))
        (self.tree / "csrc").symlink_to(ROOT / "csrc")
        self.cache = tmp / "cache"
        self.log = tmp / "cxx.log"
        self.cxx = tmp / "fake-c++"
        self.cxx.write_text(FAKE_CXX % {"python": sys.executable})
        self.cxx.chmod(0o755)
        (self.tree / "count.py").write_text(COUNT)
        (self.tree / "cli.py").write_text(CLI)
        self.env = dict(os.environ, PYTHONPATH=str(self.tree), MFU_TRACKER_CACHE_DIR=str(self.cache),
                        CXX=str(self.cxx), FAKE_CXX_LOG=str(self.log), FAKE_CXX_SO=str(BUILT[0]))
        self.env.pop("MFU_TRACKER_DISABLE_TORCH_EXT", None)

    def popen(self, script: str, *args: str, **env: str) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, str(self.tree / script), *args],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**self.env, **env}, cwd=self.tree)

    def count(self, *args: str, **env: str) -> tuple[dict, str]:
        out, err = self.popen("count.py", *args, **env).communicate(timeout=600)
        return json.loads(out.strip().splitlines()[-1]), err

    def cli(self, *args: str, **env: str) -> tuple[int, str, str]:
        proc = self.popen("cli.py", *args, **env)
        out, err = proc.communicate(timeout=600)
        return proc.returncode, out, err

    def calls(self) -> list[str]:
        return self.log.read_text().split()[0::2] if self.log.exists() else []

    def leftovers(self) -> list[Path]:
        """Temporary build directories or partial files left in the cache."""
        return [p for p in self.cache.rglob("*") if p.name.startswith(".tmp-") or
                p.suffix.lstrip(".").isdigit()]


@pytest.fixture
def box(tmp_path: Path) -> Sandbox:
    return Sandbox(tmp_path)


def test_two_processes_build_once_and_both_load(box):
    """Two real processes start counting at once (torchrun on one node):
    one compiles, the other waits on the lock and loads the same build."""
    procs = [box.popen("count.py", FAKE_CXX_SLEEP="1") for _ in range(2)]
    results = [p.communicate(timeout=600) for p in procs]
    outs = [json.loads(out.strip().splitlines()[-1]) for out, _ in results]
    for out in outs:
        assert out["backend"] == "torch-ext"
        assert out["flops"] == 192  # 2 * 4 * 8 * 3
        assert out["warnings"] == []
        assert out["module"].startswith(str(box.cache))
    assert outs[0]["module"] == outs[1]["module"]
    # one build: each unit compiled once, one link
    assert box.calls() == ["compile"] * UNITS + ["link"]
    assert sum("building the C++ FLOP counter" in err for _, err in results) == 1
    assert box.leftovers() == []
    # the build holds only the module (objects were compiled beside it, then removed)
    assert sorted(p.name for p in Path(outs[0]["module"]).parent.iterdir()) == \
        [Path(outs[0]["module"]).name]
    # a later process loads it without compiling or printing
    out, err = box.count()
    assert out["backend"] == "torch-ext" and out["module"] == outs[0]["module"]
    assert len(box.calls()) == UNITS + 1
    assert "building" not in err


def test_failed_build_one_warning_with_the_first_error_line(box):
    out, err = box.count(FAKE_CXX_MODE="fail")
    assert out["backend"] == "dispatch"
    assert out["flops"] == 192  # the fallback counts the same
    [warning] = out["warnings"]
    assert "TorchDispatchMode fallback" in warning
    assert "fatal error: ATen/core/ivalue.h: No such file or directory" in warning
    assert "In file included" not in warning  # the first *error* line, not the first line
    assert "mfu-tracker build-ext" in warning
    assert box.leftovers() == []
    assert not list(box.cache.rglob("_torch*"))  # nothing half-built in the cache
    [marker] = box.cache.rglob("*.failed")
    assert "fatal error" in marker.read_text()
    # the next rank does not fail the same build again: it reads the marker
    calls = len(box.calls())
    out, _ = box.count(FAKE_CXX_MODE="fail")
    assert out["backend"] == "dispatch" and len(box.calls()) == calls
    [warning] = out["warnings"]
    assert "fatal error: ATen/core/ivalue.h" in warning and str(marker) in warning
    # `mfu-tracker build-ext` always retries, and a good build clears the marker
    rc, _, err = box.cli("build-ext", FAKE_CXX_MODE="fail")
    assert rc == 1 and "fatal error: ATen/core/ivalue.h" in err and len(box.calls()) > calls
    rc, out_text, _ = box.cli("build-ext")
    assert rc == 0 and not marker.exists()
    out, _ = box.count()
    assert out["backend"] == "torch-ext" and out["flops"] == 192


def test_no_compiler_one_warning(box):
    out, _ = box.count(CXX=str(box.cxx.parent / "no-such-c++"))
    assert out["backend"] == "dispatch"
    [warning] = out["warnings"]
    assert "TorchDispatchMode fallback" in warning
    assert "no C++ compiler" in warning and "CXX" in warning
    assert not box.log.exists()


def test_missing_python_headers_one_warning(box):
    out, _ = box.count("", str(box.cache.parent / "no-include"))
    assert out["backend"] == "dispatch"
    [warning] = out["warnings"]
    assert "Python headers are missing" in warning and "python3-dev" in warning
    assert not box.log.exists() and box.leftovers() == []


def test_unwritable_cache_one_warning(box):
    box.cache.parent.mkdir(exist_ok=True)
    box.cache.write_text("a file where the cache directory should be")
    out, _ = box.count()
    assert out["backend"] == "dispatch"
    [warning] = out["warnings"]
    assert "not writable" in warning and "MFU_TRACKER_CACHE_DIR" in warning
    assert box.cache.read_text().startswith("a file")


def test_build_for_another_torch_is_never_loaded(box):
    """The cache key holds torch's version; and the version check of the
    loaded module still applies (the stand-in always links a 2.13 build)."""
    first, _ = box.count()
    assert first["backend"] == "torch-ext"
    out, _ = box.count("2.99.0")
    assert out["backend"] == "dispatch"
    assert out["module"] != first["module"]  # another cache entry, not the 2.13 one
    [warning] = out["warnings"]
    assert "but torch 2.99.0 is installed" in warning
    assert len(box.calls()) == 2 * (UNITS + 1)


def test_build_ext_ahead_of_time_then_a_node_without_compiler_loads_it(box):
    rc, out, err = box.cli("build-ext")
    assert rc == 0, err
    assert f"cache: {box.cache}" in out and "MFU_TRACKER_CACHE_DIR" in out
    assert f"C++ files in {UNITS} unit(s), {_build.BUILD_TIME}) into {box.cache}" in err
    assert re.search(r"built the C\+\+ FLOP counter in \d+ s \(\d+ s of CPU\)", err), err
    [built] = box.cache.rglob("_torch*.so")
    assert str(built) in out
    # a compute node: no compiler, same cache
    result, err = box.count(CXX=str(box.cxx.parent / "no-such-c++"))
    assert result["backend"] == "torch-ext" and result["module"] == str(built)
    assert result["warnings"] == [] and "building" not in err
    # cached: a second build-ext does not compile; --force does
    calls = len(box.calls())
    assert box.cli("build-ext")[0] == 0 and len(box.calls()) == calls
    assert box.cli("build-ext", "--force")[0] == 0 and len(box.calls()) == 2 * calls
    assert box.leftovers() == []
    # a build still in progress on another node of a shared cache (its temporary
    # directory, here holding a whole module) is never loaded by a node without one
    [built] = box.cache.rglob("_torch*.so")
    built.parent.rename(built.parent.with_name(".tmp-in-progress"))
    result, _ = box.count(CXX=str(box.cxx.parent / "no-such-c++"))
    assert result["backend"] == "dispatch"
    [warning] = result["warnings"]
    assert "no C++ compiler" in warning


def test_no_build_when_disabled(box):
    out, _ = box.count(MFU_TRACKER_DISABLE_TORCH_EXT="1")
    assert out["backend"] == "dispatch" and not box.log.exists()
    assert not box.cache.exists()


# ---- units and progress ----------------------------------------------------------------------

@pytest.mark.parametrize("cpus", [1, 2, 3, 16])
def test_the_sources_compile_in_a_few_balanced_units(cpus):
    units = _build.compile_units(CPP_SOURCES + sorted((ROOT / "csrc" / "torch").glob("*.h")), cpus)
    assert len(units) == min(len(CPP_SOURCES), cpus, _build.MAX_UNITS)
    assert sorted(p for unit in units for p in unit) == CPP_SOURCES     # each .cpp once, no .h
    assert all(unit == sorted(unit) for unit in units)                  # in source order
    sizes = [sum(p.stat().st_size for p in unit) for unit in units]
    largest = max(p.stat().st_size for p in CPP_SOURCES)
    assert max(sizes) - min(sizes) <= largest                           # greedy: within one file


@pytest.mark.skipif(shutil.which(os.environ.get("CXX") or "c++") is None, reason="no C++ compiler")
def test_all_the_sources_compile_as_one_unit():
    """Any grouping of the sources is a subset of this one, in the same order:
    if one unit of all of them compiles (no name defined twice across files),
    every unit the first-use build makes does."""
    import tempfile

    torch = pytest.importorskip("torch")
    from mfu_tracker._version import __version__

    plan = _build._Plan(__version__)
    with tempfile.TemporaryDirectory() as tmp:
        compiles, _ = plan._commands(Path(tmp), Path(tmp) / "x.so", [CPP_SOURCES])
        (cmd,) = compiles
        assert torch.__version__ and Path(cmd[cmd.index("-c") + 1]).read_text().count("#include") \
            == len(CPP_SOURCES)
        done = subprocess.run(cmd[:cmd.index("-c")] + ["-fsyntax-only", cmd[cmd.index("-c") + 1]],
                              capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]


def test_a_long_build_says_how_long_so_far_and_what_runs(monkeypatch, capsys):
    import time

    monkeypatch.setattr(_build, "PROGRESS_FIRST_S", 0.05)
    monkeypatch.setattr(_build, "PROGRESS_EVERY_S", 0.05)
    with _build._Progress(quiet=False) as progress:
        progress.doing = "compiling 2 unit(s) in parallel"
        time.sleep(0.2)
        subprocess.run([sys.executable, "-c", "sum(range(3_000_000))"], check=True)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == ("mfu_tracker: still building the C++ FLOP counter: 0 s so far "
                        "(compiling 2 unit(s) in parallel)")
    assert len(lines) >= 3
    assert re.fullmatch(r"mfu_tracker: built the C\+\+ FLOP counter in \d+ s \(\d+ s of CPU\)",
                        lines[-1]), lines[-1]
    with _build._Progress(quiet=True):
        time.sleep(0.2)
    assert capsys.readouterr().err == ""
