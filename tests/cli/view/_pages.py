"""A hand-written log on disk and the view's document of it."""
from __future__ import annotations

import json

from mfu_tracker.cli.view._state import PageState


def write(path, lines):
    path.write_text("".join(json.dumps(one) + "\n" for one in lines))
    return path


def document(tmp_path, lines, **budget):
    """The page's document (``PageState.snapshot()``) of ``lines``."""
    return PageState(str(write(tmp_path / "m.jsonl", lines)), **budget).snapshot()


def figures(section):
    """{id: figure} of a section's ``figures``."""
    return {f["id"]: f for f in section["figures"]}
