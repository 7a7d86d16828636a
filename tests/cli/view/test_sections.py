"""mfu_tracker/cli/view/_sections.py: the page's series, waterfall, ranks,
ledger, kernels and advice, each from the report's plan of a hand-written log."""
from __future__ import annotations

from mfu_tracker.cli.report import load, plan
from mfu_tracker.cli.view._figure import Newest
from mfu_tracker.cli.view._sections import advice, kernels, ledger, ranks, series, waterfall

from cli.report._logs import line, run_record
from cli.view._pages import figures, write


def report(tmp_path, lines):
    return plan(load(str(write(tmp_path / "m.jsonl", lines))))


def test_series_and_the_newest_bar(tmp_path):
    r = report(tmp_path, [run_record(), line(10, mfu=0.25, step_time_s=0.5,
                                             mfu_lost__data=0.5, mfu_lost__other=0.25),
                          line(20, mfu=0.5, step_time_s=0.25, mfu_lost__data=0.25,
                               mfu_lost__other=0.25)])
    s = series(r)
    assert s["mfu"] == [[10, 0.25], [20, 0.5]] and s["step_time_s"] == [[10, 0.5], [20, 0.25]]
    assert s["ofu"] == [] and s["run_starts"] == [[10, 1]]
    w = waterfall(r)
    assert w["step"] == 20 and w["sum"] == 1.0
    shares = {f["id"]: f for f in w["shares"]}
    assert shares["mfu"]["value"] == 0.5 and shares["mfu"]["how"] == "derived"
    assert shares["data"]["how"] == "measured" and shares["other"]["how"] == "derived"
    assert shares["data"]["source"] == "line 3 (step 20): throughput/mfu_lost/data"
    assert w["diagnosis"] == r.diagnosis


def test_without_mfu_the_phases_in_seconds(tmp_path):
    r = report(tmp_path, [run_record(peak=None),
                          line(1, step_time_s=0.5, phase_s__forward=0.125)])
    w = waterfall(r)
    found = {f["id"]: f["value"] for f in w["seconds"]}
    assert found == {"forward": 0.125, "unmarked": 0.375}          # 0.5 - 0.125
    assert w["note"] == r.no_mfu


def test_ranks_absent_for_one_process_and_for_many_without_keys(tmp_path):
    r = report(tmp_path, [run_record(), line(1, mfu=0.5)])
    newest = Newest(r.records, r.prefix)
    assert ranks(r, newest, 1)["absent"].startswith("one process: no per-rank spread")
    assert ranks(r, newest, 8)["absent"].startswith("8 ranks but no per-rank keys")
    r = report(tmp_path, [run_record(), line(1, mfu=0.5, mfu_rank_min=0.25, slowest_rank=3)])
    found = figures(ranks(r, Newest(r.records, r.prefix), 4))
    assert found["mfu_rank_min"]["value"] == 0.25 and found["slowest_rank"]["value"] == 3


def test_ledger_kernels_and_advice(tmp_path):
    r = report(tmp_path, [line(1, mfu=0.5)])          # no run record: no ledger
    assert ledger(r)["absent"].startswith("no job ledger: the log has no run records")
    assert kernels(r)["absent"].startswith("no profiled step")
    r = report(tmp_path, [run_record(), line(5, mfu=0.5, kernel_share__gemm=0.75,
                                             kernel_share__idle=0.25)])
    k = kernels(r)
    assert k["step"] == 5 and [(row["class"], row["share"]) for row in k["rows"]] == \
        [("GEMM", 0.75), ("idle", 0.25)]
    out = advice(r)
    assert set(out) == {"advice", "needs"} and isinstance(out["advice"], list)
    book = ledger(r)
    assert set(figures(book)) >= {"job_wall_s", "job_mfu", "goodput", "badput/startup"}
