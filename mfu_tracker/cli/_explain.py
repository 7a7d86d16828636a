"""``mfu-tracker explain``: why another framework's MFU differs from ours.

For a model and a batch, each framework convention's count (verl, VeOmni,
Megatron-LM, torchtitan, nanoGPT: their published formulas, as the C core's
presets reproduce them) beside ours, with the difference itemized choice by
choice (embedding, causal half or full, windows, vision tower, router, MTP,
formula). ``--their-mfu`` turns an MFU a framework logged into ours: for the
same run the step time and the peak are the same, so MFU scales with the
FLOP count.

    mfu-tracker explain --model qwen2.5-7b --seq-len 4096 --convention verl --their-mfu 52
"""
from __future__ import annotations

import argparse
import sys
from typing import Any, List, Optional

from ._errors import CliError
from ._flag_types import int_at_least, positive_float

__all__: List[str] = []


def _count(args: argparse.Namespace, convention: Optional[str]) -> Any:
    from ..flops._analytic import transformer_flops
    from ..flops.presets import resolve_model_config
    from ._estimate import _grids, _shape

    config = resolve_model_config(args.model, argument="--model")
    return transformer_flops(config, seq_len=args.seq_len, batch_size=args.batch_size,
                             image_grid_thw=_grids(args.image_grid, "--image-grid"),
                             pixel_values=_shape(args.pixel_values), convention=convention)


def _pct(share: float) -> str:
    """A share of our count as a signed percentage (4 decimals below 0.01%)."""
    return f"{share * 100:+.4f}%" if 0 < abs(share) < 5e-5 else f"{share:+.2%}"


def _print_convention(f: Any, out: Any) -> None:
    info = f.conventions["convention"]
    ours = info["ours_model_flops"]
    share = (info["model_flops"] - ours) / ours if ours else 0.0
    print(f"{info['name'] + ':':<14}{f.flops_per_token / 1e9:10.3f} GFLOP/token  "
          f"{_pct(share):>8} vs ours   ({info['source']})", file=out)
    shown = [d for d in info["difference"] if d["delta_flops"]]
    for d in shown:
        print(f"  {d['item']:<11} {d['ours']:>9} -> {d['theirs']:<10} "
              f"{_pct(d['delta_share']):>8}   {d['meaning']}", file=out)
    if not shown:
        print("  (the same count for this model and batch)", file=out)


def run(args: argparse.Namespace) -> int:
    from ..flops._conventions import convention_names

    names = [n for n in convention_names() if n != "mfu_tracker"]
    if args.convention is not None and args.convention.lower() not in names:
        raise CliError(f"--convention must be one of {', '.join(names)}, got {args.convention!r}")
    if args.their_mfu is not None and args.convention is None:
        raise CliError("--their-mfu needs --convention (whose formula made that MFU)")
    out = sys.stdout
    first = _count(args, args.convention or names[0])
    tokens = first.num_tokens
    ours = first.conventions["convention"]["ours_model_flops"]
    print(f"model:        {args.model} (model_type {first.conventions['model_type']}), "
          f"{args.batch_size} x {args.seq_len} = {tokens:,} tokens", file=out)
    print(f"{'ours:':<14}{ours / tokens / 1e9:10.3f} GFLOP/token  (mfu_tracker: formula palm, "
          "causal full, embedding excluded, windows as spans, vision tower and MTP counted)",
          file=out)
    for name in [args.convention.lower()] if args.convention else names:
        _print_convention(first if name == (args.convention or names[0]).lower()
                          else _count(args, name), out)
    if args.their_mfu is not None:
        theirs = first.conventions["convention"]["model_flops"]
        print(f"their MFU {args.their_mfu:.2f}% = ours {args.their_mfu * ours / theirs:.2f}% "
              "(the same run: MFU scales with the FLOP count)", file=out)
    return 0


def add_parser(sub: Any) -> None:
    """Register ``explain`` on the command line's subparsers."""
    exp = sub.add_parser("explain", help="why another framework's MFU differs from ours, item "
                         "by item (verl, veomni, megatron, torchtitan, nanogpt)")
    exp.add_argument("--model", required=True, help="preset name, path to a HuggingFace "
                     "config.json, or org/name in the local HF cache")
    exp.add_argument("--seq-len", type=int_at_least(1), required=True,
                     help="tokens per sequence")
    exp.add_argument("--batch-size", type=int_at_least(1), default=1,
                     help="sequences per step")
    exp.add_argument("--convention", help="one framework (default: all of them)")
    exp.add_argument("--their-mfu", type=positive_float, metavar="PCT",
                     help="the MFU (%%) that framework logged, to translate into ours")
    exp.add_argument("--image-grid", action="append", metavar="T,H,W",
                     help="a VLM image's grid in patches (image_grid_thw row); repeatable")
    exp.add_argument("--pixel-values", metavar="SHAPE",
                     help="pixel_values shape for fixed-resolution towers, e.g. 1,3,896,896")
    exp.set_defaults(func=run)
