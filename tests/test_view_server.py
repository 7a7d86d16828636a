"""The page's server (``mfu-tracker view``): its routes, its files shipped in
the package (nothing fetched from the network), the command as a person runs
it (the address printed, stopped by a signal), and serve() for a launcher."""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from _view_train import train

from mfu_tracker.cli.view import serve
from mfu_tracker.cli.view._server import ASSETS, asset

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def log(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("serve") / "metrics.jsonl")
    train(path, steps=8, log_every=4)
    return path


def _get(url):
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.status, response.headers["Content-Type"], response.read()


def test_routes(log):
    with serve(log, budget_steps=16) as server:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", server.url)
        status, kind, page = _get(server.url)
        assert status == 200 and kind.startswith("text/html")
        assert b'src="view.js"' in page and b'href="view.css"' in page
        for route in ("/view.js", "/view.css"):
            status, _, body = _get(server.url + route[1:])
            assert status == 200 and body == asset(ASSETS[route][0])
        status, kind, body = _get(server.url + "api/state")
        doc = json.loads(body)
        assert kind == "application/json" and doc["log"]["lines"] == 2
        assert doc["budget"] == {"tokens": None, "steps": 16}
        with pytest.raises(urllib.error.HTTPError, match="404"):
            _get(server.url + "elsewhere")
        port = int(server.url.rsplit(":", 1)[1].strip("/"))
    with socket.socket() as again:            # closed: nothing listens there any more
        again.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)   # (Linux: fails on a listener)
        again.bind(("127.0.0.1", port))


def test_the_page_fetches_nothing_from_the_network():
    text = "".join(asset(name).decode() for name, _ in ASSETS.values())
    assert not re.search(r"(src|href)=\"(https?:)?//", text)
    assert "http://" not in asset("view.js").decode().replace("http://www.w3.org/2000/svg", "")
    assert "import " not in asset("view.js").decode()


def test_the_assets_are_package_data():
    import tomllib

    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "mfu_tracker.cli.view.assets" in setuptools["packages"]
    data = setuptools["package-data"]["mfu_tracker.cli.view.assets"]
    assert sorted(data) == ["*.css", "*.html", "*.js"]
    shipped = {p.suffix for p in (ROOT / "mfu_tracker" / "cli" / "view" / "assets").iterdir()}
    assert shipped <= {".css", ".html", ".js"}                # every asset matches a pattern
    assert "recursive-include mfu_tracker/cli/view/assets" in (ROOT / "MANIFEST.in").read_text()


def test_the_command_prints_its_address_and_stops_on_a_signal(log):
    proc = subprocess.Popen([sys.executable, "-m", "mfu_tracker", "view", log, "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        line = proc.stdout.readline()
        url = re.search(r"at (http://127\.0\.0\.1:\d+/)", line).group(1)
        assert json.loads(_get(url + "api/state")[2])["log"]["path"] == log
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "stopped" in err


def test_a_port_in_use_is_an_error_naming_it(log, capsys):
    from mfu_tracker.cli import main

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(OSError):
            serve(log, port=port)
        assert main(["view", log, "--port", str(port)]) == 2
    assert f"cannot serve on 127.0.0.1:{port}" in capsys.readouterr().err


@pytest.mark.parametrize("kwargs, error, match", [
    ({"budget_steps": 0}, ValueError, "budget_steps must be >= 1, got 0"),
    ({"budget_steps": 2.5}, TypeError, "budget_steps must be an int, not float"),
    ({"budget_steps": True}, TypeError, "budget_steps must be an int, not bool"),
    ({"budget_tokens": -1.0}, ValueError, "budget_tokens must be a finite number >= 1"),
    ({"budget_tokens": float("nan")}, ValueError, "budget_tokens must be a finite number"),
    ({"budget_tokens": "1e9"}, TypeError, "budget_tokens must be a number or None, not str"),
    ({"budget_tokens": 1e9, "budget_steps": 10}, ValueError, "give one budget, not both"),
    ({"port": -1}, ValueError, "port must be between 0 and 65535, got -1"),
    ({"port": "8080"}, TypeError, "port must be an int, not str"),
    ({"host": None}, TypeError, "host must be a str, not NoneType"),
])
def test_bad_arguments_are_named_before_anything_is_served(log, kwargs, error, match):
    with pytest.raises(error, match=re.escape(match)):
        serve(log, **kwargs)


def test_a_log_path_that_is_not_a_path_is_named():
    with pytest.raises(TypeError, match="log_path must be a str or os.PathLike, not int"):
        serve(3)                       # never a file descriptor
    with serve(Path("not-there-yet.jsonl"), budget_tokens=1e9) as server:
        assert server.state.path == "not-there-yet.jsonl"
