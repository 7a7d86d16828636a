"""mfu_tracker/cli/view (the package): PageState and serve, through the
names it exports."""
from __future__ import annotations

import json
import urllib.request

from mfu_tracker.cli.view import PageState, ViewServer, serve

from cli.report._logs import line, run_record
from cli.view._pages import write


def test_the_exported_state_and_server_agree(tmp_path):
    path = write(tmp_path / "m.jsonl", [run_record(), line(10, mfu=0.375)])
    mfu = {f["id"]: f for f in PageState(str(path)).snapshot()["head"]["figures"]}["mfu"]
    assert mfu["value"] == 0.375 and mfu["source"] == "line 2 (step 10): throughput/mfu"
    server = serve(str(path))
    try:
        assert isinstance(server, ViewServer)
        with urllib.request.urlopen(server.url + "api/state", timeout=10) as response:
            served = json.loads(response.read())
        assert {f["id"]: f for f in served["head"]["figures"]}["mfu"] == mfu
    finally:
        server.close()
