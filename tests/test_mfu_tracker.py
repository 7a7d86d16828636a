"""Package-level behaviour: light import, stale-build refusal, public API."""
from __future__ import annotations

import subprocess
import sys

import types

import mfu_tracker


def test_import_loads_neither_torch_nor_transformers():
    code = ("import sys, mfu_tracker; "
            "print('torch' in sys.modules, 'transformers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_the_public_names_are_bound_at_the_first_look_at_one():
    """A command line that reads a log imports neither the tracker nor the
    FLOP counter; the first public name looked up binds every one, with the
    same __all__ as each public submodule's, in its order, and a star import
    and dir() see them all."""
    code = (
        "import sys, mfu_tracker.cli._main\n"
        "print(sorted(m for m in ('mfu_tracker.tracker', 'mfu_tracker.flops.counter') "
        "if m in sys.modules))\n"
        "import mfu_tracker\n"
        "from mfu_tracker import Tracker\n"
        "from mfu_tracker import timing, tracker, peaks\n"
        "assert Tracker is tracker.Tracker and mfu_tracker.track is timing.track\n"
        "assert mfu_tracker.__all__[:2] == ['__version__', 'MFUOptimizerWrapper']\n"
        "assert mfu_tracker.__all__[2:2 + len(timing.__all__)] == list(timing.__all__)\n"
        "assert set(peaks.__all__) <= set(mfu_tracker.__all__) <= set(dir(mfu_tracker))\n"
        "star = {}\n"
        "exec('from mfu_tracker import *', star)\n"
        "assert set(mfu_tracker.__all__) - {'__version__'} <= set(star)\n"
        "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["[]", "ok"]


def test_stale_extension_is_refused_with_the_fix():
    code = (
        "import importlib, mfu_tracker, mfu_tracker._native as native, mfu_tracker._C as C\n"
        "C.__version__ = '0.0.0-stale'\n"
        "try:\n"
        "    importlib.reload(native)\n"
        "except ImportError as e:\n"
        "    print('refused:', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "refused:" in out.stdout and "make build" in out.stdout and "0.0.0-stale" in out.stdout


def test_versions_agree():
    assert mfu_tracker.__version__ == mfu_tracker._C.__version__


def test_public_names_resolve():
    """``from mfu_tracker import *`` binds every name of ``__all__``, once each,
    to an object the package defines (not a None, not a stray import)."""
    assert mfu_tracker.__all__ and len(set(mfu_tracker.__all__)) == len(mfu_tracker.__all__)
    namespace: dict = {}
    exec("from mfu_tracker import *", namespace)
    assert sorted(set(namespace) - {"__builtins__"}) == sorted(mfu_tracker.__all__)
    constants = {"__version__": mfu_tracker._C.__version__, "PEAK_ENV_VAR": "MFU_TRACKER_PEAK_TFLOPS"}
    for name in mfu_tracker.__all__:
        value = namespace[name]
        if name in constants:
            assert value == constants[name], name
            continue
        home = value.__name__ if isinstance(value, types.ModuleType) else getattr(value, "__module__", "")
        assert home.startswith("mfu_tracker"), (name, home)


def test_peer_readme_calls_exist_with_their_argument_names():
    # The pure-Python mfu-tracker README (our compatibility contract) calls:
    import inspect

    params = lambda f: set(inspect.signature(f).parameters)  # noqa: E731
    assert {"dtype"} <= params(mfu_tracker.track)
    assert {"batch_size", "seq_len", "num_heads", "head_dim"} <= params(mfu_tracker.flash_attn_flops)
    assert {"trainable_only"} <= params(mfu_tracker.param_bytes)
    assert {"flop_count", "elapsed_sec", "dtype", "num_gpus", "device", "spec"} <= params(mfu_tracker.compute_mfu)
    assert {"param_bytes", "elapsed_sec", "num_gpus", "device", "spec"} <= params(mfu_tracker.compute_mbu)
    assert {"device"} <= params(mfu_tracker.get_gpu_spec)


def test_every_subpackage_is_listed_for_the_wheel():
    """The wheel and the sdist install the packages pyproject lists, not the
    tree: a subpackage left out imports from a checkout and fails installed."""
    import pathlib
    import tomllib

    root = pathlib.Path(__file__).resolve().parents[1]
    listed = set(tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    # every folder of the package: the subpackages and the folders of data
    # (the page's assets, run's startup hook), which setuptools otherwise
    # installs with a warning that they are importable but not listed
    found = {".".join(folder.relative_to(root).parts)
             for folder in [root / "mfu_tracker", *(root / "mfu_tracker").rglob("*")]
             if folder.is_dir() and folder.name != "__pycache__"
             and any(f.is_file() for f in folder.iterdir())}
    assert found == listed
