"""vLLM's and SGLang's FLOP and byte counters read into MFU and MBU shares.

No engine runs here: the expositions below are written from the engines'
metric definitions -- names, HELP texts, counter type and labels:

* vLLM: vllm/v1/metrics/perf.py ``PerfMetricsProm`` @
  00cee63e04bf5b7dbaa5f08d6e4360f28777fdc3 (``vllm:estimated_flops_per_gpu_total``,
  ``..._read_bytes_...``, ``..._write_bytes_...``; labels ``model_name``,
  ``engine``); prometheus_client adds a ``_created`` sample per counter.
* SGLang: python/sglang/srt/observability/metrics_collector.py
  ``SchedulerMetricsCollector`` @ 016d8605e45876180312e29d6988e1de06562472
  (the same three names under ``sglang:``; labels ``model_name``,
  ``engine_type``, ``tp_rank``, ``pp_rank``, ``moe_ep_rank``).

They are parsed by ours and by prometheus_client's own parser (the reference).
The peak: H100 SXM, 989.4 TFLOP/s dense bf16 and 3.35 TB/s.
"""
from __future__ import annotations

import http.server
import threading
import warnings

import pytest

from _bracket import Bracket

from mfu_tracker import lookup_gpu_spec
from mfu_tracker.cli import main
from mfu_tracker.integrations import engines
from mfu_tracker.integrations.engines import engine_utilization, parse_exposition

H100 = lookup_gpu_spec("H100 SXM")
PEAK, BANDWIDTH = 989.4e12, 3.35e12
DOC = ("Estimated number of floating point operations per GPU (for Model Flops Utilization "
       "calculations).")


def vllm(flops: float, read: float, write: float, stamp: str = "") -> str:
    labels = 'engine="0",model_name="Qwen/Qwen3-8B"'
    out = []
    for what, value, doc in (("flops", flops, DOC),
                             ("read_bytes", read, "Estimated number of bytes read from memory "
                              "per GPU (for Model Flops Utilization calculations)."),
                             ("write_bytes", write, "Estimated number of bytes written to memory "
                              "per GPU (for Model Flops Utilization calculations).")):
        name = f"vllm:estimated_{what}_per_gpu"
        out += [f"# HELP {name}_total {doc}", f"# TYPE {name}_total counter",
                f"{name}_total{{{labels}}} {value!r}{stamp}",
                f"# HELP {name}_created {doc}", f"# TYPE {name}_created gauge",
                f"{name}_created{{{labels}}} 1.7e+09"]
    out.append('vllm:num_requests_running{engine="0",model_name="Qwen/Qwen3-8B"} 12.0')
    return "\n".join(out) + "\n"


def sglang(ranks: dict[int, tuple[float, float, float]]) -> str:
    out = ["# TYPE sglang:estimated_flops_per_gpu_total counter"]
    for rank, (flops, read, write) in ranks.items():
        labels = (f'engine_type="unified",model_name="qwen3",moe_ep_rank="0",pp_rank="0",'
                  f'tp_rank="{rank}"')
        out += [f"sglang:estimated_flops_per_gpu_total{{{labels}}} {flops!r}",
                f"sglang:estimated_read_bytes_per_gpu_total{{{labels}}} {read!r}",
                f"sglang:estimated_write_bytes_per_gpu_total{{{labels}}} {write!r}"]
    return "\n".join(out) + "\n"


@pytest.fixture(autouse=True)
def _fresh_warnings():
    engines._warned.clear()
    yield
    engines._warned.clear()


def test_vllm_two_scrapes_by_hand():
    """10 s: 4.947e15 FLOPs (0.5 x 989.4e12 x 10) and 20.1e12 + 3.35e12 bytes
    (0.7 x 3.35e12 x 10): MFU 0.5, MBU 0.7."""
    a = parse_exposition(vllm(1.0e16, 5.0e13, 1.0e13))
    b = parse_exposition(vllm(1.0e16 + 4.947e15, 5.0e13 + 20.1e12, 1.0e13 + 3.35e12))
    u = engine_utilization(a, b, interval_s=10.0, spec=H100)
    assert u.mfu == pytest.approx(0.5, rel=1e-12)
    assert u.mbu == pytest.approx(0.7, rel=1e-12)
    (series,) = u.series
    assert series.engine == "vllm" and series.labels == {"engine": "0",
                                                         "model_name": "Qwen/Qwen3-8B"}
    assert series.flops_per_sec == pytest.approx(4.947e14)
    assert series.bytes_per_sec == pytest.approx(2.345e12)
    assert (u.peak_flops_per_sec, u.peak_bytes_per_sec) == (PEAK, BANDWIDTH)
    assert str(u).index("MBU") < str(u).index("MFU")


def test_sglang_ranks_average():
    """Two TP ranks: MFU 0.2 and 0.4 -> 0.3; MBU 0.5 and 0.7 -> 0.6."""
    before = {0: (0.0 + 1, 1.0, 1.0), 1: (5.0, 1.0, 1.0)}
    after = {0: (1 + 0.2 * PEAK * 4, 1 + 0.4 * BANDWIDTH * 4, 1 + 0.1 * BANDWIDTH * 4),
             1: (5 + 0.4 * PEAK * 4, 1 + 0.6 * BANDWIDTH * 4, 1 + 0.1 * BANDWIDTH * 4)}
    u = engine_utilization(parse_exposition(sglang(before)), parse_exposition(sglang(after)),
                           interval_s=4.0, spec=H100)
    assert [s.labels["tp_rank"] for s in u.series] == ["0", "1"]
    assert [s.mfu for s in u.series] == [pytest.approx(0.2), pytest.approx(0.4)]
    assert u.mfu == pytest.approx(0.3) and u.mbu == pytest.approx(0.6)


def test_our_parser_reads_what_prometheus_client_reads():
    parser = pytest.importorskip("prometheus_client.parser")
    for text in (vllm(1.5e16, 2.5e13, 7.0e12), sglang({0: (3.0, 4.0, 5.0), 3: (6.0, 7.0, 8.0)})):
        reference = {(s.name, tuple(sorted(s.labels.items()))): s.value
                     for family in parser.text_string_to_metric_families(text)
                     for s in family.samples}
        ours = {key: value for key, (value, _) in parse_exposition(text).samples.items()}
        assert ours == reference


def test_timestamps_give_the_interval():
    a = parse_exposition(vllm(1e15, 1e12, 1e12, " 1700000000000"))
    b = parse_exposition(vllm(1e15 + PEAK * 2.5, 1e12, 1e12 + BANDWIDTH * 2.5, " 1700000002500"))
    u = engine_utilization(a, b, spec=H100)
    assert u.interval_s == 2.5 and u.mfu == pytest.approx(1.0) and u.mbu == pytest.approx(1.0)
    with pytest.raises(ValueError, match="interval_s"):
        engine_utilization(parse_exposition(vllm(1, 1, 1)), parse_exposition(vllm(2, 2, 2)),
                           spec=H100)


def test_resets_and_idle_estimates_give_no_figure_and_say_why():
    reset = engine_utilization(parse_exposition(vllm(9e15, 1e12, 1e12)),
                               parse_exposition(vllm(1e15, 2e12, 2e12)), interval_s=1.0, spec=H100)
    assert reset.mfu is None and reset.mbu == pytest.approx(2e12 / BANDWIDTH)
    assert any("went down" in note and "restarted" in note for note in reset.notes)
    off = engine_utilization(parse_exposition(vllm(0.0, 0.0, 0.0)),
                             parse_exposition(vllm(0.0, 0.0, 0.0)), interval_s=1.0, spec=H100)
    assert off.mfu is None and off.mbu is None
    assert any("--enable-mfu-metrics" in note for note in off.notes)
    with pytest.raises(ValueError, match="no vllm:estimated_flops"):
        engine_utilization(parse_exposition("up 1\n"), parse_exposition("up 1\n"),
                           interval_s=1.0, spec=H100)


def test_above_one_warns_once_unclamped():
    a, b = parse_exposition(vllm(0.0, 1.0, 1.0)), parse_exposition(vllm(2 * PEAK, 1.0, 1.0))
    with pytest.warns(RuntimeWarning, match="engine MFU 2.000 > 1"):
        u = engine_utilization(a, b, interval_s=1.0, spec=H100)
    assert u.mfu == pytest.approx(2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        engine_utilization(a, b, interval_s=1.0, spec=H100)


@pytest.mark.parametrize("text", ["vllm:x{engine=0} 1\n", "vllm:x 1 2 3\n", "vllm:x one\n"])
def test_malformed_lines_are_named(text):
    with pytest.raises(ValueError, match="line 1"):
        parse_exposition(text)


def test_cli_on_two_files(tmp_path, capsys):
    first, second = tmp_path / "a.prom", tmp_path / "b.prom"
    first.write_text(vllm(0.0 + 1, 1.0, 1.0))
    second.write_text(vllm(1 + 0.25 * PEAK * 30, 1 + 0.5 * BANDWIDTH * 30, 1.0))
    assert main(["engine", str(first), str(second), "--interval", "30", "--gpu", "H100 SXM"]) == 0
    out = capsys.readouterr().out
    assert "989.4 TFLOP/s dense bf16" in out and "3.35 TB/s" in out
    assert "MBU 0.5 · MFU 0.25 over 30 s" in out
    assert main(["engine", str(first), "--gpu", "H100 SXM"]) == 2
    assert "one source must be a URL" in capsys.readouterr().err


def test_cli_scrapes_a_url_twice(capsys):
    """A /metrics endpoint whose counter advances between the two scrapes."""
    bodies = [vllm(1.0, 1.0, 1.0).encode(), vllm(1.0 + 1e13, 1.0 + 1e10, 1.0).encode()]

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 -- the http.server API
            body = bodies.pop(0) if len(bodies) > 1 else bodies[0]
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/metrics"
        with Bracket() as bracket:
            assert main(["engine", url, "--interval", "0.2", "--peak-tflops", "1000",
                         "--memory-bandwidth-tbs", "2"]) == 0
    finally:
        server.shutdown()
    out = capsys.readouterr().out
    assert "vllm{engine=0,model_name=Qwen/Qwen3-8B}" in out
    seconds = float(out.split(" over ")[1].split(" s ")[0])  # the fetches' own clock
    assert 0.2 <= seconds <= bracket.s  # slept 0.2 s between them; inside the test's bracket
    mfu = float(out.split("MFU ")[1].split(" ")[0])
    assert mfu == pytest.approx(1e13 / seconds / 1e15, rel=2e-3)  # both printed to 4 digits
