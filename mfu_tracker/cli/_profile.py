"""``mfu-tracker profile``: a full-size model's FLOPs counted exactly on the
meta device, beside the analytic formulas."""
from __future__ import annotations

import argparse
import sys
from typing import Any

from ._errors import CliError
from ._flag_types import int_at_least


def _profile_analytic(config: dict, args: argparse.Namespace, counted: int, tokens: int) -> None:
    """The analytic formulas beside the count (what transformers builds: no
    MTP layers; a VLM's language model, no images)."""
    from ..flops._analytic import transformer_flops
    from ..flops._hf_config import counter_notes, is_supported

    out = sys.stdout
    if not is_supported(config):
        print(f"analytic:              n/a (model_type {config.get('model_type')!r} has no "
              "analytic formula; the count above is exact)", file=out)
        return
    for formula in ("matmul", "palm"):
        try:
            analytic = transformer_flops(config, seq_len=args.seq_len, batch_size=args.batch_size,
                                         formula=formula, causal_attention=args.causal_attention,
                                         num_mtp_layers=0)
        except (ValueError, TypeError) as exc:
            print(f"analytic:              n/a ({exc})", file=out)
            return
        value = analytic.forward_flops if args.forward_only else analytic.model_flops
        label = f"analytic ({formula}):"  # values start in column 24, like the lines above
        print(f"{label:<23}{value:,.0f}  "
              f"({value / tokens / 1e9:,.3f} GFLOP/token; counted / analytic = "
              f"{counted / value:.6f})", file=out)
    for note in counter_notes(config):
        print(f"note: {note}", file=out)


def run(args: argparse.Namespace) -> int:
    from ..flops.presets import resolve_model_config
    from ._model import ModelError, meta_count

    config = resolve_model_config(args.model, argument="--model")
    try:
        fc, model = meta_count(config, batch_size=args.batch_size, seq_len=args.seq_len,
                               causal_attention=args.causal_attention,
                               attn_implementation=args.attn_implementation,
                               forward_only=args.forward_only, audit=True)
    except ModelError as exc:
        raise CliError(str(exc)) from exc
    tokens = args.batch_size * args.seq_len
    model_flops = fc.model_flops
    out = sys.stdout
    attention = getattr(model.config, "_attn_implementation", None) or args.attn_implementation
    print(f"model:                 {args.model} ({type(model).__name__} on meta, "
          f"attention {attention})", file=out)
    print(f"batch:                 {args.batch_size} x {args.seq_len} = {tokens:,} tokens "
          f"({'forward only' if args.forward_only else 'forward + backward'})", file=out)
    print(f"model FLOPs (MFU):     {model_flops:,}  ({model_flops / 1e12:,.2f} TFLOP)", file=out)
    print(f"executed FLOPs (HFU):  {fc.executed_flops:,}", file=out)
    print(f"forward FLOPs:         {fc.forward_flops:,}", file=out)
    print(f"FLOP/token (model):    {model_flops / tokens / 1e9:,.3f} GFLOP", file=out)
    _profile_analytic(config, args, model_flops, tokens)
    if "vision_config" in config:
        print("note: text only: the vision tower did not run (estimate --image-grid counts it)",
              file=out)
    if fc.errors:
        print(f"warning: {fc.errors} op call(s) could not be counted", file=sys.stderr)
    print("", file=out)
    print(fc.table(depth=args.depth), file=out)   # its heading states the conventions
    _print_uncounted(fc.uncounted(), out, show_all=args.list_uncounted)
    return 0


def _print_uncounted(rows: list, out: Any, *, show_all: bool = False, limit: int = 20) -> None:
    """The audit of `profile`: the ops outside the FLOP table that ran with
    nothing counted inside them. The FLOP-heavy ones (marked !), whose FLOPs
    are missing, are listed; the others (views, copies, elementwise ops)
    only with ``--list-uncounted``, up to ``limit``."""
    print("", file=out)
    heavy = [r for r in rows if r.heavy]
    if not heavy:
        print(f"uncounted ops: {len(rows)}, none looks FLOP-heavy (views, copies, elementwise "
              f"ops: no FLOPs are missing above)"
              + ("" if show_all or not rows else "; --list-uncounted lists them"), file=out)
    else:
        print(f"uncounted ops: {len(rows)}, {len(heavy)} look FLOP-heavy: their FLOPs are missing "
              f"above", file=out)
    shown = heavy + ([r for r in rows if not r.heavy][:limit] if show_all else [])
    for r in shown:
        print(f"  {'!' if r.heavy else ' '} {r.name:<54}{r.calls:>8}  "
              f"largest input {list(r.largest_input)}", file=out)
    if show_all and len(rows) > len(shown):
        print(f"    ... and {len(rows) - len(shown)} more", file=out)


def add_parser(sub: Any) -> None:
    """Register ``profile`` on the command line's subparsers."""
    prof = sub.add_parser("profile", help="count a full-size model's FLOPs on the meta device")
    prof.add_argument("--model", required=True,
                      help="preset name (e.g. llama-3.1-8b), path to a HuggingFace config.json, "
                      "or org/name in the local HF cache")
    prof.add_argument("--batch-size", type=int_at_least(1), default=1, help="sequences per step")
    prof.add_argument("--seq-len", type=int_at_least(1), required=True, help="tokens per sequence")
    prof.add_argument("--causal-attention", choices=["full", "half"], default="full",
                      help="count the causal attention square in full (default) or half")
    prof.add_argument("--attn-implementation", default="sdpa",
                      help="transformers attention implementation (default sdpa)")
    prof.add_argument("--forward-only", action="store_true", help="count inference (no backward)")
    prof.add_argument("--depth", type=int_at_least(1), default=3, help="module levels in the table")
    prof.add_argument("--list-uncounted", action="store_true",
                      help="also list the uncounted ops that do not look FLOP-heavy (views, "
                           "copies, elementwise ops)")
    prof.set_defaults(func=run)
