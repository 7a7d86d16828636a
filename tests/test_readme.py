"""Every ```python snippet of README.md runs as written, on a CPU.

The README defines the names its snippets use in one block ("The names the
examples use": ``model``, ``batch``, ``optimizer``, ``loader``,
``dataset``, a tiny GPT-2 from a config, nothing downloaded), and every
other snippet opens with ``# assumes: <names>`` (or ``nothing``). Each
snippet runs, unchanged, in a scratch directory, in a namespace holding
exactly the names it says it assumes, taken from a fresh run of that block:
a snippet that uses a name it does not list fails with a NameError, and a
listed name it does not use fails here. A CPU has no datasheet peak: the
``track()`` snippet must take its ``mfu is None`` branch, and with
``MFU_TRACKER_PEAK_TFLOPS`` set its MFU branch.
"""
from __future__ import annotations

import contextlib
import io
import re
import warnings
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

import mfu_tracker
from mfu_tracker.timing._clock import reset_caches

README = Path(mfu_tracker.__file__).resolve().parent.parent / "README.md"
FENCE = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
SETUP_MARK = "# the names the examples use"
ASSUMES = re.compile(r"^# assumes: (.+)$")


def snippets() -> List[Tuple[str, str]]:
    """(id: the heading above it and its line, code) for each python block."""
    text = README.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        heading = [h for h in re.findall(r"^#+ (.*)$", text[:match.start()], re.MULTILINE)][-1]
        found.append((f"README.md:{line} ({heading})", match.group(1)))
    return found


ALL = snippets()
(SETUP,) = [code for _, code in ALL if code.startswith(SETUP_MARK)]
SNIPPETS = [(where, code) for where, code in ALL if not code.startswith(SETUP_MARK)]


def assumed(code: str) -> List[str]:
    """The names a snippet's first line says it assumes."""
    match = ASSUMES.match(code.splitlines()[0])
    assert match, f"the snippet does not open with '# assumes: ...':\n{code}"
    names = match.group(1).strip()
    return [] if names == "nothing" else [n.strip() for n in names.split(",")]


def _setup() -> Dict[str, Any]:
    namespace: Dict[str, Any] = {}
    torch = __import__("torch")
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(SETUP, "README.md (the names the examples use)", "exec"), namespace)  # noqa: S102
    return namespace


SETUP_NAMES = ("model", "batch", "optimizer", "loader", "dataset")


def _run(code: str, where: str, prepare: Any = None) -> str:
    """The snippet's output; ``prepare(namespace)`` may look at its names first."""
    names = assumed(code)
    setup = _setup() if names else {}
    namespace = {name: setup[name] for name in names}
    if prepare is not None:
        prepare(namespace)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the snippets' own advice (no peak on a CPU, ...)
        exec(compile(code, where, "exec"), namespace)  # noqa: S102 -- the README's own code
    return out.getvalue()


@pytest.fixture(autouse=True)
def _scratch(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MFU_TRACKER_PEAK_TFLOPS", raising=False)
    reset_caches()
    yield
    reset_caches()


def test_the_names_are_defined_in_one_visible_place():
    namespace = _setup()
    assert all(name in namespace for name in SETUP_NAMES)
    assert len(SNIPPETS) >= 8


@pytest.mark.parametrize("where, code", SNIPPETS, ids=[w for w, _ in SNIPPETS])
def test_every_snippet_lists_what_it_assumes_and_uses_it(where, code):
    names = assumed(code)
    assert set(names) <= set(SETUP_NAMES), names
    body = "\n".join(code.splitlines()[1:])
    for name in names:
        assert re.search(rf"\b{name}\b", body), f"{where}: assumes {name} but never uses it"


@pytest.mark.parametrize("where, code", SNIPPETS, ids=[w for w, _ in SNIPPETS])
def test_every_snippet_runs_as_written(where, code):
    _run(code, where)


def test_the_quick_start_prints_an_mfu():
    where, code = SNIPPETS[0]
    assert assumed(code) == [] and "track(" in code
    assert len([line for line in code.splitlines() if line and not line.startswith("#")]) <= 7
    out = _run(code, where)
    # or nothing, on a machine too busy to measure a peak (test_measured_peak.py)
    assert out == "" or re.fullmatch(r"MFU \d+\.\d\d of a measured \d+ GFLOP/s fp32 peak\n", out), out


def test_track_on_a_cpu_prints_no_mfu_and_with_a_peak_prints_it(monkeypatch):
    where, code = next((w, c) for w, c in SNIPPETS if "param_bytes(model)" in c)
    out = _run(code, where)
    assert "MFU needs a peak" in out and "TFLOP/s in" in out, out
    monkeypatch.setenv("MFU_TRACKER_PEAK_TFLOPS", "1.5")
    reset_caches()
    out = _run(code, where)
    assert re.match(r"MFU \d+\.\d{3} of 1\.5 TFLOP/s, \d+ ms", out), out


def test_the_loop_snippet_logs_its_figures(tmp_path):
    where, code = next((w, c) for w, c in SNIPPETS if 'tracker.phase("data")' in c)
    out = _run(code, where).splitlines()
    assert out[0] == "{}"  # the first step: the warm-up one, not measured
    assert "throughput/phase_s/forward" in out[-1]  # no peak on a CPU: no MFU, no shares
    assert (tmp_path / "run" / "metrics.jsonl").read_text().count("\n") >= 2


def test_the_job_snippet_resumes_as_a_restart(tmp_path):
    from mfu_tracker.job import job_ledger, read_log

    where, code = next((w, c) for w, c in SNIPPETS if "start_step=resumed" in c)
    trained: List[List[int]] = []

    def count_batches(namespace: Dict[str, Any]) -> None:
        # which of the loader's batches the model trains on (by position in the loader)
        trained.append([])
        positions = {id(batch["input_ids"]): i for i, batch in enumerate(namespace["loader"])}
        namespace["model"].register_forward_pre_hook(
            lambda module, args, kwargs: trained[-1].append(positions[id(kwargs["input_ids"])]),
            with_kwargs=True)

    _run(code, where, count_batches)
    (tmp_path / "run" / "ckpt.pt").unlink()
    __import__("torch").save({"step": 2}, tmp_path / "run" / "ckpt.pt")   # as if killed after 2
    _run(code, where, count_batches)                    # the same script again: it resumes
    assert trained == [[0, 1, 2, 3], [2, 3]]            # no batch trained twice
    ledger = job_ledger(read_log(str(tmp_path / "run" / "metrics.jsonl")))
    assert [r.start_step for r in ledger.runs] == [0, 2]   # one job of two runs


def test_the_counter_snippet_prints_what_its_comments_say():
    where, code = next((w, c) for w, c in SNIPPETS if "with FlopCounter() as fc" in c)
    out = _run(code, where).splitlines()
    # the counter's model and executed FLOPs, then the analytic count of every matmul:
    # equal, as the comments say (the default formula, palm, reads 23150592: 1.5% more)
    assert out[0] == "22806528 22806528" and "# 22806528 22806528: " in code
    assert out[-1] == "22806528.0" and "# 22806528.0: the same" in code
    assert "reads 23,150,592 here, 1.5% more" in README.read_text(encoding="utf-8")
