"""A wheel built from a checkout that holds its own ``_torch`` build carries no
``_torch``, and it is the distribution the README installs.

After ``make`` the tree has ``mfu_tracker/_torch*.so``
(in place) and ``build/lib.*/mfu_tracker/_torch*.so`` (the build directory),
both compiled for the torch of the checkout's venv; a wheel built there (torch
importable, no build isolation) used to carry it. The test copies the
checkout -- its tracked files, the in-place binaries and the build directory,
mtimes kept so ``_C`` is not compiled again -- builds a wheel with ``pip wheel
--no-build-isolation`` and checks it with ``check_wheel.py``, the check
``make install-check`` runs on its isolated wheel too. No network. (The wheel:
the ``tree_wheel`` fixture, tests/install/_wheel.py.)
"""
from __future__ import annotations

import shutil
import sys
import zipfile
from pathlib import Path

import pytest

import mfu_tracker

HERE = Path(__file__).resolve().parent
ROOT = Path(mfu_tracker.__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))
import check_wheel  # noqa: E402
from _wheel import tree_wheel  # noqa: E402, F401 -- the fixture


def test_the_tree_holds_a_torch_build_and_the_wheel_does_not(tree_wheel):
    with zipfile.ZipFile(tree_wheel) as zf:
        members = zf.namelist()
    assert any(m.startswith("mfu_tracker/_C") for m in members)
    assert not [m for m in members if m.startswith("mfu_tracker/_torch")], members
    assert "mfu_tracker/_csrc/torch/observer.cpp" in members


def test_check_wheel_passes_on_the_wheel_and_the_readme(tree_wheel):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert check_wheel.problems(tree_wheel, readme) == []
    # the README installs the checkout, which builds torch-mfu, and names no other
    assert check_wheel.wheel_name(tree_wheel) == "torch-mfu"
    assert check_wheel.readme_install_names(readme) <= {"torch-mfu"}


def test_check_wheel_names_each_problem(tmp_path, tree_wheel):
    # a wheel with a _torch binary, read against a README installing the peer
    bad = tmp_path / tree_wheel.name
    shutil.copy(tree_wheel, bad)
    with zipfile.ZipFile(bad, "a") as zf:
        zf.writestr("mfu_tracker/_torch.cpython-311-x86_64-linux-gnu.so", b"\x7fELF")
    readme = "## Install\n\n```sh\npip install mfu-tracker\npip install \"mfu-tracker[hf]\"\n```\n## Next\n"
    found = check_wheel.problems(bad, readme)
    assert any("_torch binary" in p for p in found)
    assert any("['mfu-tracker']" in p for p in found)
    assert any("no `pip install .` or `pip install torch-mfu` line" in p for p in found)
    # the CPU torch index line and a checkout install are not this project's lines
    assert check_wheel.readme_install_names(
        "pip install torch --index-url https://download.pytorch.org/whl/cpu\n"
        "pip install --no-build-isolation -e .\npip install \"torch-mfu[report]\"\n") == {"torch-mfu"}
