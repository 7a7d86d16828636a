"""Every ```python snippet of README.md runs as written, on a CPU.

The README says what its snippets assume: ``model`` (a HuggingFace causal
LM), ``batch`` (its inputs, with ``labels``), ``optimizer``, ``loader``
(batches) and ``dataset`` (rows of ``batch``). This harness defines exactly
those -- a tiny GPT-2 (2 layers x 64, from a config: nothing downloaded), a
batch of 2 x 16 tokens, AdamW, three batches, four rows -- and executes each
snippet's text, unchanged, in a fresh namespace inside a scratch directory
(the snippets write ``run/``, ``out/``, ``logs/`` there). A CPU has no
datasheet peak: the first snippet must take its ``mfu is None`` branch, and
with ``MFU_TRACKER_PEAK_TFLOPS`` set its MFU branch.
"""
from __future__ import annotations

import contextlib
import io
import re
import warnings
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
import torch

import mfu_tracker
from mfu_tracker.timing._clock import reset_caches

README = Path(mfu_tracker.__file__).resolve().parent.parent / "README.md"
FENCE = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def snippets() -> List[Tuple[str, str]]:
    """(id: the heading above it and its line, code) for each python block."""
    text = README.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        heading = [h for h in re.findall(r"^#+ (.*)$", text[:match.start()], re.MULTILINE)][-1]
        found.append((f"README.md:{line} ({heading})", match.group(1)))
    return found


SNIPPETS = snippets()


def _harness() -> Dict[str, Any]:
    import transformers

    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=256,
                                     n_positions=32, bos_token_id=0, eos_token_id=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = transformers.GPT2LMHeadModel(config).train()
    ids = torch.randint(0, 256, (2, 16))
    batch = {"input_ids": ids, "labels": ids}
    loader = [batch] + [{"input_ids": i, "labels": i} for i in torch.randint(0, 256, (2, 2, 16))]
    dataset = [{"input_ids": row, "labels": row} for row in torch.randint(0, 256, (4, 16))]
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    # Placeholders a loop snippet may leave to the user's own code (a resumed
    # run's step counter, a checkpoint writer, a logger): defined, doing little.
    placeholders = dict(resumed_step=2, total_steps=4, save_checkpoint=lambda step: None,
                        log=print)
    return dict(model=model, batch=batch, optimizer=optimizer, loader=loader, dataset=dataset,
                **placeholders)


def _run(code: str, where: str) -> str:
    namespace = _harness()
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


def test_the_readme_has_the_snippets_it_says():
    assert len(SNIPPETS) >= 7
    used = set(re.findall(r"\b(model|batch|optimizer|loader|dataset)\b", "".join(c for _, c in SNIPPETS)))
    assert used == {"model", "batch", "optimizer", "loader", "dataset"}


@pytest.mark.parametrize("where, code", SNIPPETS, ids=[w for w, _ in SNIPPETS])
def test_every_snippet_runs_as_written(where, code, tmp_path):
    _run(code, where)


def test_using_it_on_a_cpu_prints_no_mfu_and_with_a_peak_prints_it(monkeypatch):
    where, code = SNIPPETS[0]
    assert "track(" in code
    out = _run(code, where)
    assert "MFU needs a peak" in out and "TFLOP/s in" in out, out
    monkeypatch.setenv("MFU_TRACKER_PEAK_TFLOPS", "1.5")
    reset_caches()
    out = _run(code, where)
    assert re.match(r"MFU \d+\.\d{3} of 1\.5 TFLOP/s, \d+ ms", out), out


def test_the_waterfall_snippet_logs_its_figures(tmp_path):
    where, code = next((w, c) for w, c in SNIPPETS if 'tracker.phase("data")' in c)
    out = _run(code, where).splitlines()
    assert out[0] == "{}"  # the first step: nothing measured yet
    assert "throughput/phase_s/forward" in out[-1]  # no peak on a CPU: no MFU, no shares
    assert (tmp_path / "run" / "metrics.jsonl").read_text().count("\n") >= 1
