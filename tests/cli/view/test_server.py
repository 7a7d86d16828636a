"""mfu_tracker/cli/view/_server.py: the page, its assets and the document
served over HTTP from a thread."""
from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from mfu_tracker.cli.view._server import ASSETS, STATE_ROUTE, asset, serve

from cli.report._logs import line, run_record
from cli.view._pages import write


def get(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, response.headers["Content-Type"], response.read()


def test_routes(tmp_path):
    path = write(tmp_path / "m.jsonl", [run_record(), line(10, mfu=0.25)])
    with serve(str(path)) as server:
        assert server.url.startswith("http://127.0.0.1:") and server.url.endswith("/")
        status, kind, body = get(server.url + STATE_ROUTE.lstrip("/"))
        assert (status, kind) == (200, "application/json")
        assert json.loads(body)["series"]["mfu"] == [[10, 0.25]]
        for route, (name, content_type) in ASSETS.items():
            assert get(server.url + route.lstrip("/")) == (200, content_type, asset(name))
        with pytest.raises(urllib.error.HTTPError) as missing:
            get(server.url + "nothing")
        assert missing.value.code == 404


def test_the_assets_are_the_package_files():
    assert b"<html" in asset("index.html").lower() and asset("view.js") and asset("view.css")
    assert b"http://" not in asset("index.html") and b"https://" not in asset("index.html")


def test_bad_arguments_are_named(tmp_path):
    with pytest.raises(TypeError, match="host must be a str, not int"):
        serve(str(tmp_path / "m.jsonl"), host=127)
    with pytest.raises(ValueError, match="port"):
        serve(str(tmp_path / "m.jsonl"), port=70000)
