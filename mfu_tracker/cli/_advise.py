"""``mfu-tracker advise LOG``: what to change, ranked, from a run's figures.

The rules are :mod:`mfu_tracker.job._advice`'s table; this module reads the
log (a JSONL metrics log, or TensorBoard event files: the report's reader),
picks the run (``--run``: the last by default), and prints::

    what to change (ranked by the most each could return; log.jsonl, run 1):
      1. up to 23.0% of the step: torch.compile: fuse ... -- evidence: ...
    not judged (turn on to judge):
      - selective_checkpointing: memory headroom (memory/*): ...

or ``--json`` for the same as data. ``mfu-tracker report`` prints the same
text at its end.
"""
from __future__ import annotations

import argparse
import json
from typing import Any, Dict, List, Optional

from ..job._advice import advise, evidence_of_run
from ..job._records import Log, Run
from ._errors import CliError

__all__ = ["add_parser", "advice_text", "advice_data", "lines_for_report"]


def _pick(log: Log, which: str) -> Run:
    from .report._load import select_runs

    runs = select_runs(log, which)
    if which == "all":
        runs = runs[-1:]
    return runs[0]


def _prefix(run: Run, prefix: Optional[str]) -> str:
    from .report._plan import find_prefix

    if prefix is not None:
        return prefix
    found = find_prefix(run.metrics)
    return "throughput" if found is None else found


def advice_data(log: Log, which: str = "last", prefix: Optional[str] = None) -> Dict[str, Any]:
    """The advice of one run of ``log`` as data: ``advice`` (rule, lever,
    bound, evidence; ranked) and ``needs`` (rule, needs)."""
    run = _pick(log, which)
    evidence = evidence_of_run(run, _prefix(run, prefix))
    advice, needs = advise(evidence)
    return {"log": log.path, "run": run.number,
            "advice": [vars(a) for a in advice], "needs": [vars(n) for n in needs]}


def advice_text(log: Log, which: str = "last", prefix: Optional[str] = None,
                compact: bool = False) -> str:
    """The advice of one run of ``log`` as the lines a person reads;
    ``compact`` (the end of ``report``'s summary): the rules not judged on
    one line, by name (``advise`` says what each needs)."""
    data = advice_data(log, which, prefix)
    lines = [f"what to change (ranked by the most each could return; {data['log']}, "
             f"run {data['run']}):"]
    if not data["advice"]:
        lines.append("  nothing measured crosses a rule's threshold")
    for i, item in enumerate(data["advice"], 1):
        lines.append(f"  {i}. up to {item['bound'] * 100:.1f}% {item['of']}: {item['lever']} "
                     f"-- evidence: {item['evidence']}")
    if data["needs"] and compact:
        names = ", ".join(item["rule"] for item in data["needs"])
        lines.append(f"not judged: {names} (mfu-tracker advise says what to turn on)")
    elif data["needs"]:
        lines.append("not judged (turn on to judge):")
        lines += [f"  - {item['rule']}: {item['needs']}" for item in data["needs"]]
    return "\n".join(lines)


def _cmd_advise(args: argparse.Namespace) -> int:
    from .report._load import load_streamed
    from .report._model import ReportError

    try:
        log = load_streamed(args.path, args.run, drawn=False)
    except ReportError as error:
        raise CliError(str(error)) from None
    if args.json:
        print(json.dumps(advice_data(log, args.run, args.prefix), indent=2))
    else:
        print(advice_text(log, args.run, args.prefix))
    return 0


def add_parser(sub: Any) -> None:
    """Register ``advise`` on the command line's subparsers."""
    cmd = sub.add_parser("advise", help="what to change: a ranked list of levers from a run's "
                         "waterfall, kernel breakdown, memory and communication")
    cmd.add_argument("path", help="a JSONL metrics log (log_path=), or a TensorBoard log directory")
    cmd.add_argument("--run", default="last",
                     help="which run of the log: the last (default) or N (1 = the first)")
    cmd.add_argument("--prefix", default=None,
                     help="metric key prefix (default: found from the <prefix>/mfu key)")
    cmd.add_argument("--json", action="store_true", help="print the advice as JSON")
    cmd.set_defaults(func=_cmd_advise)


def lines_for_report(log: Log, which: str, prefix: Optional[str],
                     compact: bool = True) -> List[str]:
    """The advice lines ``report`` prints at its end ([] when it cannot)."""
    try:
        return advice_text(log, which, prefix, compact).splitlines()
    except (ValueError, LookupError):
        return []
