"""The panel interface: what one panel of the report does."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from .._model import Report


class Panel:
    """One panel of the report (one matplotlib axis).

    Subclass it in a module of :mod:`mfu_tracker.cli.report.panels` and add
    the instance to ``PANELS``. :meth:`collect` reads the report's records
    (``report.points``: each metrics record with its run number) and returns
    the panel's data, or None when there is nothing to draw (then
    :meth:`absent` says why, in :attr:`Report.missing`). The other methods
    get that data back."""

    #: The panel's name: its data is ``report.data[name]``.
    name = ""

    def collect(self, report: Report) -> Optional[Any]:
        raise NotImplementedError

    def placeholder(self, report: Report) -> bool:
        """Drawn without data, saying what is missing (default: not drawn)."""
        return False

    def absent(self, report: Report) -> Optional[str]:
        """Why the panel has no data (a line of ``missing:``); None: say nothing."""
        return None

    def steps(self, data: Any) -> List[int]:
        """The logged steps this panel draws (the shared x axis); none by default."""
        return []

    def text(self, report: Report, data: Any) -> List[str]:
        """The numbers drawn, printed: ``step=N key=value`` lines under a heading."""
        return []

    def summary(self, report: Report, data: Any) -> List[str]:
        """A line or two a person reads (the default output): the panel's
        latest figures, rounded; :meth:`text` has every number."""
        return []

    def table(self, report: Report, data: Any) -> Dict[int, Dict[str, float]]:
        """The numbers drawn by step, for the HTML page's table (key -> value)."""
        return {}

    def draw(self, ax: Any, report: Report, data: Optional[Any]) -> None:
        """Draw on ``ax`` (``data`` is None only for a :meth:`placeholder`)."""
        raise NotImplementedError
