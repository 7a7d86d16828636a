"""Shared bits of the examples: a tiny model from a config, synthetic batches,
and the peak on a machine without a datasheet row (a measured one, labelled)."""
from __future__ import annotations

import os
import sys
from typing import Optional

import torch

MODELS = ("gpt2-tiny", "llama-tiny", "gpt2")

#: Where the examples write (logs, checkpoints): under the checkout's build/,
#: which git ignores, so running them leaves a clean tree.
OUTPUT_ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           "build", "examples")


def output_dir(name: str) -> str:
    """The default output directory of example ``name`` (under OUTPUT_ROOT)."""
    return os.path.join(OUTPUT_ROOT, name)


def build_model(name: str, *, attn: str = "sdpa") -> torch.nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    if name == "gpt2-tiny":
        config = GPT2Config(n_embd=128, n_layer=2, n_head=4, vocab_size=1024, n_positions=1024)
        return GPT2LMHeadModel._from_config(config, attn_implementation=attn)
    if name == "llama-tiny":
        config = LlamaConfig(hidden_size=128, intermediate_size=344, num_hidden_layers=2,
                             num_attention_heads=4, num_key_value_heads=2, vocab_size=1024,
                             max_position_embeddings=1024)
        return LlamaForCausalLM._from_config(config, attn_implementation=attn)
    if name == "gpt2":  # GPT-2 124M, from its config (random weights; nothing downloaded)
        return GPT2LMHeadModel._from_config(GPT2Config(), attn_implementation=attn)
    raise SystemExit(f"unknown --model {name!r}; choose from {', '.join(MODELS)}")


def batch(model: torch.nn.Module, batch_size: int, seq_len: int, device: torch.device) -> dict:
    ids = torch.randint(0, model.config.vocab_size, (batch_size, seq_len), device=device)
    return {"input_ids": ids, "labels": ids}


def default_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def ensure_peak(device: torch.device, dtype: str = "fp32") -> str:
    """The peak's label; on a device without a datasheet row (a CPU), measure a
    GEMM peak once and hand it to the library through MFU_TRACKER_PEAK_TFLOPS.
    On a machine too busy to measure one, no peak: MFU is n/a."""
    from mfu_tracker import PeakMeasurementError, get_gpu_spec, measure_peak_flops

    if os.environ.get("MFU_TRACKER_PEAK_TFLOPS"):
        return f"user peak {os.environ['MFU_TRACKER_PEAK_TFLOPS']} TFLOP/s"
    if device.type == "cuda":
        spec = get_gpu_spec(device)
        if spec.has_peak(dtype):
            return f"datasheet peak {spec.peak_tflops(dtype):.1f} TFLOP/s ({spec.name}, {dtype})"
    try:
        measured = measure_peak_flops("fp32", device=str(device), duration_s=0.2) / 1e12
    except PeakMeasurementError as refused:
        print(refused, file=sys.stderr)
        return "no peak: the machine was too busy to measure one (MFU n/a)"
    os.environ["MFU_TRACKER_PEAK_TFLOPS"] = f"{measured:.6g}"
    os.environ[MEASURED_ON] = str(device)
    return f"MEASURED {device.type} fp32 GEMM peak {measured:.4g} TFLOP/s (not a datasheet figure)"


#: Set by ensure_peak when it measured the peak: the device it measured.
MEASURED_ON = "MFU_EXAMPLE_PEAK_MEASURED_ON"


def recheck_peak() -> Optional[str]:
    """After training, a peak ensure_peak measured is measured again (as
    `make run` does): a GEMM timed while other work held the cores reads low,
    and MFU against it high. A line saying whether the two agree; None when
    nothing was measured."""
    from mfu_tracker import PeakMeasurementError, measure_peak_flops
    from mfu_tracker.peaks._measure import how_far_off, peak_disagrees

    device = os.environ.get(MEASURED_ON)
    if not device:
        return None
    first = float(os.environ["MFU_TRACKER_PEAK_TFLOPS"])
    try:
        again = measure_peak_flops("fp32", device=device, duration_s=0.2) / 1e12
    except PeakMeasurementError:
        return "note: the peak was not measured again after training: the machine was busy"
    if not peak_disagrees(first, again):
        return f"peak re-measured after training: {again:.4g} TFLOP/s (within 25% of the first)"
    if again > first:
        return (f"note: the peak measured {first:.4g} TFLOP/s before training and {again:.4g} "
                f"after: the machine was busy during the first; against {again:.4g} the MFU "
                f"above reads {how_far_off(again / first)}")
    return (f"note: the peak measured {first:.4g} TFLOP/s before training and {again:.4g} "
            f"after: the machine was busy during the second; the MFU above is against the "
            f"higher, {first:.4g}")


def print_recheck() -> None:
    """Print :func:`recheck_peak`'s line, when the peak was measured."""
    line = recheck_peak()
    if line:
        print(line)
