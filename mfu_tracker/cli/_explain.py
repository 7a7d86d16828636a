"""``mfu-tracker explain``: why another framework's MFU differs from ours.

For a model and a batch (``--seq-len`` x ``--batch-size``, or the packed
lengths ``--seq-lens``), each framework convention's count (verl, VeOmni,
Megatron-LM, torchtitan, nanoGPT: their published formulas, as the C core's
presets reproduce them) beside ours, with the difference itemized: the
choices (embedding, causal half or full, windows, vision tower, router,
MTP, formula) and the quirks of the framework's formula for the model type,
each by name with its share. A framework without a formula for the model
type says what it logs instead. ``--their-mfu`` turns an MFU a framework
logged into ours: for the same run the step time and the peak are the same,
so MFU scales with the FLOP count.

    mfu-tracker explain --model qwen2.5-7b --seq-len 4096 --convention verl --their-mfu 52
    mfu-tracker explain --model config.json --seq-lens 1500,700,2048 --convention megatron
"""
from __future__ import annotations

import argparse
import sys
from typing import Any, Dict, List, Optional, Tuple

from ._convention_flags import add_quick_geglu, convention_spec
from ._errors import CliError
from ._flag_types import int_at_least, positive_float, seq_lens

__all__: List[str] = []


def _batch(args: argparse.Namespace) -> Dict[str, Any]:
    if (args.seq_len is None) == (args.seq_lens is None):
        raise CliError("give --seq-len (with --batch-size) or --seq-lens (packed lengths)")
    if args.seq_lens is not None:
        return {"seq_lens": args.seq_lens}
    return {"seq_len": args.seq_len, "batch_size": args.batch_size}


def _count(args: argparse.Namespace, convention: Optional[str]) -> Any:
    from ..flops._analytic import transformer_flops
    from ..flops.presets import resolve_model_config
    from ._estimate import _grids, _shape

    config = resolve_model_config(args.model, argument="--model")
    return transformer_flops(config, image_grid_thw=_grids(args.image_grid, "--image-grid"),
                             pixel_values=_shape(args.pixel_values),
                             convention=convention_spec(convention, args.quick_geglu),
                             **_batch(args))


def _pct(share: float) -> str:
    """A share of our count as a signed percentage (4 decimals below 0.01%,
    two significant digits below 0.0001%)."""
    if 0 < abs(share) < 5e-7:
        return f"{share * 100:+.1e}%"
    return f"{share * 100:+.4f}%" if 0 < abs(share) < 5e-5 else f"{share:+.2%}"


def _print_convention(f: Any, out: Any) -> None:
    info = f.conventions["convention"]
    ours = info["ours_model_flops"]
    share = (info["model_flops"] - ours) / ours if ours else 0.0
    print(f"{info['name'] + ':':<14}{f.flops_per_token / 1e9:10.3f} GFLOP/token  "
          f"{_pct(share):>8} vs ours   ({info['source']}, {info['function']})", file=out)
    shown = [d for d in info["difference"] if d["delta_flops"]]
    for d in shown:
        if d["kind"] == "quirk":
            print(f"  quirk: {d['meaning']}: {_pct(d['delta_share'])}   ({d['source']})",
                  file=out)
        else:
            print(f"  {d['item']:<11} {d['ours']:>9} -> {d['theirs']:<10} "
                  f"{_pct(d['delta_share']):>8}   {d['meaning']}", file=out)
    if not shown:
        print("  (the same count for this model and batch)", file=out)


def _batch_text(args: argparse.Namespace, tokens: int) -> str:
    if args.seq_lens is not None:
        lengths = ", ".join(str(n) for n in args.seq_lens)
        return f"{len(args.seq_lens)} packed sequences ({lengths}) = {tokens:,} tokens"
    return f"{args.batch_size} x {args.seq_len} = {tokens:,} tokens"


def run(args: argparse.Namespace) -> int:
    from ..flops._conventions import convention_names

    names = [n for n in convention_names() if n != "mfu_tracker"]
    if args.convention is not None and args.convention.lower() not in names:
        raise CliError(f"--convention must be one of {', '.join(names)}, got {args.convention!r}")
    if args.their_mfu is not None and args.convention is None:
        raise CliError("--their-mfu needs --convention (whose formula made that MFU)")
    if args.quick_geglu is not None and (args.convention or "megatron").lower() != "megatron":
        raise CliError("--quick-geglu is Megatron-LM's flag: it applies to --convention megatron")
    counted: List[Tuple[str, Any]] = []
    for name in [args.convention.lower()] if args.convention else names:
        try:
            counted.append((name, _count(args, name)))
        except ValueError as exc:  # the framework has no formula for the model type
            if args.convention is not None:
                raise CliError(str(exc)) from None
            counted.append((name, f"no count: {exc}"))
    out = sys.stdout
    ours = _count(args, None)
    print(f"model:        {args.model} (model_type {ours.conventions['model_type']}), "
          f"{_batch_text(args, ours.num_tokens)}", file=out)
    print(f"{'ours:':<14}{ours.flops_per_token / 1e9:10.3f} GFLOP/token  (mfu_tracker: formula "
          "palm, causal full, embedding excluded, windows as spans, vision tower and MTP "
          "counted)", file=out)
    for name, theirs in counted:
        if isinstance(theirs, str):
            print(f"{name + ':':<14}{theirs}", file=out)
        else:
            _print_convention(theirs, out)
    if args.their_mfu is not None:
        ratio = ours.model_flops / counted[0][1].model_flops
        print(f"their MFU {args.their_mfu:.2f}% = ours {args.their_mfu * ratio:.2f}% "
              "(the same run: MFU scales with the FLOP count)", file=out)
    return 0


def add_parser(sub: Any) -> None:
    """Register ``explain`` on the command line's subparsers."""
    exp = sub.add_parser("explain", help="why another framework's MFU differs from ours, item "
                         "by item (verl, veomni, megatron, torchtitan, nanogpt)")
    exp.add_argument("--model", required=True, help="preset name, path to a HuggingFace "
                     "config.json, or org/name in the local HF cache")
    exp.add_argument("--seq-len", type=int_at_least(1), help="tokens per sequence")
    exp.add_argument("--batch-size", type=int_at_least(1), default=1,
                     help="sequences per step (with --seq-len)")
    exp.add_argument("--seq-lens", type=seq_lens, metavar="S1,S2,...",
                     help="the real lengths of a packed (or padded) batch, e.g. 1500,700,2048")
    exp.add_argument("--convention", help="one framework (default: all of them)")
    exp.add_argument("--their-mfu", type=positive_float, metavar="PCT",
                     help="the MFU (%%) that framework logged, to translate into ours")
    add_quick_geglu(exp)
    exp.add_argument("--image-grid", action="append", metavar="T,H,W",
                     help="a VLM image's grid in patches (image_grid_thw row); repeatable")
    exp.add_argument("--pixel-values", metavar="SHAPE",
                     help="pixel_values shape for fixed-resolution towers, e.g. 1,3,896,896")
    exp.set_defaults(func=run)

