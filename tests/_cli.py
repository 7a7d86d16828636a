"""The command line driven in-process, as the CLI tests read it."""
from __future__ import annotations

import re

from mfu_tracker.cli import main


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of ``mfu-tracker *argv``."""
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def field(out: str, label: str) -> str:
    """The value after ``label:`` on its own line of ``out`` (asserts there is one)."""
    match = re.search(rf"^{re.escape(label)}:\s+(.*)$", out, re.MULTILINE)
    assert match, f"no {label!r} line in:\n{out}"
    return match.group(1)
