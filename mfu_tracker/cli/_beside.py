"""What ``mfu-tracker run`` does beside the command it measures: the live
page while the command runs, the passport when it has ended (docs/run.md,
docs/view.md, docs/passport.md).

Both read only the metrics log the command's processes write: the page is
served from the launcher's process (:func:`mfu_tracker.cli.view.serve`), so
the training processes pay nothing for it beyond the log they write. A page
that cannot be served, or a passport that cannot be made, is one line on
stderr; the command and its exit status are never affected.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from ._launch import note

__all__: List[str] = []


@dataclass(frozen=True)
class Beside:
    """The launcher's own settings (``run``'s flags).

    Attributes:
        view: serve the live page while the command runs.
        host: the page's address (``127.0.0.1``: this machine only).
        port: the page's port (0: a free one, printed).
        budget_tokens: the token budget progress and the ETA are measured against.
        budget_steps: the step budget, instead of tokens.
        passport: write the passport (Markdown and JSON) beside the log at the end.
    """

    view: bool = True
    host: str = "127.0.0.1"
    port: int = 0
    budget_tokens: Optional[float] = None
    budget_steps: Optional[int] = None
    passport: bool = True


def passport_paths(log_path: str) -> Tuple[str, str]:
    """Where the passport of the log ``log_path`` goes: ``passport.md`` and
    ``passport.json`` in the log's folder."""
    folder = os.path.dirname(os.path.abspath(log_path))
    return os.path.join(folder, "passport.md"), os.path.join(folder, "passport.json")


class Page:
    """The live page of one run, served while its command runs."""

    def __init__(self, beside: Beside, log_path: str) -> None:
        self.server: Any = None
        if not beside.view:
            return
        from .view import serve

        try:
            self.server = serve(log_path, host=beside.host, port=beside.port,
                                budget_tokens=beside.budget_tokens,
                                budget_steps=beside.budget_steps)
        except OSError as error:
            note(f"the live page was not served ({error}); `mfu-tracker view {log_path}` "
                 "serves it from another shell")
            return
        note(f"live page: {self.server.url} (open it in a browser; it follows the log)")

    def close(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None


def write_passport(log_path: str) -> Optional[Dict[str, Any]]:
    """The passport of the finished log ``log_path``, written beside it
    (:func:`passport_paths`); its data, or None (one line says why)."""
    from ._passport import passport

    try:
        markdown, data = passport(log_path)
    except Exception as error:  # noqa: BLE001 -- a passport never fails the run
        note(f"no passport: {error}")
        return None
    md_path, json_path = passport_paths(log_path)
    try:
        with open(md_path, "w", encoding="utf-8") as f:
            f.write(markdown)
        with open(json_path, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, allow_nan=False, default=str)
            f.write("\n")
    except OSError as error:
        note(f"the passport was not written ({error}); `mfu-tracker passport {log_path}` "
             "prints it")
        return None
    note(f"passport for the model card: {md_path} (and {os.path.basename(json_path)})")
    return data
