"""`make run` and the examples leave a clean git tree, and `make run` the user's environment.

Everything they write goes under the checkout's ``build/``, which git
ignores; the README's picture, ``docs/report.png``, is tracked and only
``make docs-report`` replaces it. Checked two ways: the Makefile's ``run``
recipe writes nowhere else, and an example run from the checkout's root with
its default output directory changes nothing ``git status`` reports.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import mfu_tracker

ROOT = Path(mfu_tracker.__file__).resolve().parent.parent


def _recipe(target: str) -> str:
    text = (ROOT / "Makefile").read_text()
    match = re.search(rf"^{re.escape(target)}:.*\n((?:\t.*\n)+)", text, re.MULTILINE)
    assert match, f"no {target} rule"
    return match.group(1)


def _variables() -> dict:
    text = (ROOT / "Makefile").read_text()
    return dict(re.findall(r"^([A-Z_]+) := (.*)$", text, re.MULTILINE))


def _expand(text: str, variables: dict) -> str:
    return re.sub(r"\$\(([A-Z_]+)\)", lambda m: variables.get(m.group(1), m.group(0)), text)


def _git_status() -> str:
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout


def test_make_run_writes_under_build_only():
    recipe = _expand(_recipe("run"), _variables())
    written = re.findall(r"(?:--out|--log-path|mkdir -p|rm -f)\s+(\S+)", recipe)
    assert written, recipe
    assert all(path.startswith("build/") for path in written), written
    assert "docs/" not in recipe
    ignored = subprocess.run(["git", "check-ignore", "-q", "build/run/report.png"], cwd=ROOT)
    assert ignored.returncode == 0  # build/ is ignored
    # the README's picture is tracked and refreshed only by its own target
    assert "cp build/run/report.png docs/report.png" in _expand(_recipe("docs-report"), _variables())
    tracked = subprocess.run(["git", "ls-files", "--error-unmatch", "docs/report.png"], cwd=ROOT,
                             capture_output=True)
    assert tracked.returncode == 0


def test_an_example_run_from_the_checkout_leaves_git_status_unchanged(tmp_path):
    if subprocess.run(["git", "rev-parse"], cwd=ROOT, capture_output=True).returncode:
        pytest.skip("not a git checkout")
    before = _git_status()
    env = dict(os.environ, MFU_TRACKER_PEAK_TFLOPS="0.05", CUDA_VISIBLE_DEVICES="",
               PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "examples/lightning_mfu.py", "--steps", "1",
                           "--log-every", "1", "--seq-len", "8", "--batch-size", "1",
                           "--device", "cpu"],
                          cwd=ROOT, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert f"logs in {ROOT / 'build' / 'examples' / 'lightning_mfu'}" in proc.stdout
    assert _git_status() == before


def test_make_run_sets_up_its_own_environment_and_leaves_the_users_alone(tmp_path):
    """`make -n run` (what it would run, from a tree with no set-up yet): a venv of
    its own under build/, the CPU build of torch, the package as a user installs it
    and the demo's two libraries; never .venv, an editable install or the test extras."""
    if shutil.which("make") is None:
        pytest.skip("no make")
    tree = tmp_path / "tree"
    tree.mkdir()
    for name in ("Makefile", "constraints-test.txt", "pyproject.toml", "setup.py"):
        shutil.copy(ROOT / name, tree / name)
    done = subprocess.run(["make", "-n", "run"], cwd=tree, capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, MAKEFLAGS=""))
    assert done.returncode == 0, done.stderr
    commands = done.stdout.replace("\\\n", " ")
    assert "-m venv build/run-venv" in commands
    assert re.search(r"pip install -q --no-deps torch==2\.13\.0\s+--index-url "
                     r"https://download\.pytorch\.org/whl/cpu", commands)
    assert "pip install -q -c constraints-test.txt torch==2.13.0 transformers matplotlib" in commands
    assert "build/run-venv/bin/python -m pip install -q --no-deps --force-reinstall .\n" in commands
    assert f"MFU_TRACKER_CACHE_DIR={tree / 'build' / 'run-cache'} " in commands
    for line in commands.splitlines():
        assert ".venv" not in line.replace("build/run-venv", ""), line
        assert " -e " not in line and "[test]" not in line, line
