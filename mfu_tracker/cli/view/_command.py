"""``mfu-tracker view LOG``: the live page of a metrics log.

Serves the page (:mod:`._server`) on ``127.0.0.1`` (``--host``, ``--port``;
by default a free port), prints its address and serves until interrupted.
The log may be finished, still being written, or not there yet (a run about
to start): the page follows it as it grows. ``--json`` prints the page's
document once instead (what ``/api/state`` serves) and exits.
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from typing import Any, List

from .._errors import CliError
from .._flag_types import int_at_least, port, positive_float
from ._server import serve
from ._state import PageState

__all__: List[str] = []


def add_budget_flags(parser: argparse.ArgumentParser) -> None:
    """``--budget-tokens`` and ``--budget-steps`` (exclusive): what progress and the ETA
    are measured against (``view``; ``run`` takes the same)."""
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--budget-tokens", type=positive_float, default=None, metavar="N",
                        help="the run's token budget: progress and ETA against it")
    budget.add_argument("--budget-steps", type=int_at_least(1), default=None, metavar="N",
                        help="the run's step budget (global steps): progress and ETA against it")


def _cmd_view(args: argparse.Namespace) -> int:
    if args.json:
        state = PageState(args.log, budget_tokens=args.budget_tokens,
                          budget_steps=args.budget_steps)
        print(json.dumps(state.snapshot(), indent=1, allow_nan=False, default=str))
        return 0
    try:
        server = serve(args.log, host=args.host, port=args.port,
                       budget_tokens=args.budget_tokens, budget_steps=args.budget_steps)
    except OSError as error:
        raise CliError(f"cannot serve on {args.host}:{args.port} ({error}); give another "
                       f"--port, or 0 for a free one") from None
    print(f"mfu-tracker view: {args.log} at {server.url} (Ctrl-C to stop)", flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    try:
        done.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    print("mfu-tracker view: stopped", file=sys.stderr)
    return 0


def add_parser(sub: Any) -> None:
    """Register ``view`` on the command line's subparsers."""
    parser = sub.add_parser("view", help="a live page of a metrics log in the browser: MFU with "
                            "its denominator, the waterfall, the hardware ladder, the ledger, "
                            "progress against a budget (docs/view.md)")
    parser.add_argument("log", help="the JSONL metrics log (finished, or being written)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="the address to serve on (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=port, default=0,
                        help="the port (default 0: a free one, printed)")
    add_budget_flags(parser)
    parser.add_argument("--json", action="store_true",
                        help="print the page's document (every figure with its formula and "
                             "source) once and exit")
    parser.set_defaults(func=_cmd_view)
