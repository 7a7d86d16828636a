"""Loading the C++ observer (mfu_tracker/_native/_observer.py): the loaded
module, the staleness rule (another torch, another package version) and the
dispatch-key check against a torch that says otherwise."""
from __future__ import annotations

from types import SimpleNamespace

import torch

from mfu_tracker._native import _observer
from mfu_tracker._version import __version__


def test_the_built_observer_loads_and_both_keys_are_usable():
    module = _observer.observer_module()
    assert module is not None and _observer.observer_problem() is None
    assert module.torch_version == torch.__version__ and module.__version__ == __version__
    assert _observer.key_problem("count") is None
    assert _observer.key_problem("comm") is None
    assert _observer.observer_module() is module  # loaded once


def test_a_build_for_another_torch_or_version_is_stale():
    built = SimpleNamespace(torch_version="0.0.1", __version__=__version__)
    assert _observer._stale(built, "2.13.0") == \
        "mfu_tracker._torch was built against torch 0.0.1 but torch 2.13.0 is installed"
    built = SimpleNamespace(torch_version="2.13.0", __version__="0.0.0")
    assert "stale build (0.0.0, package " in _observer._stale(built, "2.13.0")
    assert _observer._stale(SimpleNamespace(torch_version="2.13.0", __version__=__version__),
                            "2.13.0") is None


def test_a_key_torch_places_elsewhere_is_refused():
    module = _observer.observer_module()
    name = module.COUNT_KEY_NAME
    fake = SimpleNamespace(COUNT_KEY=module.COUNT_KEY + 1, COUNT_KEY_NAME=name)
    problem = _observer.check_key(torch, fake, "count")
    assert problem == (f"torch {torch.__version__} has the dispatch key {name} at "
                       f"{module.COUNT_KEY}, not at {module.COUNT_KEY + 1} where "
                       "mfu_tracker._torch was built to find it")
    missing = SimpleNamespace(COUNT_KEY=1, COUNT_KEY_NAME="NoSuchDispatchKeyName")
    assert "has no dispatch key NoSuchDispatchKeyName" in _observer.check_key(torch, missing, "count")
