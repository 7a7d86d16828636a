"""`mfu-tracker profile`: counts a model built on meta next to the analytic formula."""
from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from mfu_tracker.cli import main  # noqa: E402
from mfu_tracker.flops import transformer_flops  # noqa: E402
from mfu_tracker.presets import load_preset  # noqa: E402

TINY_LLAMA = {
    "model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 128,
    "tie_word_embeddings": False,
}


def _field(text: str, label: str) -> int:
    match = re.search(rf"^{re.escape(label)}\s+([\d,]+)", text, re.M)
    assert match, (label, text)
    return int(match.group(1).replace(",", ""))


def _run(capsys, *argv: str) -> str:
    assert main(["profile", *argv]) == 0
    return capsys.readouterr().out


def test_profile_config_json_matches_the_matmul_formula(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(TINY_LLAMA))
    out = _run(capsys, "--model", str(path), "--batch-size", "2", "--seq-len", "16")
    analytic = transformer_flops(TINY_LLAMA, seq_len=16, batch_size=2, formula="matmul")
    # = 3 x forward; forward = 5,505,024 (tests/test_counter_zoo.py, hand arithmetic)
    assert _field(out, "model FLOPs (MFU):") == int(analytic.model_flops) == 16_515_072
    assert _field(out, "forward FLOPs:") == 5_505_024
    assert "counted / analytic = 1.000000" in out
    assert "analytic (palm):" in out
    assert "layers.*" in out and "lm_head" in out  # the per-module table
    assert "FLOP/token (model):" in out
    # the conventions once: in the table's heading
    assert out.count("attention model backward = 2x forward") == 1
    # the audit: what ran uncounted (views, norms, softmax: none FLOP-heavy), not listed
    listed = re.search(r"^uncounted ops: (\d+), none looks FLOP-heavy .*--list-uncounted lists "
                       r"them$", out, re.M)
    assert listed and int(listed.group(1)) > 0
    assert not re.search(r"largest input \[", out)
    out = _run(capsys, "--model", str(path), "--batch-size", "2", "--seq-len", "16",
               "--list-uncounted")
    assert re.search(r"^\s+aten::(mul|add|view)\s+\d+\s+largest input \[", out, re.M)
    assert not re.search(r"^\s+aten::(mm|bmm|addmm|linear|matmul)\s+\d+\s+largest", out, re.M)


def test_profile_marks_flop_heavy_uncounted_ops():
    import io

    from mfu_tracker.cli._profile import _print_uncounted
    from mfu_tracker.counter import UncountedOp

    out = io.StringIO()
    _print_uncounted([UncountedOp("mylib::attn", 2, (4, 8), True),
                      UncountedOp("aten::add", 5, (4, 8), False),
                      UncountedOp("aten::view", 3, (4, 8), False)], out, show_all=True, limit=1)
    assert out.getvalue().splitlines()[1:] == [
        "uncounted ops: 3, 1 look FLOP-heavy: their FLOPs are missing above",
        f"  ! {'mylib::attn':<54}{2:>8}  largest input [4, 8]",
        f"    {'aten::add':<54}{5:>8}  largest input [4, 8]",
        "    ... and 1 more",
    ]
    out = io.StringIO()                      # without --list-uncounted: the heavy one only
    _print_uncounted([UncountedOp("mylib::attn", 2, (4, 8), True),
                      UncountedOp("aten::add", 5, (4, 8), False)], out)
    assert out.getvalue().splitlines()[1:] == [
        "uncounted ops: 2, 1 look FLOP-heavy: their FLOPs are missing above",
        f"  ! {'mylib::attn':<54}{2:>8}  largest input [4, 8]"]


def test_profile_forward_only_and_half(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(TINY_LLAMA))
    full = _run(capsys, "--model", str(path), "--batch-size", "2", "--seq-len", "16",
                "--forward-only")
    half = _run(capsys, "--model", str(path), "--batch-size", "2", "--seq-len", "16",
                "--forward-only", "--causal-attention", "half")
    # attention forward 2 layers x 2*b*h*s*s*(d_qk + d_v) = 262,144; half of it goes
    assert _field(full, "model FLOPs (MFU):") == 5_505_024
    assert _field(full, "model FLOPs (MFU):") - _field(half, "model FLOPs (MFU):") == 131_072
    assert "counted / analytic = 1.000000" in half


def test_profile_gpt2_preset(capsys):
    out = _run(capsys, "--model", "gpt2", "--batch-size", "1", "--seq-len", "128")
    analytic = transformer_flops(load_preset("gpt2"), seq_len=128, batch_size=1, formula="matmul")
    assert _field(out, "model FLOPs (MFU):") == int(analytic.model_flops)


@pytest.mark.parametrize("argv, message", [
    (["--model", "no-such-model", "--seq-len", "8"], "neither a preset"),
    (["--model", "gpt2", "--seq-len", "0"], "argument --seq-len: must be an integer >= 1"),
    (["--model", "gpt2", "--seq-len", "8", "--depth", "0"], "--depth"),
])
def test_profile_errors(capsys, argv, message):
    assert main(["profile", *argv]) == 2
    assert message in capsys.readouterr().err
