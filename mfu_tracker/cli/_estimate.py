"""``mfu-tracker estimate``: MFU from a model (or a parameter count), a
throughput and a GPU.

``--batch-size`` is the global batch (all GPUs); ``--tokens-per-sec`` is the
global throughput. MFU is per GPU: global model FLOP/s / (peak x num_gpus).
"""
from __future__ import annotations

import argparse
import sys
from typing import Any, List, Optional, Sequence

from .._dtypes import normalize_dtype
from ._convention_flags import add_quick_geglu, convention_spec
from ._errors import CliError
from ._flag_types import int_at_least, positive_float
from ._peak_flags import resolve_peak_flags


class _Counted:
    """FLOPs per language token for `estimate`, and how they were counted."""

    def __init__(self, flops_per_token: float, conventions: str, notes: Sequence[str] = (),
                 language_per_token: Optional[float] = None) -> None:
        self.flops_per_token = flops_per_token
        self.conventions = conventions
        self.notes = list(notes)
        self.language_per_token = language_per_token  # VLM: the tower left out


def _grids(texts: Optional[Sequence[str]], flag: str, width: int = 3,
           what: str = "T,H,W") -> Optional[List[List[int]]]:
    """Each row of ``width`` numbers (T,H,W patches; H,W pixels), or NxROW
    for N of them."""
    grids: List[List[int]] = []
    for text in texts or ():
        count, _, grid_text = text.rpartition("x")
        try:
            grid = [int(p) for p in grid_text.split(",")]
            n = int(count) if count else 1
        except ValueError:
            grid, n = [], 0
        if len(grid) != width or min(grid) < 1 or n < 1:
            raise CliError(f"{flag} takes {what} or Nx{what} (each >= 1), got {text!r}")
        grids.extend([grid] * n)
    return grids or None


def _shape(text: Optional[str]) -> Optional[tuple]:
    """--pixel-values: the pixel tensor's shape, e.g. 1,3,896,896."""
    if text is None:
        return None
    try:
        shape = tuple(int(p) for p in text.split(","))
    except ValueError:
        shape = ()
    if len(shape) < 4 or min(shape) < 1:
        raise CliError(f"--pixel-values takes the shape of pixel_values, e.g. 1,3,896,896 "
                       f"(tiles, channels, height, width), got {text!r}")
    return shape


def _params_counted(args: argparse.Namespace) -> _Counted:
    from ..flops._analytic import params_flops

    if args.formula not in (None, "6n"):
        raise CliError("--params gives a bare parameter count: only --formula 6n applies")
    if args.lora_rank is not None:
        raise CliError("--lora-rank applies to --model only (--params counts the frozen base, "
                       "not the adapters)")
    if args.image_grid or args.video_grid or args.pixel_values or args.image_sizes:
        raise CliError("--image-grid / --video-grid / --pixel-values / --image-sizes need "
                       "--model (a VLM config)")
    counted = params_flops(args.params, lora=args.lora)
    return _Counted(counted.flops_per_token, counted.conventions_str)


def _model_counted(args: argparse.Namespace, seq_len: Optional[int]) -> _Counted:
    from ..flops._analytic import transformer_flops
    from ..flops.presets import resolve_model_config

    if seq_len is None:
        raise CliError("--seq-len is needed to count attention FLOPs for --model")
    if args.lora and args.lora_rank is None:
        # transformer_flops() takes LoRA from lora_rank: without it --lora was dropped.
        raise CliError("--lora with --model needs --lora-rank (the adapters' rank)")
    if args.quick_geglu is not None and (args.convention or "").lower() != "megatron":
        raise CliError("--quick-geglu is Megatron-LM's flag: it needs --convention megatron")
    config = resolve_model_config(args.model, argument="--model")
    images = _grids(args.image_grid, "--image-grid")
    videos = _grids(args.video_grid, "--video-grid")
    pixels = _shape(args.pixel_values)
    sizes = _grids(args.image_sizes, "--image-sizes", 2, "H,W")
    counted = transformer_flops(
        config, seq_len=seq_len, batch_size=1, formula=args.formula,
        causal_attention=args.causal_attention,
        lora_rank=args.lora_rank if args.lora else None,
        image_grid_thw=images, video_grid_thw=videos, pixel_values=pixels, image_sizes=sizes,
        convention=convention_spec(args.convention, args.quick_geglu),
    )
    language = counted.language_flops / seq_len if counted.vision_flops else None
    given = bool(images or videos or pixels)
    return _Counted(counted.flops_per_token, counted.conventions_str,
                    _exact_notes(counted) + _tower_notes(counted, given),
                    language_per_token=language)


def _tower_notes(counted: Any, given: bool) -> list[str]:
    """What a VLM's count holds of its vision tower, and how to give images
    (``given``: the command line gave images)."""
    conventions = counted.conventions
    exact = conventions.get("exact")
    tower = exact["tower"] if exact is not None else conventions.get("tower")
    if counted.vision_flops:
        return [f"note: vision tower counted: {conventions['vision']} "
                f"({100 * counted.vision_flops / counted.model_flops:.2f}% of the step; "
                "MFU (language only) leaves it out)"]
    if given:
        return ["note: vision tower NOT counted: the images were given, but the count leaves "
                "the tower out (see conventions)"]
    if not tower:
        return []
    return ["note: vision tower NOT counted: no image given, so FLOP/token and MFU are the "
            "language model's alone; give the batch's images: --pixel-values SHAPE "
            "(fixed-resolution towers; --image-sizes H,W per image where the model takes its "
            "images' sizes) or --image-grid T,H,W (Qwen-VL-style grids)"]


def _exact_notes(counted: Any) -> list[str]:
    """The note of an exact count (a model type without an analytic formula)."""
    exact = counted.conventions.get("exact")
    if exact is None or exact["reason"] != "no formula":
        return []
    return [f"note: model_type {counted.conventions['model_type']!r} has no analytic formula: "
            f"counted exactly instead ({exact['model_class']} on meta, one forward + backward "
            f"of {counted.num_tokens} tokens)"]


_UNITS = (("T", 1e12), ("G", 1e9), ("M", 1e6), ("K", 1e3))


def _flop_text(value: float, top: str = "G") -> str:
    """FLOPs in the largest unit up to ``top`` (G: GFLOP, 2 decimals; T:
    TFLOP, 1) that holds them; below it 4 significant digits in a smaller
    unit, so a small model never reads 0.00."""
    for unit, scale in _UNITS[[u for u, _ in _UNITS].index(top):]:
        if abs(value) >= scale:
            if unit == top:
                return f"{value / scale:,.{ {'T': 1, 'G': 2}[top] }f} {unit}FLOP"
            return f"{value / scale:.4g} {unit}FLOP"
    return f"{value:.4g} FLOP"


def _print_estimate(counted: _Counted, tokens_per_sec: float, num_gpus: int,
                    peak_per_gpu: float, peak_text: str) -> float:
    """The estimate's lines; returns the MFU."""
    from .._native import _C

    out = sys.stdout
    global_flops_per_sec = counted.flops_per_token * tokens_per_sec
    mfu = _C.compute_metrics(global_flops_per_sec, 1.0, peak_flops_per_sec=peak_per_gpu,
                             num_gpus=num_gpus)["mfu"]
    print(f"FLOP/token:            {_flop_text(counted.flops_per_token)}", file=out)
    print(f"tokens/s (global):     {tokens_per_sec:,.0f}", file=out)
    print(f"achieved per GPU:      {_flop_text(global_flops_per_sec / num_gpus, 'T')}/s",
          file=out)
    print(f"MFU:                   {mfu * 100:.2f}%", file=out)
    if counted.language_per_token is not None:
        language = _C.compute_metrics(counted.language_per_token * tokens_per_sec, 1.0,
                                      peak_flops_per_sec=peak_per_gpu, num_gpus=num_gpus)["mfu"]
        print(f"MFU (language only):   {language * 100:.2f}%  (mfu_language: the vision tower "
              f"left out, the lmms-engine convention; "
              f"{_flop_text(counted.language_per_token)}/token)", file=out)
    print(f"peak used (per GPU):   {peak_text}", file=out)
    print(f"GPUs:                  {num_gpus}", file=out)
    print(f"conventions:           {counted.conventions}", file=out)
    for note in counted.notes:
        print(note, file=out)
    return mfu


def run(args: argparse.Namespace) -> int:
    if (args.model is None) == (args.params is None):
        raise CliError("give exactly one of --model (preset, config.json or org/name) and --params")
    dtype = normalize_dtype(args.dtype, "--dtype")
    if args.lora_rank is not None and not args.lora:
        raise CliError("--lora-rank needs --lora")

    if args.tokens_per_sec is not None:
        if args.step_time is not None:
            raise CliError("give --tokens-per-sec or --step-time, not both")
        tokens_per_sec = args.tokens_per_sec
    elif args.step_time is not None:
        if args.batch_size is None or args.seq_len is None:
            raise CliError("--step-time needs --batch-size (global) and --seq-len")
        tokens_per_sec = args.batch_size * args.seq_len / args.step_time
    else:
        raise CliError("give the throughput: --tokens-per-sec, or --step-time with --batch-size and --seq-len")

    # The peak first: a bad --gpu / --dtype is reported before the model is read.
    peak = resolve_peak_flags(args.gpu, args.peak_tflops, dtype)
    counted = (_params_counted(args) if args.params is not None
               else _model_counted(args, args.seq_len))
    counted.notes[:0] = [f"note: {note}" for note in peak.notes]
    if _print_estimate(counted, tokens_per_sec, args.num_gpus, peak.flops_per_sec, peak.text) > 1:
        print("warning: MFU > 1 means the peak or the FLOP count is wrong", file=sys.stderr)
    return 0


def add_parser(sub: Any) -> None:
    """Register ``estimate`` on the command line's subparsers."""
    est = sub.add_parser("estimate", help="MFU from a model, a throughput and a GPU")
    what = est.add_argument_group("model")
    what.add_argument("--model", help="preset name (e.g. llama-3.1-8b), path to a HuggingFace "
                      "config.json, or org/name in the local HF cache")
    what.add_argument("--params", type=positive_float, help="bare parameter count N (6N rule)")
    what.add_argument("--formula", choices=["6n", "palm", "matmul"], help="FLOP formula (default palm for --model)")
    what.add_argument("--convention", help="count as another framework does (verl, veomni, "
                      "megatron, torchtitan, nanogpt); `mfu-tracker explain` itemizes why")
    add_quick_geglu(what)
    what.add_argument("--causal-attention", choices=["full", "half"], default=None,
                      help="count the causal attention square in full (PaLM, default) or half (Megatron)")
    what.add_argument("--lora", action="store_true", help="frozen base weights: no weight-gradient FLOPs")
    what.add_argument("--lora-rank", type=int_at_least(1), default=None, help="adapter rank (adds the adapters' FLOPs)")
    what.add_argument("--image-grid", action="append", metavar="T,H,W",
                      help="a VLM image's grid in patches (an image_grid_thw row), or NxT,H,W for N "
                      "images; repeatable")
    what.add_argument("--pixel-values", metavar="SHAPE",
                      help="the images' pixel_values shape for fixed-resolution towers (Gemma 3, "
                      "Llama 4, LLaVA, SmolVLM, InternVL), e.g. 1,3,896,896 for one tile")
    what.add_argument("--image-sizes", action="append", metavar="H,W",
                      help="an image's height and width in pixels (image_sizes), for towers "
                      "that take them (Mistral 3 / Pixtral, LightOn OCR, LLaVA-NeXT, LFM2-VL), "
                      "or NxH,W for N of them; repeatable, one per image of --pixel-values")
    what.add_argument("--video-grid", action="append", metavar="T,H,W",
                      help="a VLM video's grid in patches (a video_grid_thw row), or NxT,H,W; repeatable")
    hw = est.add_argument_group("hardware")
    hw.add_argument("--gpu", help="device name as in `mfu-tracker gpus` (e.g. B200, 'H100 SXM', MI300X)")
    hw.add_argument("--num-gpus", type=int_at_least(1), default=1)
    hw.add_argument("--dtype", default="bf16")
    hw.add_argument("--peak-tflops", type=positive_float, help="per-GPU peak, overriding the table")
    tp = est.add_argument_group("throughput")
    tp.add_argument("--tokens-per-sec", type=positive_float, help="global tokens per second")
    tp.add_argument("--step-time", type=positive_float, help="seconds per optimizer step")
    tp.add_argument("--batch-size", type=int_at_least(1), help="global batch size (sequences per step, all GPUs)")
    tp.add_argument("--seq-len", type=int_at_least(1), help="tokens per sequence")
    est.set_defaults(func=run)
