"""mfu_tracker/_checkout.py: a checkout's unbuilt sources in front of the
installed package give way to the installed copy; a built tree is used as
it is. (The whole path, the README's quick start run in a checkout's root
after `pip install` of the wheel: tests/install/test_readme_first_screen.py.)"""
from __future__ import annotations

import sys

import pytest

from mfu_tracker import _checkout


def _package(root, name="mfu_tracker", built=False, marker="here"):
    pkg = root / name
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(f"from ._where import WHERE\n")
    (pkg / "_where.py").write_text(f"WHERE = {marker!r}\n")
    if built:
        (pkg / "_C.cpython-311-x86_64-linux-gnu.so").write_bytes(b"")
    return pkg


def test_unbuilt_sources_find_the_built_copy_behind_them(tmp_path, monkeypatch):
    sources = _package(tmp_path / "checkout")
    installed = _package(tmp_path / "site", built=True)
    monkeypatch.setattr(sys, "path", [str(tmp_path / "checkout"), str(tmp_path / "elsewhere"),
                                      str(tmp_path / "site")])
    assert _checkout.installed_copy(str(sources)) == str(installed)


def test_a_built_tree_and_a_lone_tree_stay_as_they_are(tmp_path, monkeypatch):
    built = _package(tmp_path / "checkout", built=True)
    _package(tmp_path / "site", built=True)
    monkeypatch.setattr(sys, "path", [str(tmp_path / "checkout"), str(tmp_path / "site")])
    assert _checkout.installed_copy(str(built)) is None        # make build / editable
    lone = _package(tmp_path / "other")
    _package(tmp_path / "unbuilt_site")                        # another copy, not built either
    monkeypatch.setattr(sys, "path", [str(tmp_path / "other"), str(tmp_path / "unbuilt_site")])
    assert _checkout.installed_copy(str(lone)) is None         # _native then says how to build


def test_the_working_directory_entry_is_read_as_the_working_directory(tmp_path, monkeypatch):
    sources = _package(tmp_path / "checkout")
    _package(tmp_path / "site", built=True)
    monkeypatch.chdir(tmp_path / "checkout")
    monkeypatch.setattr(sys, "path", ["", str(tmp_path / "site")])
    assert _checkout.installed_copy(str(sources)) == str(tmp_path / "site" / "mfu_tracker")


def test_is_built_reads_the_core_s_file_name(tmp_path):
    pkg = _package(tmp_path)
    assert not _checkout.is_built(str(pkg)) and not _checkout.is_built(str(tmp_path / "none"))
    (pkg / "_C.pyd").write_bytes(b"")
    assert _checkout.is_built(str(pkg))


def test_load_in_place_replaces_the_module_and_its_relative_imports(tmp_path, monkeypatch):
    name = "mfu_checkout_probe"
    installed = _package(tmp_path / "site", name=name, marker="installed")
    monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.delitem(sys.modules, f"{name}._where", raising=False)
    _checkout.load_in_place(name, str(installed))
    module = sys.modules[name]
    assert module.WHERE == "installed" and module.__path__ == [str(installed)]
    assert sys.modules[f"{name}._where"].__file__ == str(installed / "_where.py")


def test_a_directory_without_the_package_is_an_import_error(tmp_path):
    with pytest.raises((ImportError, FileNotFoundError)):
        _checkout.load_in_place("mfu_checkout_missing", str(tmp_path / "nothing"))
