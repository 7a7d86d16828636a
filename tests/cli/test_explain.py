"""``mfu-tracker explain``: a framework's count beside ours, and a logged MFU
turned into ours."""
from __future__ import annotations

import re

import pytest
from _cli import run_cli

from mfu_tracker import transformer_flops
from mfu_tracker.cli._explain import _pct
from mfu_tracker.flops.presets import resolve_model_config


def test_shares_are_signed_percentages_with_places_for_small_ones():
    assert _pct(0.0169) == "+1.69%"
    assert _pct(-0.0521) == "-5.21%"
    assert _pct(-4.2e-5) == "-0.0042%"        # below 0.01%: 4 decimals
    assert _pct(3e-7) == "+3.0e-05%"          # below 0.0001%: 2 significant digits
    assert _pct(0.0) == "+0.00%"


def test_their_mfu_scales_by_the_flop_count(capsys):
    status, out, _ = run_cli(capsys, "explain", "--model", "qwen2.5-7b", "--seq-len", "4096",
                             "--convention", "verl", "--their-mfu", "52")
    assert status == 0
    config = resolve_model_config("qwen2.5-7b")
    ours = transformer_flops(config, seq_len=4096, batch_size=1)
    theirs = transformer_flops(config, seq_len=4096, batch_size=1, convention="verl")
    # the same run, the same step time and peak: MFU_ours = MFU_theirs x ours / theirs
    expected = 52 * ours.model_flops / theirs.model_flops
    assert f"their MFU 52.00% = ours {expected:.2f}%" in out
    line = re.search(r"^verl:\s+([\d.]+) GFLOP/token\s+([+-][\d.]+)% vs ours", out, re.M)
    assert float(line.group(1)) == pytest.approx(theirs.flops_per_token / 1e9, abs=5e-4)
    share = (theirs.model_flops - ours.model_flops) / ours.model_flops
    assert line.group(2) == f"{share * 100:+.2f}"
    assert f"1 x 4096 = 4,096 tokens" in out


def test_packed_lengths_are_counted_as_given(capsys):
    status, out, _ = run_cli(capsys, "explain", "--model", "qwen2.5-7b",
                             "--seq-lens", "1500,700,2048", "--convention", "megatron")
    assert status == 0
    assert "3 packed sequences (1500, 700, 2048) = 4,248 tokens" in out    # 1500 + 700 + 2048


@pytest.mark.parametrize("args, error", [
    (["--seq-len", "8", "--convention", "nosuch"], "--convention must be one of"),
    (["--seq-len", "8", "--their-mfu", "50"], "--their-mfu needs --convention"),
    (["--seq-len", "8", "--convention", "verl", "--quick-geglu", "on"],
     "--quick-geglu is Megatron-LM's flag"),
    ([], "give --seq-len (with --batch-size) or --seq-lens"),
    (["--seq-len", "8", "--seq-lens", "8"], "give --seq-len (with --batch-size) or --seq-lens"),
])
def test_bad_flags_are_named(capsys, args, error):
    status, out, err = run_cli(capsys, "explain", "--model", "qwen2.5-7b", *args)
    assert status == 2 and out == "" and error in err
