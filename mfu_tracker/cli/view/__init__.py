"""``mfu-tracker view``: a live page of a metrics log, in the browser.

Owns the page: its document (:mod:`._state`: the log followed as it grows,
each figure with how it was obtained and its formula, :mod:`._figure`), the
head (:mod:`._headline`: MFU, its denominator, the model FLOPs per step), the
frameworks' range (:mod:`._conventions`), the hardware ladder and memory
(:mod:`._hardware`), progress against a budget (:mod:`._progress`), the
sections drawn from the report's plan (:mod:`._sections`), the server
(:mod:`._server`: the standard library's, in a thread; the files in
``assets/``, shipped in the package) and the command (:mod:`._command`).

Every figure is the log's or the report's (:mod:`mfu_tracker.cli.report`):
the page recomputes none; where a formula's inputs are all in the log it
shows the formula applied to them beside the logged value.

:func:`serve` is what ``mfu-tracker run`` starts in its own process (the
training process only writes its log). Layer: cli (may import every layer).
"""
from ._command import add_budget_flags, add_parser
from ._server import ViewServer, serve
from ._state import PageState

__all__ = ["PageState", "ViewServer", "add_budget_flags", "add_parser", "serve"]
