"""``mfu-tracker build-ext``: where the cache is, and a build that cannot
happen said in one error line with its fix, status 1."""
from __future__ import annotations

from mfu_tracker._native import _build
from mfu_tracker.cli import main


def test_an_unwritable_cache_is_an_error_with_its_fix(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    cache = blocker / "cache"           # under a regular file: no directory can be made there
    monkeypatch.setenv(_build.CACHE_ENV, str(cache))
    assert main(["build-ext"]) == 1
    out, err = capsys.readouterr()
    assert out.startswith(f"cache: {cache} (set {_build.CACHE_ENV} to move it;")
    assert err.startswith("mfu-tracker build-ext: error: ")
    assert "is not writable" in err and _build.CACHE_FIX in err


def test_the_force_flag_is_parsed():
    import argparse

    from mfu_tracker.cli import _build_ext

    parser = argparse.ArgumentParser()
    _build_ext.add_parser(parser.add_subparsers(dest="command"))
    forced = parser.parse_args(["build-ext", "--force"])
    assert forced.force is True and forced.func is _build_ext.run
    assert parser.parse_args(["build-ext"]).force is False
