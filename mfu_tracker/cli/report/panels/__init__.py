"""The report's panels, top to bottom: one module each, one
:class:`~._base.Panel` instance (``PANEL``) per module.

To add a panel: write ``panels/<name>.py`` with a :class:`~._base.Panel`
subclass (its ``collect`` reads ``report.points``; ``text``, ``table`` and
``draw`` get the data back) and put its ``PANEL`` in :data:`PANELS` where it
belongs in the picture.
"""
from typing import Tuple

from . import hardware, kernels, ledger, mfu, moe, phases, ranks, waterfall
from ._base import Panel

#: The panels in drawing order.
PANELS: Tuple[Panel, ...] = (mfu.PANEL, waterfall.PANEL, phases.PANEL, ranks.PANEL,
                             hardware.PANEL, moe.PANEL, kernels.PANEL, ledger.PANEL)

__all__ = ["PANELS", "Panel"]
