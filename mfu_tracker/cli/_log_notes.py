"""What a command that reads a metrics log says about the lines it could not
read (:func:`mfu_tracker.job.read_log`): one warning for a last line cut
short, the count and places of the corrupt lines skipped."""
from __future__ import annotations

import sys
from typing import List

from ..job._records import Log

__all__ = ["STRICT_HELP", "skipped_lines", "warn_cut"]

STRICT_HELP = ("refuse a log with a line that cannot be read (a corrupt line, or a last line "
               "cut short by a killed writer) instead of skipping it")


def warn_cut(log: Log, command: str) -> None:
    """One warning on stderr naming the file and line of a cut last line."""
    if log.cut:
        print(f"mfu-tracker {command}: warning: {log.cut}", file=sys.stderr)


def skipped_lines(log: Log) -> List[str]:
    """``skipped: N corrupt line(s) ...`` and one line per skipped line (none: [])."""
    if not log.skipped:
        return []
    return ([f"skipped: {len(log.skipped)} line(s) that could not be read (--strict refuses "
             f"them):"] + [f"  {what}" for what in log.skipped])
