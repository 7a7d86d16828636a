"""The README's first screen runs as written in a fresh venv, from a wheel
built from the checkout.

The first screen is the README down to "The names the examples use": what it
is, the install, the quick start and the status. The wheel (the ``tree_wheel``
fixture, tests/install/_wheel.py) goes into a new venv with a plain ``pip
install`` (``--no-index --no-deps``: torch, the one dependency, comes from
this environment through a path file, as `make install-check` does, since the
README's CPU-torch line needs the network); then the quick start's code, as
the README prints it, runs there from a directory outside the checkout and
must print an MFU, with ``mfu_tracker`` imported from the venv.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import torch

import mfu_tracker

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _wheel import tree_wheel  # noqa: E402, F401 -- the fixture

ROOT = Path(mfu_tracker.__file__).resolve().parent.parent
FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def first_screen() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return text[:text.index("## The names the examples use")]


def test_the_first_screen_has_an_install_a_quick_start_and_the_status():
    screen = first_screen()
    blocks = FENCE.findall(screen)
    langs = [lang for lang, _ in blocks]
    # the install first, one Python quick start; the others shell lines (the no-install
    # demo, the unmodified script under mfu-tracker run)
    assert langs[0] == "sh" and langs.count("python") == 1, langs
    assert "mfu-tracker run -- python train.py" in screen and "make test" in screen
    install = blocks[0][1]
    assert "pip install torch --index-url https://download.pytorch.org/whl/cpu" in install
    assert re.search(r"^pip install \.$", install, re.M)
    assert "## Status" in screen and "unverified on real hardware" in " ".join(screen.split())
    assert len(screen.split()) < 450                       # one screen, not a feature list


@pytest.mark.skipif(sys.platform != "linux", reason="the wheel is built for Linux")
def test_the_quick_start_runs_in_a_fresh_venv_from_the_wheel(tree_wheel, tmp_path):
    (_, quick), = [b for b in FENCE.findall(first_screen()) if b[0] == "python"]
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()"
                              "['purelib'])"], capture_output=True, text=True,
                             check=True).stdout.strip()
    # torch from this environment: its directory on the path; the directory's own
    # .pth files (this checkout's editable install) are not read from there
    Path(purelib, "torch-here.pth").write_text(str(Path(torch.__file__).parent.parent) + "\n")
    assert Path(torch.__file__).parent.parent != Path(sysconfig.get_paths()["purelib"]) or \
        not (Path(sysconfig.get_paths()["purelib"]) / "mfu_tracker").is_dir()
    done = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                           str(tree_wheel)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    # from a directory outside the checkout, and from a checkout's root, where the
    # sources (no build in them) come first on sys.path (mfu_tracker/_checkout.py)
    checkout = tmp_path / "checkout"
    shutil.copytree(ROOT / "mfu_tracker", checkout / "mfu_tracker",
                    ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    for place in (tmp_path / "elsewhere", checkout):
        place.mkdir(exist_ok=True)
        _prints_an_mfu_from_the_venv(python, quick, place, tmp_path, purelib)


def _prints_an_mfu_from_the_venv(python, quick, cwd, tmp_path, purelib):
    code = quick + "import mfu_tracker; print(mfu_tracker.__file__)\n"
    done = subprocess.run([str(python), "-c", code], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-3000:]
    *printed, where = done.stdout.splitlines()
    if printed:
        assert re.fullmatch(r"MFU \d+\.\d\d of a measured \d+ GFLOP/s fp32 peak", printed[-1]), \
            printed
    else:   # the README's documented other outcome: a machine too busy to measure a peak says so
        assert "peak" in done.stderr and "Warning" in done.stderr, done.stderr[-2000:]
    assert Path(where).resolve().is_relative_to(Path(purelib).resolve()), where
