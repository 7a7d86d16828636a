"""A sampled profiled step on a real CPU training loop (a small GPT-2).

``Tracker(profile_steps=N)``: which steps are profiled, that the rows add up
to the step, that the FLOPs per class are the counter's (and, for GEMMs plus
attention, torch's FlopCounterMode's: an independent count), the log
record and the keys, a compiled model (its fused region, no recompile), the
comparison of eager and compiled in ``report A B``, a user's profiler left
alone, the counter and the communication observer not mistaken for one, a
failure as one warning, the raw trace kept only when asked.
"""
from __future__ import annotations

import json
import math
import re
import warnings

import pytest
import torch

from mfu_tracker import FlopCounter, Tracker
from mfu_tracker.breakdown import _step_profile
from mfu_tracker.breakdown._record import ROWS
from mfu_tracker.breakdown._reduce import reduce_events
from mfu_tracker.breakdown._step_profile import DEFAULT_EVERY, check_profile_steps
from mfu_tracker.breakdown._trace import chrome_trace_events
from mfu_tracker.tracker._profiled import ProfiledTracker
from tests._cli import run_cli
from tests._process_group import process_group

transformers = pytest.importorskip("transformers")

B, S, VOCAB = 2, 32, 256
GEMM_OPS = ("aten.mm", "aten.addmm", "aten.bmm", "aten.baddbmm")


def gpt2():
    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=VOCAB,
                                  n_positions=64, bos_token_id=0, eos_token_id=0)
    return transformers.GPT2LMHeadModel(cfg)


IDS = torch.randint(0, VOCAB, (B, S), generator=torch.Generator().manual_seed(1))


def train_step(model, opt):
    model(input_ids=IDS, labels=IDS).loss.backward()
    opt.step()
    opt.zero_grad()


def run(model, tracker, steps, metrics=None):
    """``steps`` training steps between boundaries; metrics() after each."""
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    tracker.step()
    for _ in range(steps):
        train_step(model, opt)
        tracker.step(num_tokens=B * S)
        out = tracker.metrics()
        if metrics is not None:
            metrics.append(out)


def tracker(**kwargs):
    kwargs.setdefault("dtype", "fp32")
    kwargs.setdefault("peak_tflops", 1.0)   # a made-up CPU peak: shares of it are defined
    return Tracker(1e9, **kwargs)


@pytest.fixture(scope="module")
def eager_log(tmp_path_factory):
    """Six eager steps with profile_steps=3: steps 2 and 5 profiled (warm-up 1)."""
    path = tmp_path_factory.mktemp("eager") / "eager.jsonl"
    metrics = []
    t = tracker(profile_steps=3, warmup=1, log_path=str(path))
    model = gpt2()
    run(model, t, 6, metrics)
    t.close()
    return path, metrics, t.last_breakdown, model


def _records(path, kind):
    return [json.loads(line) for line in open(path) if json.loads(line).get("record") == kind]


def test_profiled_steps_are_the_first_after_warm_up_then_every_n(eager_log):
    path, metrics, last, _ = eager_log
    assert [r["step"] for r in _records(path, "breakdown")] == [2, 5]
    # the keys come once, in the metrics() after each profiled step
    with_keys = [i + 1 for i, m in enumerate(metrics) if "throughput/kernel_step_s" in m]
    assert with_keys == [2, 5]
    assert last.step == 5


def test_the_rows_add_up_to_the_profiled_step(eager_log):
    path, metrics, last, _ = eager_log
    assert math.fsum(last.time_of(row) for row in ROWS) == pytest.approx(last.step_s, rel=1e-9)
    assert math.fsum(last.shares().values()) == pytest.approx(1.0, abs=1e-12)
    assert last.timeline == "host" and last.host_s == pytest.approx(last.step_s)
    for row in ("gemm", "attention", "reduction", "elementwise", "optimizer"):
        assert last.classes[row].count > 0, row
    keys = {k.rsplit("/", 1)[1]: v for k, v in metrics[4].items() if "/kernel_share/" in k}
    assert keys == pytest.approx(last.shares())
    record = _records(path, "breakdown")[-1]
    assert {k: v for k, v in record.items() if k not in ("record", "time")} == last.to_record()


def test_gemm_flops_per_class_are_the_counters(eager_log):
    _, _, last, model = eager_log
    # the same step again, counted by a FlopCounter and by torch's FlopCounterMode
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    with FlopCounter(modules=False) as fc:
        model(input_ids=IDS, labels=IDS).loss.backward()
    opt.zero_grad()
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as fm:
        model(input_ids=IDS, labels=IDS).loss.backward()
    opt.zero_grad()
    gemm = sum(f for name, (_, f) in fc.by_op.items()
               if name in ("aten::mm", "aten::addmm", "aten::bmm"))
    assert last.classes["gemm"].flops == gemm
    # GPT-2's CPU attention runs SDPA's math path: the counter books its
    # forward matmuls to attention (one counted op); FlopCounterMode counts
    # them as the bmm it decomposes into. Together they are the same FLOPs.
    torch_total = sum(v for k, v in fm.get_flop_counts()["Global"].items() if str(k) in GEMM_OPS)
    assert last.classes["gemm"].flops + last.classes["attention"].flops == torch_total


def test_off_by_default_costs_nothing():
    t = tracker()
    assert type(t) is Tracker and t.last_breakdown is None
    assert "step" not in vars(Tracker)           # step() is the C method itself
    p = tracker(profile_steps=2)
    assert type(p) is ProfiledTracker and isinstance(p, Tracker)
    for value in (None, False, 0, []):
        assert type(tracker(profile_steps=value)) is Tracker


@pytest.mark.parametrize("value, error, match", [
    ("5", TypeError, "profile_steps: expected None, a bool, an int or a collection"),
    (1.5, TypeError, "profile_steps: expected"),
    ([3, "x"], TypeError, "profile_steps: step numbers must be ints"),
    ([3, True], TypeError, "profile_steps: step numbers must be ints"),
    (-1, ValueError, "profile_steps: -1 is negative"),
    ([0], ValueError, "profile_steps: step 0 is not a global step number"),
])
def test_bad_profile_steps_are_named(value, error, match):
    with pytest.raises(error, match=match):
        tracker(profile_steps=value)


def test_the_schedule():
    every = check_profile_steps(4)
    # the first step after a warm-up of 2 (from step 0) is 3: then 7, 11, ...
    assert [s for s in range(1, 16) if every.due(s, first=3)] == [3, 7, 11, 15]
    assert [s for s in range(1, 2000) if check_profile_steps(True).due(s, first=2)] == \
        [2, 2 + DEFAULT_EVERY, 2 + 2 * DEFAULT_EVERY, 2 + 3 * DEFAULT_EVERY]
    listed = check_profile_steps([4, 9])
    assert [s for s in range(1, 20) if listed.due(s, first=2)] == [4, 9]


def test_listed_steps_and_a_resumed_run():
    t = tracker(profile_steps=[13], start_step=10, warmup=1)
    run(gpt2(), t, 4)
    t.close()
    assert t.last_breakdown is not None and t.last_breakdown.step == 13


def test_a_users_profiler_is_left_alone_with_one_warning():
    model = gpt2()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    t = tracker(profile_steps=1, warmup=0)      # every step
    t.step()                                    # step 1 opened: profiled
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # the user's profiler starts inside step 1 (kineto's one session is
        # now theirs) and is running at the boundaries closing steps 1 and 2
        # (opening 2 and 3): steps 1 to 3 are left to it
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as user:
            for _ in range(2):
                train_step(model, opt)
                t.step()
        assert t.last_breakdown is None
        for _ in range(2):
            train_step(model, opt)
            t.step()                            # step 4 opened, then closed: profiled
    t.close()
    aside = [w for w in caught if "torch profiler is running" in str(w.message)]
    assert len(aside) == 1, [str(w.message) for w in caught]
    assert "since step 1" in str(aside[0].message)
    assert t.last_breakdown.step == 4
    # the user's own trace is whole: both steps' ops, both optimizer steps
    names = [e.name for e in user.events()]
    assert names.count("aten::addmm") >= 2 * 2 * 4          # 2 steps x 2 layers x >= 4 Conv1D
    assert sum(n.startswith("Optimizer.step#AdamW") for n in names) == 2


def test_the_counter_and_the_communication_observer_are_not_profilers(world_of_one):
    model = gpt2()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    t = tracker(profile_steps=1, warmup=0)
    assert t.observes_communication
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # no step-aside warning
        with FlopCounter(modules=False):
            t.step()
            train_step(model, opt)
            torch.distributed.all_reduce(torch.ones(4))
            t.step()
    t.close()
    b = t.last_breakdown
    assert b is not None and b.classes["communication"].count >= 1


@pytest.fixture
def world_of_one():
    with process_group("gloo", world_size=1) as dist:
        yield dist


def test_a_failure_is_one_warning_and_the_run_goes_on(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("the reduction broke")

    monkeypatch.setattr(_step_profile, "reduce_events", broken)
    t = tracker(profile_steps=1, warmup=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run(gpt2(), t, 4)
    t.close()
    failed = [w for w in caught if "the profiled step failed" in str(w.message)]
    assert len(failed) == 1 and "the reduction broke" in str(failed[0].message)
    assert t.last_breakdown is None and t.summary()["steps"] == 4
    assert not torch.autograd.profiler._is_profiler_enabled       # nothing left running


def test_closing_inside_a_profiled_step_releases_the_profiler():
    t = tracker(profile_steps=1, warmup=0)
    t.step()                                    # step 1 opened and profiled
    assert torch.autograd.profiler._is_profiler_enabled
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t.close()
    assert not torch.autograd.profiler._is_profiler_enabled and t.last_breakdown is None


def test_the_raw_trace_is_kept_only_when_asked(tmp_path):
    t = tracker(profile_steps=[2], warmup=0, profile_trace_dir=str(tmp_path / "traces"))
    run(gpt2(), t, 3)
    t.close()
    b = t.last_breakdown
    assert b.trace == str(tmp_path / "traces" / "step2_rank0.json")
    again = reduce_events(chrome_trace_events(b.trace), timeline="host")
    assert {r: again.classes[r].count for r in again.classes} == \
        {r: b.classes[r].count for r in b.classes}
    assert again.step_s == pytest.approx(b.step_s, abs=1e-8)
    u = tracker(profile_steps=[2], warmup=0)
    run(gpt2(), u, 3)
    assert u.last_breakdown.trace is None
    with pytest.raises(ValueError, match="profile_trace_dir"):
        tracker(profile_trace_dir=__file__)


@pytest.fixture(scope="module")
def compiled_log(tmp_path_factory):
    """The eager fixture's loop on the compiled model: step 3 profiled (the
    first step compiles; warm-up 1); dynamo's graph count around it."""
    from torch._dynamo.utils import counters

    path = tmp_path_factory.mktemp("compiled") / "compiled.jsonl"
    t = tracker(profile_steps=[3], warmup=1, log_path=str(path))
    model = torch.compile(gpt2())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    t.step()
    graphs = []
    for _ in range(4):
        train_step(model, opt)
        t.step(num_tokens=B * S)
        t.metrics()
        graphs.append(counters["stats"]["unique_graphs"])
    t.close()
    return path, t.last_breakdown, graphs


def test_a_compiled_step_books_its_region_as_fused(eager_log, compiled_log):
    _, _, eager, _ = eager_log
    _, compiled, graphs = compiled_log
    assert compiled.step == 3 and compiled.compiled and not eager.compiled
    assert compiled.classes["fused"].count > 0 and eager.classes["fused"].count == 0
    assert math.fsum(compiled.time_of(row) for row in ROWS) == pytest.approx(compiled.step_s,
                                                                             rel=1e-9)
    # inductor fuses GPT-2's elementwise ops into its generated code: the
    # compiled step's elementwise share is below the eager one's
    assert compiled.share("elementwise") < eager.share("elementwise")
    # the counter still counts the compiled step's matmuls: the same FLOPs
    # (inductor decomposes SDPA's math path into bmm, booked as GEMM there)
    def matmul(b):
        return (b.classes["gemm"].flops or 0) + (b.classes["attention"].flops or 0)

    assert compiled.classes["gemm"].flops > 0 and matmul(compiled) == matmul(eager)


def test_the_profiled_step_compiles_nothing_new(compiled_log):
    _, _, graphs = compiled_log
    assert graphs[0] == graphs[1] == graphs[2] == graphs[3]


def test_report_draws_the_breakdown_and_ends_with_advice(eager_log, tmp_path, capsys):
    path, _, last, _ = eager_log
    status, out, _ = run_cli(capsys, "report", str(path), "--out", str(tmp_path / "r.png"),
                             "--numbers")
    assert status == 0 and (tmp_path / "r.png").stat().st_size > 0
    # one line per class of the last profiled step, its share as logged
    for row in ROWS:
        assert f"{row}:" in out or f"{row}=" in out, row
    assert repr(last.share("gemm")) in out
    assert "kernel breakdown: no profiled step" not in out
    assert "what to change" in out.lower()
    # the summary (the default output) names the last profiled step's largest classes
    status, out, _ = run_cli(capsys, "report", str(path), "--out", str(tmp_path / "s.png"))
    assert status == 0 and f"kernel breakdown of the profiled step {last.step}: " in out
    assert "what to change" in out.lower()


def test_report_a_b_shows_eager_against_compiled(eager_log, compiled_log, tmp_path, capsys):
    eager_path, _, eager, _ = eager_log
    compiled_path, compiled, _ = compiled_log
    for out_file in ("ab.png", "ab.html"):
        status, out, _ = run_cli(capsys, "report", str(eager_path), str(compiled_path),
                                 "--out", str(tmp_path / out_file))
        assert status == 0 and (tmp_path / out_file).stat().st_size > 0
    html = (tmp_path / "ab.html").read_text()
    assert html.count("data:image/png;base64,") == 1
    line = next(l for l in out.splitlines() if l.startswith("  elementwise: A="))
    diff = compiled.share("elementwise") - eager.share("elementwise")
    assert f"diff={diff:+.3f}" in line and diff < 0           # rounded to what a share means
    fused = next(l for l in out.splitlines() if l.startswith("  fused: A="))
    assert f"A=0.000 B={compiled.share('fused'):.3f}" in fused
    assert not re.search(r"\.\d{8,}", out), out                     # no raw floats
    status, out, _ = run_cli(capsys, "report", str(eager_path), str(compiled_path),
                             "--out", str(tmp_path / "ab.png"), "--numbers")
    line = next(l for l in out.splitlines() if l.startswith("  elementwise: A="))
    assert status == 0 and f"diff={diff!r}" in line               # --numbers: full precision
    status, _, err = run_cli(capsys, "report", str(eager_path), str(compiled_path),
                             str(eager_path), "--out", str(tmp_path / "x.png"))
    assert status != 0 and "give one log, or two to compare (A B); got 3" in err


def test_advise_on_the_real_log(eager_log, capsys):
    path, _, last, _ = eager_log
    status, out, _ = run_cli(capsys, "advise", str(path))
    assert status == 0
    # eager GPT-2 on CPU: elementwise + reduction is a large share, no
    # compiled region: the compile rule fires with its figures
    fusable = last.share("elementwise") + last.share("reduction")
    lever = "torch.compile: fuse the elementwise and reduction kernels"
    if fusable >= 0.20:
        assert f"{lever} -- evidence: elementwise + reduction {fusable * 100:.1f}%" in out
    else:
        assert lever not in out
    assert out.startswith("what to change (ranked by the most each could return;")


def test_the_example_script_runs_and_shares_a_peak(tmp_path):
    """examples/kernel_breakdown.py (make docs-breakdown's), tiny: the log
    holds breakdowns, and --peak-from takes the other log's peak."""
    from _examples import run_example

    tiny = ["--steps", "4", "--profile-every", "2", "--batch-size", "2", "--seq-len", "16",
            "--hidden", "32", "--layers", "1", "--heads", "2", "--vocab-size", "128"]
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for log, extra in ((a, []), (b, ["--peak-from", str(a)])):
        done = run_example("kernel_breakdown.py", "--log-path", log, *tiny, *extra)
        assert done.returncode == 0, done.stderr[-2000:]
        assert "profiled step 3" in done.stdout     # 4 steps, warm-up 2: step 3 (then 5)
    assert [r["step"] for r in _records(a, "breakdown")] == [3]
    assert _records(b, "run")[0]["peak_tflops"] == _records(a, "run")[0]["peak_tflops"]
    assert _records(b, "run")[0]["peak_source"] == "user"
