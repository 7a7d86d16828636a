"""The ``mfu-tracker`` command line reproduces published worked examples.

Each expected figure has its hand arithmetic beside it, and its source
(Lambda's MFU paper, an MFU explainer, lmms-engine's reference) named there.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from _cli import field, run_cli

import mfu_tracker.cli


def test_lambda_llama_3_1_8b_on_one_b200(capsys):
    # Lambda appendix: FLOP/token = 6(N - N_emb) + 12*L*H*Q*S with N = 8,030,261,248,
    # N_emb = 128,256 * 4,096 = 525,336,576, L = 32, H = 32, Q = 128, S = 8,192:
    #   6 * 7,504,924,672 = 45,029,548,032; 12 * 32 * 32 * 128 * 8192 = 12,884,901,888
    #   total 57,914,449,920 = 57.91 GFLOP (the paper prints 57.93; its inputs give 57.91)
    # x 21,111 tokens/s = 1,222.6 TFLOP/s; / 2,250 TFLOP/s (B200 dense bf16) = 54.34%
    status, out, _ = run_cli(capsys, "estimate", "--model", "llama-3.1-8b", "--gpu", "B200",
                             "--seq-len", "8192", "--tokens-per-sec", "21111")
    assert status == 0
    assert field(out, "FLOP/token") == "57.91 GFLOP"
    assert field(out, "achieved per GPU").startswith("1,222.6 TFLOP/s")
    assert field(out, "MFU") == "54.34%"
    assert "2250 TFLOP/s dense bf16" in field(out, "peak used (per GPU)")
    assert "palm" in field(out, "conventions")


def test_explainer_7b_on_8_h100_sxm(capsys):
    # tokens/s = 8 * 4096 / 1.2 = 27,306.7 (global batch 8); 6N = 4.2e10 FLOP/token
    # achieved = 4.2e10 * 27,306.7 = 1.1469e15 FLOP/s = 143.4 TFLOP/s per GPU
    # MFU = 1.1469e15 / (8 * 989.4e12) = 14.49% ("about 14.5%")
    status, out, _ = run_cli(capsys, "estimate", "--params", "7e9", "--gpu", "H100 SXM",
                             "--num-gpus", "8", "--batch-size", "8", "--seq-len", "4096",
                             "--step-time", "1.2")
    assert status == 0
    assert field(out, "FLOP/token") == "42.00 GFLOP"
    assert field(out, "tokens/s (global)") == "27,307"
    assert field(out, "achieved per GPU").startswith("143.4 TFLOP/s")
    assert field(out, "MFU") == "14.49%"


@pytest.mark.parametrize("lora, expected", [(False, "0.80%"), (True, "0.53%")])
def test_mi300x_405b_full_and_lora(capsys, lora, expected):
    # 8 MI300X at 1.3 PFLOP/s as the discussion assumes, global batch 16, seq 64, 30 s/step.
    # full:  6 * 405e9 * 16 * 64 / 30 / (8 * 1.3e15) = 7.97e-3 -> 0.80%
    # LoRA:  frozen base drops the weight-gradient matmuls: 4 * 405e9 ... -> 5.32e-3 -> 0.53%
    argv = ["estimate", "--params", "405e9", "--gpu", "MI300X", "--num-gpus", "8",
            "--batch-size", "16", "--seq-len", "64", "--step-time", "30", "--peak-tflops", "1300"]
    if lora:
        argv.append("--lora")
    status, out, _ = run_cli(capsys, *argv)
    assert status == 0
    assert field(out, "MFU") == expected
    assert "given by --peak-tflops" in field(out, "peak used (per GPU)")


@pytest.mark.parametrize("extra, message", [
    (["--model", "llama-3.1-8b", "--lora"], "--lora-rank"),
    (["--model", "llama-3.1-8b", "--lora-rank", "16"], "needs --lora"),
    (["--params", "7e9", "--lora", "--lora-rank", "16"], "--model only"),
])
def test_lora_flags_are_never_silently_ignored(capsys, extra, message):
    # `--model X --lora` without --lora-rank once printed the full-training
    # count (57.91 GFLOP/token for llama-3.1-8b) as if LoRA applied.
    status, out, err = run_cli(capsys, "estimate", *extra, "--gpu", "B200", "--seq-len", "8192",
                               "--tokens-per-sec", "21111")
    assert status == 2 and out == ""
    assert message in err


def test_lmms_engine_qwen2_5_vl_images_both_mfus(capsys):
    # The lmms-engine MFU table's image row (Qwen2.5-VL-7B, 32 A800-SXM4,
    # "ViT FLOPs not included"): one sample of 2,560 tokens with a 896 x 896
    # image (64 x 64 patches, 1,024 image tokens). Language model: 6N with
    # N_c = 7,070,619,136 (the 7.6 B model less its 545 M embedding table)
    # + 12 * 28 * 28 * 128 * 2,560 = 45.51 GFLOP/token; the tower adds 6.62.
    # At 76,789 tokens/s over 32 x 312 TFLOP/s the table's convention reads
    # 45.51e9 * 76,789 / 9.984e15 = 35.00%; with the tower 52.12e9: 40.09%.
    status, out, _ = run_cli(capsys, "estimate", "--model", "qwen2.5-vl-7b", "--gpu",
                             "A800 SXM4 80GB", "--num-gpus", "32", "--seq-len", "2560",
                             "--image-grid", "1,64,64", "--tokens-per-sec", "76789")
    assert status == 0
    assert field(out, "FLOP/token") == "52.12 GFLOP"
    assert field(out, "MFU") == "40.09%"
    assert field(out, "MFU (language only)").startswith("35.00%")
    assert "45.51 GFLOP/token" in field(out, "MFU (language only)")


def test_mi300x_datasheet_peak_by_default(capsys):
    # Without --peak-tflops the table's dense bf16 1,307.4 TFLOP/s is used:
    # 6 * 405e9 * 16 * 64 / 30 / (8 * 1307.4e12) = 7.93e-3 -> 0.79%
    status, out, _ = run_cli(capsys, "estimate", "--params", "405e9", "--gpu", "MI300X",
                             "--num-gpus", "8", "--batch-size", "16", "--seq-len", "64",
                             "--step-time", "30")
    assert status == 0
    assert field(out, "MFU") == "0.79%"
    assert "1307.4 TFLOP/s dense bf16" in field(out, "peak used (per GPU)")


def test_causal_half_lowers_flops_per_token(capsys):
    # Halving the causal square removes 6 * L * H * Q * S = 6,442,450,944 FLOP/token:
    # 57,914,449,920 - 6,442,450,944 = 51,471,998,976 -> 51.47 GFLOP
    status, out, _ = run_cli(capsys, "estimate", "--model", "llama-3.1-8b", "--gpu", "B200",
                             "--seq-len", "8192", "--tokens-per-sec", "21111",
                             "--causal-attention", "half")
    assert status == 0
    assert field(out, "FLOP/token") == "51.47 GFLOP"
    assert "half" in field(out, "conventions")


def test_config_json_path_is_accepted(capsys, tmp_path):
    from mfu_tracker.presets import load_preset

    path = tmp_path / "config.json"
    path.write_text(json.dumps(load_preset("llama-3.1-8b")))
    status, out, _ = run_cli(capsys, "estimate", "--model", str(path), "--gpu", "B200",
                             "--seq-len", "8192", "--tokens-per-sec", "21111")
    assert status == 0
    assert field(out, "MFU") == "54.34%"


def test_gpus_table_lists_reference_rows(capsys):
    status, out, _ = run_cli(capsys, "gpus")
    assert status == 0
    rows = {line.split("  ")[0].strip(): line for line in out.splitlines()}
    h100 = next(line for name, line in rows.items() if "H100" in name and "SXM" in name)
    assert "989.4" in h100
    assert any("MI300X" in name for name in rows)
    assert "Sources" in out


def test_gpus_detect_on_a_cpu_machine(capsys):
    status, out, _ = run_cli(capsys, "gpus", "--detect")
    assert status == 0
    assert "no CUDA/ROCm device" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["estimate", "--params", "7e9", "--gpu", "H100 SXM", "--tokens-per-sec", "1000",
          "--dtype", "bf17"], "--dtype"),
        (["estimate", "--params", "7e9", "--gpu", "H100 SXM"], "throughput"),
        (["estimate", "--params", "7e9", "--gpu", "Voodoo 5", "--tokens-per-sec", "1"], "Voodoo 5"),
        (["estimate", "--params", "7e9", "--gpu", "B200", "--tokens-per-sec", "-5"], "--tokens-per-sec"),
        (["estimate", "--params", "7e9", "--gpu", "B200", "--tokens-per-sec", "5",
          "--num-gpus", "0"], "--num-gpus"),
        (["estimate", "--params", "7e9", "--gpu", "B200", "--tokens-per-sec", "5",
          "--peak-tflops", "nan"], "--peak-tflops"),
        (["estimate", "--model", "no-such-model", "--gpu", "B200", "--seq-len", "8",
          "--tokens-per-sec", "5"], "no-such-model"),
        (["estimate", "--params", "7e9", "--model", "gpt2", "--gpu", "B200",
          "--tokens-per-sec", "5"], "exactly one"),
        (["estimate", "--params", "7e9", "--gpu", "A100 SXM4 80GB", "--tokens-per-sec", "5",
          "--dtype", "fp8"], "fp8"),
    ],
)
def test_bad_input_exits_2_with_a_message(capsys, argv, message):
    status, _, err = run_cli(capsys, *argv)
    assert status == 2
    assert message in err


def test_console_entry_points_run():
    out = subprocess.run([sys.executable, "-m", "mfu_tracker", "estimate", "--params", "7e9",
                          "--gpu", "H100 SXM", "--num-gpus", "8", "--batch-size", "8",
                          "--seq-len", "4096", "--step-time", "1.2"],
                         capture_output=True, text=True, check=True).stdout
    assert "14.49%" in out


def test_the_package_exports_the_entry_point_and_the_passport():
    from mfu_tracker.cli._main import main as parser_main
    from mfu_tracker.cli._passport import passport

    assert mfu_tracker.cli.__all__ == ["main", "passport"]
    assert mfu_tracker.cli.main is parser_main and mfu_tracker.cli.passport is passport


def test_python_dash_m_runs_the_command_line():
    proc = subprocess.run([sys.executable, "-m", "mfu_tracker", "estimate", "--params", "1e9",
                           "--peak-tflops", "100", "--tokens-per-sec", "1000"],
                          capture_output=True, text=True, timeout=120)
    # 6 x 1e9 x 1000 = 6e12 FLOP/s over 1e14: MFU 6.00%
    assert proc.returncode == 0, proc.stderr
    assert field(proc.stdout, "MFU") == "6.00%"
