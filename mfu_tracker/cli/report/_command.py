"""The ``report`` command: its flags and what it prints."""
from __future__ import annotations

import argparse
from typing import Any, Optional, Tuple

from ...job._records import Log
from .._log_notes import STRICT_HELP, warn_cut
from ._load import load_streamed
from ._plan import plan
from ._render import check_out, pyplot, render
from ._text import numbers_text, summary_text

__all__ = ["add_parser", "run"]


def run(path: str, out: str, prefix: Optional[str] = None, title: str = "",
        which: str = "last", strict: bool = False, numbers: bool = True) -> str:
    """Load ``path``, draw ``out``; returns every number drawn
    (:func:`numbers_text`), or with ``numbers=False`` the summary a person
    reads (:func:`summary_text`)."""
    return _draw(path, out, prefix, title, which, strict, numbers)[0]


def _draw(path: str, out: str, prefix: Optional[str], title: str, which: str, strict: bool,
          numbers: bool) -> Tuple[str, Log]:
    """:func:`run`, and the log as read (one pass: the advice reads the same)."""
    check_out(out)
    pyplot()                        # the missing extra is said before any work
    log = load_streamed(path, which, strict)
    warn_cut(log, "report")
    report = plan(log, prefix, which)
    render(report, out, title)
    return (numbers_text(report) if numbers else summary_text(report)), log


def _cmd_report(args: argparse.Namespace) -> int:
    from .._advise import lines_for_report
    from .._errors import CliError

    if len(args.paths) > 2:
        raise CliError(f"give one log, or two to compare (A B); got {len(args.paths)}")
    if len(args.paths) == 2:   # two runs side by side (the kernel breakdown's comparison)
        from ._compare import run as compare

        print(compare(args.paths, args.out, prefix=args.prefix, title=args.title or "",
                      which=args.run, exact=args.numbers))
        print(f"wrote {args.out}")
        return 0
    text, log = _draw(args.paths[0], args.out, args.prefix, args.title or "", args.run,
                      args.strict, args.numbers)
    print(text)
    # what to change, from the same run (mfu_tracker.job._advice)
    print("\n".join(lines_for_report(log, args.run, args.prefix, compact=not args.numbers)))
    print(f"wrote {args.out}" + ("" if args.numbers else " (every number drawn: --numbers)"))
    return 0


def add_parser(sub: Any) -> None:
    """Register ``report`` on the command line's subparsers."""
    rep = sub.add_parser("report", help="draw MFU, the waterfall and per-rank MFU from a metrics "
                         "log (JSONL from log_path=, or a TensorBoard log directory)")
    rep.add_argument("paths", nargs="+", metavar="path",
                     help="a JSONL metrics log, a TensorBoard log directory or event file; "
                          "two logs (A B) draw the two runs side by side")
    rep.add_argument("--out", required=True, help="the picture: FILE.png, or FILE.html (PNG + table)")
    rep.add_argument("--prefix", default=None,
                     help="metric key prefix (default: found from the <prefix>/mfu key)")
    rep.add_argument("--title", default=None, help="the picture's title")
    rep.add_argument("--run", default="last",
                     help="which run of the log to draw: the last (default), N (1 = the first), "
                          "or all (each run its own line, its start marked); with two logs, "
                          "the run of each")
    rep.add_argument("--numbers", action="store_true",
                     help="print every number drawn (step=N key=value, full precision) instead "
                          "of the summary")
    rep.add_argument("--strict", action="store_true", help=STRICT_HELP)
    rep.set_defaults(func=_cmd_report)
