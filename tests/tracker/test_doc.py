"""mfu_tracker/tracker/_doc.py: the Tracker's reference text is the class's
docstring, and it documents every keyword argument the constructor takes."""
from __future__ import annotations

import inspect

from mfu_tracker import Tracker
from mfu_tracker.tracker._doc import TRACKER_DOC


def test_the_docstring_is_the_reference_and_names_every_argument():
    assert Tracker.__doc__ == TRACKER_DOC
    parameters = [name for name in inspect.signature(Tracker.__init__).parameters
                  if name != "self"]
    missing = [name for name in parameters if name not in TRACKER_DOC]
    assert not missing, missing
