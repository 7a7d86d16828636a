"""The page's server: the standard library's HTTP server in a thread of the
process that serves it (``mfu-tracker view``, or the launcher of
``mfu-tracker run``) -- never the training process, which only writes its
log.

Routes: ``/`` the page, ``/view.js`` and ``/view.css`` its assets (files of
the package, :mod:`mfu_tracker.cli.view` ``assets/``: nothing is fetched
from the network), ``/api/state`` the document (:class:`._state.PageState`),
which the page polls every 2 s. It binds ``127.0.0.1`` by default: the log
names hosts and paths, so it is not served to the network unless asked.
"""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any, Dict, Optional, Tuple

from ..._validate import check_int
from ._state import PageState

__all__ = ["ASSETS", "ViewServer", "serve"]

#: The page's files: route -> (file under assets/, content type).
ASSETS: Dict[str, Tuple[str, str]] = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/index.html": ("index.html", "text/html; charset=utf-8"),
    "/view.js": ("view.js", "text/javascript; charset=utf-8"),
    "/view.css": ("view.css", "text/css; charset=utf-8"),
}
STATE_ROUTE = "/api/state"


def asset(name: str) -> bytes:
    """A file of the page, from the package."""
    return resources.files(__package__).joinpath("assets", name).read_bytes()


class _Handler(BaseHTTPRequestHandler):
    server: "_Server"

    def do_GET(self) -> None:  # noqa: N802 -- http.server's name
        route = self.path.split("?", 1)[0]
        if route == STATE_ROUTE:
            body = json.dumps(self.server.state.snapshot(), allow_nan=False,
                              default=str).encode("utf-8")
            self._send(200, "application/json", body)
        elif route in ASSETS:
            name, kind = ASSETS[route]
            self._send(200, kind, asset(name))
        else:
            self._send(404, "text/plain; charset=utf-8", b"not found\n")

    def _send(self, status: int, kind: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 -- quiet
        return


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: Tuple[str, int], state: PageState):
        self.state = state
        super().__init__(address, _Handler)


class ViewServer:
    """A page served from a thread: :attr:`url`, :attr:`state`, :meth:`close`."""

    def __init__(self, server: _Server):
        self._server = server
        self.state = server.state
        host, port = server.server_address[:2]
        self.url = f"http://{host}:{port}/"
        self._thread = threading.Thread(target=server.serve_forever, name="mfu-tracker view",
                                        daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop serving and free the port."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> "ViewServer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def serve(log_path: str, *, host: str = "127.0.0.1", port: int = 0,
          budget_tokens: Optional[float] = None,
          budget_steps: Optional[int] = None) -> ViewServer:
    """Serve the page of the metrics log ``log_path`` (finished, being
    written, or not yet there) on ``host``:``port`` (0: a free port) from a
    daemon thread; returns the server (:attr:`ViewServer.url`,
    :meth:`ViewServer.close`). ``budget_tokens`` / ``budget_steps``: the
    budget progress and the ETA are measured against. OSError when the port
    cannot be bound; TypeError / ValueError naming a bad argument."""
    if not isinstance(host, str):
        raise TypeError(f"host must be a str, not {type(host).__name__}")
    check_int(port, "port", 0, 65535)
    state = PageState(log_path, budget_tokens=budget_tokens, budget_steps=budget_steps)
    return ViewServer(_Server((host, port), state))
