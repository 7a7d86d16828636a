"""The compatibility import paths (mfu_tracker/_aliases.py): each alias
imports the very module object of its target, so every object has one id."""
from __future__ import annotations

import importlib
import sys

from mfu_tracker import _aliases
from mfu_tracker._aliases import ALIASES


def test_every_alias_is_its_target_module():
    for alias, target in ALIASES.items():
        aliased = importlib.import_module(f"mfu_tracker.{alias}")
        real = importlib.import_module(f"mfu_tracker.{target}")
        assert aliased is real, alias
        assert aliased.__name__ == f"mfu_tracker.{target}"  # the target keeps its own name
        assert sys.modules[f"mfu_tracker.{alias}"] is real


def test_a_name_through_an_alias_is_the_same_object():
    from mfu_tracker.gpu import lookup_gpu_spec as via_alias
    from mfu_tracker.peaks import lookup_gpu_spec as direct
    assert via_alias is direct


def test_install_adds_one_finder_however_often_it_runs():
    def finders():
        return [f for f in sys.meta_path if isinstance(f, _aliases._AliasFinder)]
    assert len(finders()) == 1  # the package installed it at import
    _aliases.install("mfu_tracker")
    _aliases.install("mfu_tracker")
    assert len(finders()) == 1


def test_a_name_outside_the_table_is_left_to_the_import_system():
    finder = _aliases._AliasFinder("mfu_tracker")
    assert finder.find_spec("mfu_tracker.no_such_alias") is None
    assert finder.find_spec("mfu_tracker.gpu").name == "mfu_tracker.gpu"
