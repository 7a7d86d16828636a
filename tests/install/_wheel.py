"""The wheel built from a copy of the checkout, shared by the install tests
(tests/install/test_wheel.py, test_readme_first_screen.py import the
``tree_wheel`` fixture from here): built once per session (a module-level
cache: each test module registers the fixture, the build runs once) with
``pip wheel --no-build-isolation`` from the checkout's tracked and new files
plus its in-place binaries and build directory (mtimes kept, so ``_C`` is
not compiled again). No network. Not named conftest.py: tests/conftest.py is
imported by that name."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

import pytest

import mfu_tracker

ROOT = Path(mfu_tracker.__file__).resolve().parent.parent


def _copy_checkout(dest: Path) -> None:
    # tracked files and new ones git does not ignore (what a commit of the tree would hold)
    tracked = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             cwd=ROOT, capture_output=True,
                             check=True).stdout.decode().split("\0")
    for rel in filter(None, tracked):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    for binary in (ROOT / "mfu_tracker").glob("_*.so"):
        shutil.copy2(binary, dest / "mfu_tracker" / binary.name)
    for lib in (ROOT / "build").glob("lib.*"):
        shutil.copytree(lib, dest / "build" / lib.name)


_BUILT: Optional[Path] = None


@pytest.fixture(scope="session")
def tree_wheel(tmp_path_factory) -> Path:
    global _BUILT
    if _BUILT is not None:
        return _BUILT
    if not list((ROOT / "mfu_tracker").glob("_torch*.so")):
        pytest.skip("the checkout has no in-place _torch build (run `make build`)")
    tree = tmp_path_factory.mktemp("checkout")
    _copy_checkout(tree)
    # a stale observer in the build directory too, as `make build` leaves it
    lib = next((tree / "build").glob("lib.*"), None) or tree / "build" / "lib.test"
    (lib / "mfu_tracker").mkdir(parents=True, exist_ok=True)
    stale = next((ROOT / "mfu_tracker").glob("_torch*.so"))
    shutil.copy2(stale, lib / "mfu_tracker" / stale.name)
    out = tmp_path_factory.mktemp("wheelhouse")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps",
                           "--no-index", "-q", "-w", str(out), str(tree)],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (wheel,) = out.glob("*.whl")
    _BUILT = wheel
    return wheel


