"""Each module's test is found from its path, and asserts on that module.

The rule (tests/README.md, "Where a module's test is"): the test of
``mfu_tracker/a/_b/_c.py`` is ``tests/a/b/test_c.py`` -- the package folders
mirrored, every leading underscore dropped. A package's ``__init__.py`` is
tested by ``tests/a/b/test_b.py`` (the package's own name), the root
package's by ``tests/test_mfu_tracker.py``, ``__main__.py`` by ``test_main.py``.

"Asserts on that module": the file imports the module itself (or runs it:
its dotted name as a string, for ``runpy``), or a name whose
``__module__`` is that module (its public re-export, e.g. ``from mfu_tracker
import Tracker`` for ``tracker/_tracker.py``) -- read from the file's imports
(those inside functions included), resolved by importing them here.

``NO_TEST_FILE`` lists the modules without such a file. It may only shrink:
a listed module that gains its file must leave the list, and an unlisted
module without one fails. It stays under a tenth of the modules.
"""
from __future__ import annotations

import ast
import importlib
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "mfu_tracker"
TESTS = ROOT / "tests"

# Modules with no test file at their path (or whose file never imports them).
# Take a module off when it gains its file; never add one.
NO_TEST_FILE: tuple[str, ...] = (
    "mfu_tracker.breakdown._record",
    "mfu_tracker.breakdown._reduce",
    "mfu_tracker.breakdown._step_profile",
    "mfu_tracker.cli.doctor._checks",
    "mfu_tracker.cli.doctor._platform",
    "mfu_tracker.cli.doctor._shim",
    "mfu_tracker.cli.doctor._sync_child",
    "mfu_tracker.cli.report._kernels",
    "mfu_tracker.device._hardware",
    "mfu_tracker.timing._moe_observer",
)

# The list's size the day it was written; it may only go down.
NO_TEST_FILE_MAX = 10


def modules() -> list[str]:
    """Every module of the package, dotted (``mfu_tracker.job._ledger``)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found.append(".".join(parts))
    return found


def expected_test_file(module: str) -> Path:
    """Where the test of ``module`` lives, by the rule above."""
    path = PACKAGE.joinpath(*module.split(".")[1:])
    if path.is_dir():  # a package: its __init__.py
        parts = module.split(".")
        folders, name = parts[1:], parts[-1]
    else:
        folders, name = module.split(".")[1:-1], module.split(".")[-1]
    folders = [part.lstrip("_") for part in folders]
    return TESTS.joinpath(*folders, f"test_{name.strip('_')}.py")


def _imported(test_file: Path) -> set[str]:
    """The modules a test file's imports reach: each imported module, and the
    defining module of each name imported from one."""
    reached = set()
    for node in ast.walk(ast.parse(test_file.read_text(), str(test_file))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and node.value.startswith("mfu_tracker"):
            reached.add(node.value)  # runpy.run_module("mfu_tracker.__main__")
            continue
        if isinstance(node, ast.Import):
            names = [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [(node.module, alias.name) for alias in node.names]
        else:
            continue
        for module_name, attr in names:
            if not module_name.startswith("mfu_tracker"):
                continue
            module = importlib.import_module(module_name)
            reached.add(module.__name__)  # an alias path gives the module it names
            if attr is None:
                continue
            value = getattr(module, attr, None)
            if value is None:  # a submodule its package has not imported
                value = importlib.import_module(f"{module_name}.{attr}")
            if isinstance(value, types.ModuleType):
                reached.add(value.__name__)
            else:
                reached.add(getattr(value, "__module__", None))
    return reached


def _without_test_file() -> tuple[set[str], set[str]]:
    """(modules with no file at their path, modules whose file never imports them)."""
    missing, unrelated = set(), set()
    for module in modules():
        path = expected_test_file(module)
        if not path.exists():
            missing.add(module)
        elif module not in _imported(path):
            unrelated.add(module)
    return missing, unrelated


def test_the_rule_maps_paths_as_documented():
    assert expected_test_file("mfu_tracker.job._ledger") == TESTS / "job" / "test_ledger.py"
    assert expected_test_file("mfu_tracker._native._build") == TESTS / "native" / "test_build.py"
    assert expected_test_file("mfu_tracker.flops.counter") == TESTS / "flops" / "counter" / "test_counter.py"
    assert expected_test_file("mfu_tracker") == TESTS / "test_mfu_tracker.py"
    assert expected_test_file("mfu_tracker.__main__") == TESTS / "test_main.py"
    assert expected_test_file("mfu_tracker.cli.report.panels.hardware") == \
        TESTS / "cli" / "report" / "panels" / "test_hardware.py"


def test_every_module_has_its_test_file_or_is_listed():
    missing, unrelated = _without_test_file()
    listed = set(NO_TEST_FILE)
    assert not unrelated - listed, (
        "these test files never import the module their path names (nor a name it defines): "
        f"{sorted(str(expected_test_file(m).relative_to(ROOT)) for m in unrelated - listed)}")
    assert not missing - listed, (
        "no test file at the module's path; write one (tests/README.md, 'Adding a test'): "
        f"{sorted(str(expected_test_file(m).relative_to(ROOT)) for m in missing - listed)}")
    assert not listed - missing - unrelated, (
        f"listed in NO_TEST_FILE but the module has its test file now (or is gone): "
        f"take it off the list: {sorted(listed - missing - unrelated)}")


def test_the_list_only_shrinks():
    assert len(set(NO_TEST_FILE)) == len(NO_TEST_FILE)
    assert len(NO_TEST_FILE) <= NO_TEST_FILE_MAX, "NO_TEST_FILE may only shrink"


def test_the_list_holds_under_a_tenth_of_the_modules():
    assert len(NO_TEST_FILE) < len(modules()) / 10, (len(NO_TEST_FILE), len(modules()))
