"""A two-rank torchrun job (gloo, CPU) serves every rank's gauges; its text, read
by prometheus_client's parser, and a real Prometheus scraping it, with PromQL,
answer what the tracker logged.

The job (scripts/prom_worker.py) serves every rank's gauges from rank 0 and
logs its metrics to a JSONL file; the test starts Debian's ``prometheus``
binary with a scrape config for that port (``honor_labels: true``, as the
docs say), waits for a scrape of the last values, and runs PromQL over its
HTTP API: each result must equal the last logged line (the job's gauges and
the rank spread exactly, the mean to float64 rounding). Then every panel
query of the shipped Grafana dashboard (docs/grafana/mfu-tracker.json) runs
against the same Prometheus and must return data.

The served text is checked without the server wherever torchrun runs; the
PromQL tests are skipped, with the reason, where no ``prometheus`` binary is
on PATH (`make test`'s set-up installs Debian's package when it runs as root
with the package index reachable, as CI does).
"""
from __future__ import annotations

import json
import math
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("prometheus_client")

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).resolve().parent / "scripts" / "prom_worker.py"
TORCHRUN = Path(sys.executable).with_name("torchrun")
DASHBOARD = ROOT / "docs" / "grafana" / "mfu-tracker.json"
PROMETHEUS = shutil.which("prometheus")
JOB, PREFIX = "prom-test", "throughput"

pytestmark = pytest.mark.skipif(not TORCHRUN.exists(), reason="torchrun not installed")
NEEDS_PROMETHEUS = pytest.mark.skipif(
    PROMETHEUS is None, reason="no prometheus binary on PATH (Debian: apt-get install "
    "prometheus; make test's set-up installs it when run as root)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(what: str, ready, timeout_s: float = 240.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = ready()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


class Prometheus:
    """A prometheus server scraping ``target`` every second."""

    def __init__(self, tmp: Path, target: str) -> None:
        self.port = _free_port()
        config = tmp / "prometheus.yml"
        config.write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            "scrape_configs:\n  - job_name: mfu_tracker\n    honor_labels: true\n"
            f"    static_configs:\n      - targets: ['{target}']\n")
        self.log = open(tmp / "prometheus.log", "w")
        self.proc = subprocess.Popen(
            [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tmp / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
            stdout=self.log, stderr=subprocess.STDOUT)

    def get(self, path: str, **params) -> dict:
        url = f"http://127.0.0.1:{self.port}{path}?{urllib.parse.urlencode(params, doseq=True)}"
        with urllib.request.urlopen(url, timeout=10) as reply:
            body = json.loads(reply.read().decode())
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> list:
        return self.get("/api/v1/query", query=expr)["result"]

    def value(self, expr: str) -> float:
        (sample,) = self.query(expr)
        return float(sample["value"][1])

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(the endpoint's port, the last logged metrics line, a scratch folder) once
    every rank's last metrics() ran; the job serves until the module is done."""
    tmp = tmp_path_factory.mktemp("prom")
    port = _free_port()
    # one series per rank asked for, beside the quantiles over ranks served by default
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT),
               MFU_TRACKER_METRICS_PER_RANK="1")
    job = subprocess.Popen([str(TORCHRUN), "--nproc_per_node=2", f"--master_port={_free_port()}",
                            str(WORKER), str(tmp), str(port)], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        _wait("the job's last metrics()", lambda: all((tmp / f"done.rank{r}").exists()
                                                      for r in (0, 1)) or job.poll() is not None)
        assert job.poll() is None, job.stdout.read().decode()[-4000:]
        lines = [json.loads(line) for line in (tmp / "metrics.jsonl").read_text().splitlines()]
        last = [line for line in lines if "record" not in line][-1]
        yield port, last, tmp
    finally:
        (tmp / "stop").write_text("stop\n")
        try:
            job.wait(timeout=120)
        except subprocess.TimeoutExpired:
            job.kill()
            job.wait()
        job.stdout.close()


@pytest.fixture(scope="module")
def scraped(served):
    """(Prometheus, the last logged metrics line) once the last values are scraped."""
    port, last, tmp = served
    server = Prometheus(tmp, f"127.0.0.1:{port}")
    try:
        def scraped_last():
            try:
                return server.query(f'mfu_tracker_step{{job="{JOB}"}} == {last["step"]}')
            except OSError:            # not listening yet
                return None

        _wait("a scrape of the last values", scraped_last, timeout_s=120)
        yield server, last
    finally:
        server.close()


def test_the_served_text_holds_every_ranks_series(served):
    """The endpoint's text as a scrape reads it, parsed by prometheus_client's
    parser (no Prometheus server): one series per rank, labelled job / rank /
    prefix, whose spread is the logged one."""
    from prometheus_client.parser import text_string_to_metric_families

    port, last, _ = served
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as reply:
        text = reply.read().decode()
    rank = {}    # gauge -> {rank: value}
    job = {}     # gauge -> value
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = sample.labels
            if sample.name.startswith("mfu_tracker_ranks_"):   # quantiles: tested below
                assert set(labels) == {"job", "rank", "prefix", "quantile"}, sample
                continue
            assert set(labels) == {"job", "rank", "prefix"}, sample
            assert (labels["job"], labels["prefix"]) == (JOB, PREFIX), sample
            if sample.name.startswith("mfu_tracker_rank_"):
                rank.setdefault(sample.name, {})[int(labels["rank"])] = sample.value
            else:
                assert labels["rank"] == "0", sample          # served by rank 0
                job[sample.name] = sample.value
    assert job["mfu_tracker_step"] == last["step"]
    for key in ("mfu", "step_time_s", "mfu_rank_min", "mfu_rank_max", "slowest_rank"):
        assert job["mfu_tracker_" + key] == last[f"{PREFIX}/{key}"], key
    for name in ("mfu", "step_time_s", "step_time_interval_s", "tokens_per_sec",
                 "achieved_tflops", "phase_s_data", "phase_s_forward", "phase_s_optimizer"):
        assert sorted(rank[f"mfu_tracker_rank_{name}"]) == [0, 1], name   # every rank
    mfu = rank["mfu_tracker_rank_mfu"]
    assert min(mfu.values()) == last[f"{PREFIX}/mfu_rank_min"]
    assert max(mfu.values()) == last[f"{PREFIX}/mfu_rank_max"]
    assert math.fsum(mfu.values()) / 2 == pytest.approx(last[f"{PREFIX}/mfu_rank_mean"],
                                                        rel=1e-12)
    # the job's pace is the slowest rank's mean period; the slowest rank has the most
    # host seconds per step (rank 1, which sleeps twice as long in its forward, unless
    # the machine held rank 0 up for longer: the served series say which)
    assert max(rank["mfu_tracker_rank_step_time_s"].values()) == last[f"{PREFIX}/step_time_s"]
    interval = rank["mfu_tracker_rank_step_time_interval_s"]
    assert max(interval, key=lambda r: (interval[r], -r)) == last[f"{PREFIX}/slowest_rank"]
    assert max(interval.values()) == last[f"{PREFIX}/step_time_rank_max"]
    # each rank's tokens/s: 256 tokens over its own mean period
    for r, seconds in rank["mfu_tracker_rank_step_time_s"].items():
        assert rank["mfu_tracker_rank_tokens_per_sec"][r] == pytest.approx(256 / seconds,
                                                                           rel=1e-12)


def sel(name: str, **labels: str) -> str:
    matchers = {"job": JOB, "prefix": PREFIX, **labels}
    return name + "{" + ", ".join(f'{k}="{v}"' for k, v in matchers.items()) + "}"


@NEEDS_PROMETHEUS
def test_promql_returns_the_job_figures_the_tracker_logged(scraped):
    prom, last = scraped
    for key in ("mfu", "step_time_s", "tokens_per_sec", "achieved_tflops", "mfu_rank_min",
                "mfu_rank_max", "slowest_rank", "mfu_lost/data", "phase_s/forward"):
        gauge = "mfu_tracker_" + key.replace("/", "_")
        assert prom.value(sel(gauge)) == last[f"{PREFIX}/{key}"], key
    assert prom.value(sel("mfu_tracker_step")) == last["step"]


@NEEDS_PROMETHEUS
def test_promql_over_the_rank_series_gives_the_logged_spread(scraped):
    prom, last = scraped
    ranks = prom.query(sel("mfu_tracker_rank_mfu"))
    assert sorted(s["metric"]["rank"] for s in ranks) == ["0", "1"]          # every rank, served
    assert prom.value(f"min({sel('mfu_tracker_rank_mfu')})") == last[f"{PREFIX}/mfu_rank_min"]
    assert prom.value(f"max({sel('mfu_tracker_rank_mfu')})") == last[f"{PREFIX}/mfu_rank_max"]
    assert prom.value(f"avg({sel('mfu_tracker_rank_mfu')})") == pytest.approx(
        last[f"{PREFIX}/mfu_rank_mean"], rel=1e-12)
    # the job's pace: the slowest rank's mean period
    assert prom.value(f"max({sel('mfu_tracker_rank_step_time_s')})") == last[f"{PREFIX}/step_time_s"]
    # the slowest rank: the most host seconds per step (rank 1 sleeps twice as long,
    # unless the machine held rank 0 up for longer: the series say which)
    (top,) = prom.query(f"topk(1, {sel('mfu_tracker_rank_step_time_interval_s')})")
    assert int(top["metric"]["rank"]) == last[f"{PREFIX}/slowest_rank"]
    assert prom.value(f"max({sel('mfu_tracker_rank_step_time_interval_s')})") == \
        last[f"{PREFIX}/step_time_rank_max"]


@NEEDS_PROMETHEUS
def test_promql_over_the_rank_quantiles_gives_the_logged_spread(scraped):
    """The quantiles over ranks, served by default: 0 and 1 are the logged
    min and max; with two ranks the median is their mean (to rounding)."""
    prom, last = scraped

    def q(name, quantile):
        return prom.value(f'mfu_tracker_ranks_{name}{{job="{JOB}", prefix="{PREFIX}", '
                          f'quantile="{quantile}"}}')

    assert q("mfu", "0") == last[f"{PREFIX}/mfu_rank_min"]
    assert q("mfu", "1") == last[f"{PREFIX}/mfu_rank_max"]
    assert q("mfu", "0.5") == pytest.approx(last[f"{PREFIX}/mfu_rank_mean"], rel=1e-12)
    assert q("step_time_s", "1") == last[f"{PREFIX}/step_time_s"]
    assert q("step_time_interval_s", "1") == last[f"{PREFIX}/step_time_rank_max"]


@NEEDS_PROMETHEUS
def test_every_dashboard_panel_query_returns_data(scraped):
    prom, _ = scraped
    dashboard = json.loads(DASHBOARD.read_text())
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    # the variables' label_values() queries, as the Prometheus API answers them
    assert JOB in prom.get("/api/v1/label/job/values", **{"match[]": "mfu_tracker_step"})
    assert PREFIX in prom.get("/api/v1/label/prefix/values",
                              **{"match[]": f'mfu_tracker_step{{job="{JOB}"}}'})
    assert set(variables) == {"job", "prefix"}
    exprs = [(panel["title"], target["expr"]) for panel in dashboard["panels"]
             for target in panel["targets"]]
    assert len(exprs) >= 9
    # the dashboard reads what is served by default: no series per rank
    assert not [expr for _, expr in exprs if "mfu_tracker_rank_" in expr]
    for title, expr in exprs:
        resolved = expr.replace("$job", JOB).replace("$prefix", PREFIX)
        assert "$" not in resolved, (title, expr)
        assert prom.query(resolved), f"panel {title!r}: {resolved} returned no data"
