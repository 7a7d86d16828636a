"""This project and the pure-Python ``mfu-tracker`` in one ``mfu_tracker/``: refused at import.

Both install the import package ``mfu_tracker``. The peer's 0.3.0 wheel (PyPI,
``mfu_tracker-0.3.0-py3-none-any.whl``) holds, by its RECORD:
``mfu_tracker/{__init__,flops,gpu,optim,tracker}.py``,
``mfu_tracker/integrations/{__init__,hf_trainer}.py`` and
``mfu_tracker-0.3.0.dist-info/{METADATA,WHEEL,licenses/LICENSE,RECORD}``, and its
``__init__.py`` begins with ``from .flops import (FlopProfile, ...)``. The tests
lay out a site directory as pip leaves it after installing one over the other
-- a copy of this package, its own dist-info, and the peer's dist-info and
files (stand-ins: the peer's code is not needed, only where it writes and its
first import) -- and import ``mfu_tracker`` from it in a fresh interpreter.
No network: nothing is downloaded.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import mfu_tracker
from mfu_tracker._install import DISTRIBUTION, PEER_DISTRIBUTION

PACKAGE = Path(mfu_tracker.__file__).resolve().parent
PEER_FILES = ("__init__.py", "flops.py", "gpu.py", "optim.py", "tracker.py",
              "integrations/__init__.py", "integrations/hf_trainer.py")
# The peer's __init__.py starts with this import (its first statement).
PEER_INIT = ("from .flops import (FlopProfile, flash_attn_flops, param_bytes, profile_flops,\n"
             "                    profile_flops_with_hfu)\n")

IMPORT = """
import sys
# the shared venv's editable install maps mfu_tracker to the checkout: drop it
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in type(f).__module__
                    and "editable" not in getattr(f, "__module__", "")]
sys.path.insert(0, sys.argv[1])
import mfu_tracker
print("imported", mfu_tracker.__file__, mfu_tracker.track.__module__)
"""


def _dist_info(site: Path, name: str, version: str, files: list[str]) -> None:
    folder = site / f"{name.replace('-', '_')}-{version}.dist-info"
    folder.mkdir()
    (folder / "METADATA").write_text(f"Metadata-Version: 2.4\nName: {name}\nVersion: {version}\n\n")
    (folder / "WHEEL").write_text("Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    records = [*files, f"{folder.name}/METADATA", f"{folder.name}/WHEEL", f"{folder.name}/RECORD"]
    (folder / "RECORD").write_text("".join(f"{r},,\n" for r in records))


@pytest.fixture(scope="module")
def ours(tmp_path_factory) -> Path:
    """A site directory holding this package as pip installs it (no peer)."""
    site = tmp_path_factory.mktemp("site-ours")
    shutil.copytree(PACKAGE, site / "mfu_tracker", ignore=shutil.ignore_patterns("__pycache__"))
    files = [str(p.relative_to(site)) for p in (site / "mfu_tracker").rglob("*") if p.is_file()]
    _dist_info(site, DISTRIBUTION, mfu_tracker.__version__, files)
    return site


def _import(site: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", IMPORT, str(site)], capture_output=True,
                          text=True, timeout=300)


def _with_peer(ours: Path, tmp_path: Path, *, peer_last: bool) -> Path:
    site = tmp_path / "site"
    shutil.copytree(ours, site)
    for rel in PEER_FILES:
        target = site / "mfu_tracker" / rel
        if peer_last or not target.exists():  # pip writes over what is there
            target.write_text(PEER_INIT if rel == "__init__.py" else
                              f"# stand-in for {PEER_DISTRIBUTION} 0.3.0's {rel}\n")
    _dist_info(site, PEER_DISTRIBUTION, "0.3.0", [f"mfu_tracker/{r}" for r in PEER_FILES])
    return site


def _assert_refused(proc: subprocess.CompletedProcess, site: Path) -> None:
    assert proc.returncode != 0, proc.stdout
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: mfu_tracker: two packages are installed into one "
                           "directory"), proc.stderr
    assert str(site / "mfu_tracker") in last
    assert f"{PEER_DISTRIBUTION} 0.3.0" in last and DISTRIBUTION in last
    # the package is on no index: the reinstall names where it came from, or says to
    # use the checkout (test_the_fix_reinstalls_from_where_it_came_from)
    assert (f"pip uninstall -y {PEER_DISTRIBUTION} {DISTRIBUTION} && pip install <your "
            f"checkout of {DISTRIBUTION}>" in last)


def test_a_clean_install_imports(ours):
    proc = _import(ours)
    assert proc.returncode == 0, proc.stderr
    assert f"imported {ours / 'mfu_tracker' / '__init__.py'}" in proc.stdout


def test_ours_installed_over_the_peer_is_refused_with_the_fix(ours, tmp_path):
    # our files replaced the peer's five shared ones; its flops.py, tracker.py
    # and its dist-info stay behind
    site = _with_peer(ours, tmp_path, peer_last=False)
    assert (site / "mfu_tracker" / "flops.py").is_file()
    _assert_refused(_import(site), site)


def test_the_peer_installed_over_ours_is_refused_with_the_fix(ours, tmp_path):
    # the peer's __init__.py replaced ours: its first import reaches our flops/
    site = _with_peer(ours, tmp_path, peer_last=True)
    assert (site / "mfu_tracker" / "__init__.py").read_text() == PEER_INIT
    proc = _import(site)
    _assert_refused(proc, site)
    assert "flops/__init__.py" in proc.stderr  # where the check ran: our flops package


def test_a_leftover_peer_file_alone_is_found(ours, tmp_path):
    # the peer's dist-info gone (removed by hand), its modules still in our directory
    site = tmp_path / "site"
    shutil.copytree(ours, site)
    (site / "mfu_tracker" / "tracker.py").write_text("# left behind\n")
    proc = _import(site)
    assert proc.returncode != 0
    assert "two packages are installed into one directory" in proc.stderr
    assert str(site / "mfu_tracker" / "tracker.py") in proc.stderr


def test_the_fix_reinstalls_from_where_it_came_from(tmp_path):
    """pip records a local install's source in the dist-info (direct_url.json, PEP 610)."""
    from mfu_tracker._install import mixed_install_message

    checkout = tmp_path / "my checkout"
    checkout.mkdir()
    (checkout / "pyproject.toml").write_text("[project]\nname = 'torch-mfu'\n")
    site = tmp_path / "site"
    (site / "mfu_tracker").mkdir(parents=True)
    _dist_info(site, DISTRIBUTION, mfu_tracker.__version__, [])
    (site / f"torch_mfu-{mfu_tracker.__version__}.dist-info" / "direct_url.json").write_text(
        '{"url": "file://' + str(checkout).replace(" ", "%20") + '", "dir_info": {}}')
    message = mixed_install_message(site / "mfu_tracker", ["mfu-tracker 0.3.0"])
    assert message.endswith(f"pip uninstall -y {PEER_DISTRIBUTION} {DISTRIBUTION} && "
                            f"pip install '{checkout}'")
