"""``mfu-tracker report``: a picture of a run's MFU, from its metrics log.

Owns the report: reading its input (:mod:`._load`), the plan of what to draw
(:mod:`._plan`: the runs chosen, the peak, the caveat, each panel's data),
the panels (:mod:`.panels`, one module each), the numbers printed
(:mod:`._text`), the picture (:mod:`._render`: PNG or self-contained HTML)
and the command (:mod:`._command`).

Input (:func:`load`):

* a JSONL file written by ``log_path=`` (records:
  :mod:`mfu_tracker.job._records`): the runs that appended to it (one run
  record each), their metrics lines and ledger intervals;
* a directory of TensorBoard event files (or one event file), e.g. written by
  HF Trainer's TensorBoard callback with :class:`~mfu_tracker.MFUCallback`:
  scalar tags are the metric keys, the Trainer's ``train/`` prefix removed,
  and the event step is the step (one run, no records).

Which run: the last one by default; ``--run N`` (1 = the file's first) or
``--run all``, each run drawn as its own line with its start marked. The
output says how many runs the file holds.

The panels, top to bottom (:data:`.panels.PANELS`; keys from
:mod:`mfu_tracker.timing._metrics`, never spelled here; ``{p}`` is the metric
prefix, found from the MFU key):

1. :mod:`.panels.mfu` -- MFU over steps (``{p}/mfu``, the tracker's *window*
   MFU), the step time on a second axis, the peak and its source, and the
   caveat when the peak was measured on a busy machine;
2. :mod:`.panels.waterfall` -- one stacked bar per logged step, MFU then each
   ``{p}/mfu_lost/<cause>`` share (causes in the order they first appear);
   each bar is as high as its printed ``sum``;
3. :mod:`.panels.phases` -- without MFU (no peak): the phases in seconds
   instead of the waterfall;
4. :mod:`.panels.ranks` -- per-rank MFU when present;
5. :mod:`.panels.hardware` -- when the log has the GPM keys: MFU against
   ``{p}/hw/tensor_active``, MBU against ``{p}/hw/dram_bw_util``; the
   waterfall's compute share is annotated with them;
6. :mod:`.panels.ledger` -- the job ledger when the log has run records.

**Adding a panel**: a module in :mod:`.panels` with a
:class:`~.panels._base.Panel` subclass (``collect`` its data from the
:class:`Report`'s records, the ``text`` lines of its numbers, ``draw`` it on
one matplotlib axis), appended to :data:`.panels.PANELS`. Nothing else
changes: :func:`plan`, the printed numbers, the PNG and the HTML go through
the list.

Every number drawn is also printed (``--numbers``), ``key=value`` with
Python's round-trip float repr, and one diagnosis line names the largest
loss. A value that cannot be drawn (not a finite number, a negative MFU or
time) is named as ``file:line`` and left out. Missing keys: what exists is
drawn and the rest is named in :attr:`Report.missing`. Output ``.png`` or
``.html``. Needs matplotlib, the ``[report]`` extra.
"""
from ._command import add_parser, run
from ._load import ReportError, load
from ._plan import Report, plan
from ._render import render
from ._text import numbers_text

__all__ = ["ReportError", "Report", "add_parser", "load", "plan", "numbers_text", "render", "run"]
