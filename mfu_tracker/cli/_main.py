"""The ``mfu-tracker`` command line (also ``python -m mfu_tracker``).

    mfu-tracker gpus [--detect]
    mfu-tracker estimate --model llama-3.1-8b --gpu B200 --seq-len 8192 --tokens-per-sec 21111
    mfu-tracker estimate --params 7e9 --gpu "H100 SXM" --num-gpus 8 \\
        --batch-size 8 --seq-len 4096 --step-time 1.2
    mfu-tracker profile --model llama-3.1-8b --batch-size 1 --seq-len 8192
    mfu-tracker doctor [--device N] [--json FILE] [--quick]

``--batch-size`` is the global batch (all GPUs); ``--tokens-per-sec`` is the
global throughput. MFU is per GPU: global model FLOP/s / (peak x num_gpus).
"""
from __future__ import annotations

import argparse
import math
import sys
from typing import Any, List, Optional, Sequence

from .._dtypes import normalize_dtype
from ..peaks._table import GPUSpec, get_gpu_spec, gpu_spec_table, lookup_gpu_spec

# Nothing to import: ``main`` is the ``mfu-tracker`` console script's entry
# point (pyproject.toml), run as a program, not a library function.
__all__: List[str] = []

_TABLE_DTYPES = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8", "fp4")


class CliError(Exception):
    """A user error on the command line: printed as one line, exit status 2."""


def _format_tflops(spec: GPUSpec, dtype: str) -> str:
    return f"{spec.peak_tflops(dtype):g}" if spec.has_peak(dtype) else "-"


def _print_table(specs: Sequence[GPUSpec]) -> None:
    out = sys.stdout  # looked up at call time, so redirection (capsys, contextlib) works
    header = f"{'device':<28}" + "".join(f"{d:>9}" for d in _TABLE_DTYPES) + f"{'TB/s':>7}  SMs"
    print("Dense peak TFLOP/s per dtype ('-': the hardware has none), memory bandwidth, SM/CU count", file=out)
    print(header, file=out)
    for spec in specs:
        row = f"{spec.name:<28}" + "".join(f"{_format_tflops(spec, d):>9}" for d in _TABLE_DTYPES)
        print(f"{row}{spec.peak_memory_bandwidth_tbs:>7.2f}  {spec.num_sms}", file=out)


def _cmd_gpus(args: argparse.Namespace) -> int:
    if not args.detect:
        specs = gpu_spec_table()
        _print_table(specs)
        print("\nSources (one datasheet per row):")
        for spec in specs:
            print(f"  {spec.name}: {spec.citation}")
        return 0
    import torch

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count == 0:
        print("no CUDA/ROCm device visible to torch; MFU on this machine needs a peak given by "
              "--peak-tflops / MFU_TRACKER_PEAK_TFLOPS or a measured one (measured_gpu_spec)")
        return 0
    for index in range(count):
        spec = get_gpu_spec(torch.device("cuda", index))
        props = torch.cuda.get_device_properties(index)
        print(f"cuda:{index}: {props.name} (SMs {props.multi_processor_count}, "
              f"{props.total_memory / 2**30:.1f} GiB) -> {spec.name} [{spec.source}]")
        if spec.peak_flops_by_dtype:
            _print_table([spec])
    return 0


def _resolve_gpu(args: argparse.Namespace, dtype: str) -> tuple[Optional[GPUSpec], float, str]:
    """(spec, per-GPU peak FLOP/s, description of where the peak came from)."""
    spec: Optional[GPUSpec] = None
    if args.gpu:
        spec = lookup_gpu_spec(args.gpu)
        if spec is None and args.peak_tflops is None:
            raise CliError(f"--gpu {args.gpu!r}: not in the peak table (see `mfu-tracker gpus`); "
                           "give --peak-tflops")
    if args.peak_tflops is not None:
        if not (math.isfinite(args.peak_tflops) and args.peak_tflops > 0):
            raise CliError(f"--peak-tflops must be a finite number > 0, got {args.peak_tflops}")
        return spec, args.peak_tflops * 1e12, f"{args.peak_tflops:g} TFLOP/s {dtype} (given by --peak-tflops)"
    if spec is None:
        raise CliError("give --gpu NAME or --peak-tflops to set the MFU denominator")
    if not spec.has_peak(dtype):
        spec.peak_tflops(dtype)  # raises ValueError listing the dtypes it has
    return spec, spec.peak_flops_per_sec(dtype), (
        f"{spec.peak_tflops(dtype):g} TFLOP/s dense {dtype}, {spec.name} (datasheet: {spec.citation})"
    )


class _Counted:
    """FLOPs per language token for `estimate`, and how they were counted."""

    def __init__(self, flops_per_token: float, conventions: str, notes: Sequence[str] = (),
                 language_per_token: Optional[float] = None) -> None:
        self.flops_per_token = flops_per_token
        self.conventions = conventions
        self.notes = list(notes)
        self.language_per_token = language_per_token  # VLM: the tower left out


def _grids(texts: Optional[Sequence[str]], flag: str) -> Optional[List[List[int]]]:
    """Each T,H,W (patches), or NxT,H,W for N of them."""
    grids: List[List[int]] = []
    for text in texts or ():
        count, _, grid_text = text.rpartition("x")
        try:
            grid = [int(p) for p in grid_text.split(",")]
            n = int(count) if count else 1
        except ValueError:
            grid, n = [], 0
        if len(grid) != 3 or min(grid) < 1 or n < 1:
            raise CliError(f"{flag} takes T,H,W or NxT,H,W (patches, each >= 1), got {text!r}")
        grids.extend([grid] * n)
    return grids or None


def _params_counted(args: argparse.Namespace) -> _Counted:
    from ..flops._analytic import params_flops

    if not (math.isfinite(args.params) and args.params > 0):
        raise CliError(f"--params must be a finite parameter count > 0, got {args.params}")
    if args.formula not in (None, "6n"):
        raise CliError("--params gives a bare parameter count: only --formula 6n applies")
    if args.lora_rank is not None:
        raise CliError("--lora-rank applies to --model only (--params counts the frozen base, "
                       "not the adapters)")
    if args.image_grid or args.video_grid:
        raise CliError("--image-grid / --video-grid need --model (a VLM config)")
    counted = params_flops(args.params, lora=args.lora)
    return _Counted(counted.flops_per_token, counted.conventions_str)


def _meta_counted(config: dict, args: argparse.Namespace, seq_len: int) -> _Counted:
    """The exact meta count, for a model_type the analytic formula lacks."""
    from ._model import ModelError, meta_count

    if args.lora or args.image_grid or args.video_grid or args.formula not in (None, "matmul"):
        raise CliError(f"model_type {config.get('model_type')!r} has no analytic formula; its "
                       "exact meta count takes no --lora, --formula or grids")
    try:
        fc, model = meta_count(config, batch_size=1, seq_len=seq_len,
                               causal_attention=args.causal_attention)
    except ModelError as exc:
        raise CliError(str(exc)) from exc
    note = (f"note: model_type {config.get('model_type')!r} has no analytic formula: "
            f"counted exactly instead ({type(model).__name__} on meta, one forward + backward "
            f"of {seq_len} tokens)")
    return _Counted(fc.model_flops / seq_len, fc.conventions, [note])


def _model_counted(args: argparse.Namespace, seq_len: Optional[int]) -> _Counted:
    from ..flops._analytic import transformer_flops
    from ..flops._hf_config import is_supported
    from ..flops.presets import resolve_model_config

    if seq_len is None:
        raise CliError("--seq-len is needed to count attention FLOPs for --model")
    if args.lora and args.lora_rank is None:
        # transformer_flops() takes LoRA from lora_rank: without it --lora was dropped.
        raise CliError("--lora with --model needs --lora-rank (the adapters' rank)")
    config = resolve_model_config(args.model)
    if not is_supported(config) and isinstance(config.get("model_type"), str):
        return _meta_counted(config, args, seq_len)
    images = _grids(args.image_grid, "--image-grid")
    videos = _grids(args.video_grid, "--video-grid")
    counted = transformer_flops(
        config, seq_len=seq_len, batch_size=1, formula=args.formula or "palm",
        causal_attention=args.causal_attention,
        lora_rank=args.lora_rank if args.lora else None,
        image_grid_thw=images, video_grid_thw=videos,
    )
    language = counted.language_flops / seq_len if counted.vision_flops else None
    return _Counted(counted.flops_per_token, counted.conventions_str, language_per_token=language)


def _print_estimate(counted: _Counted, tokens_per_sec: float, num_gpus: int,
                    peak_per_gpu: float, peak_text: str) -> float:
    """The estimate's lines; returns the MFU."""
    from .. import _C

    out = sys.stdout
    global_flops_per_sec = counted.flops_per_token * tokens_per_sec
    mfu = _C.compute_metrics(global_flops_per_sec, 1.0, peak_flops_per_sec=peak_per_gpu,
                             num_gpus=num_gpus)["mfu"]
    print(f"FLOP/token:            {counted.flops_per_token / 1e9:.2f} GFLOP", file=out)
    print(f"tokens/s (global):     {tokens_per_sec:,.0f}", file=out)
    print(f"achieved per GPU:      {global_flops_per_sec / num_gpus / 1e12:,.1f} TFLOP/s", file=out)
    print(f"MFU:                   {mfu * 100:.2f}%", file=out)
    if counted.language_per_token is not None:
        language = _C.compute_metrics(counted.language_per_token * tokens_per_sec, 1.0,
                                      peak_flops_per_sec=peak_per_gpu, num_gpus=num_gpus)["mfu"]
        print(f"MFU (language only):   {language * 100:.2f}%  (mfu_language: the vision tower "
              f"left out, the lmms-engine convention; "
              f"{counted.language_per_token / 1e9:.2f} GFLOP/token)", file=out)
    print(f"peak used (per GPU):   {peak_text}", file=out)
    print(f"GPUs:                  {num_gpus}", file=out)
    print(f"conventions:           {counted.conventions}", file=out)
    for note in counted.notes:
        print(note, file=out)
    return mfu


def _cmd_estimate(args: argparse.Namespace) -> int:
    if (args.model is None) == (args.params is None):
        raise CliError("give exactly one of --model (preset, config.json or org/name) and --params")
    if args.num_gpus < 1:
        raise CliError(f"--num-gpus must be >= 1, got {args.num_gpus}")
    dtype = normalize_dtype(args.dtype, "--dtype")
    if args.lora_rank is not None and not args.lora:
        raise CliError("--lora-rank needs --lora")

    if args.tokens_per_sec is not None:
        if args.step_time is not None:
            raise CliError("give --tokens-per-sec or --step-time, not both")
        if not (math.isfinite(args.tokens_per_sec) and args.tokens_per_sec > 0):
            raise CliError(f"--tokens-per-sec must be > 0, got {args.tokens_per_sec}")
        tokens_per_sec = args.tokens_per_sec
    elif args.step_time is not None:
        if args.batch_size is None or args.seq_len is None:
            raise CliError("--step-time needs --batch-size (global) and --seq-len")
        if not (math.isfinite(args.step_time) and args.step_time > 0):
            raise CliError(f"--step-time must be > 0 seconds, got {args.step_time}")
        if args.batch_size < 1 or args.seq_len < 1:
            raise CliError("--batch-size and --seq-len must be >= 1")
        tokens_per_sec = args.batch_size * args.seq_len / args.step_time
    else:
        raise CliError("give the throughput: --tokens-per-sec, or --step-time with --batch-size and --seq-len")

    counted = (_params_counted(args) if args.params is not None
               else _model_counted(args, args.seq_len))
    _, peak_per_gpu, peak_text = _resolve_gpu(args, dtype)
    if _print_estimate(counted, tokens_per_sec, args.num_gpus, peak_per_gpu, peak_text) > 1:
        print("warning: MFU > 1 means the peak or the FLOP count is wrong", file=sys.stderr)
    return 0


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
        print(f"analytic ({formula + '):':<8}    {value:,.0f}  "
              f"({value / tokens / 1e9:,.3f} GFLOP/token; counted / analytic = "
              f"{counted / value:.6f})", file=out)
    for note in counter_notes(config):
        print(f"note: {note}", file=out)


def _cmd_profile(args: argparse.Namespace) -> int:
    from ..flops.presets import resolve_model_config
    from ._model import ModelError, meta_count

    if args.batch_size < 1 or args.seq_len < 1:
        raise CliError("--batch-size and --seq-len must be >= 1")
    if args.depth < 1:
        raise CliError(f"--depth must be >= 1, got {args.depth}")
    config = resolve_model_config(args.model)
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
    print(f"conventions:           {fc.conventions}", file=out)
    if fc.errors:
        print(f"warning: {fc.errors} op call(s) could not be counted", file=sys.stderr)
    print("", file=out)
    print(fc.table(depth=args.depth), file=out)
    _print_uncounted(fc.uncounted(), out)
    return 0


def _print_uncounted(rows: list, out: Any, limit: int = 20) -> None:
    """The audit of `profile`: the ops outside the FLOP table that ran with
    nothing counted inside them, FLOP-heavy ones (marked !) first."""
    print("", file=out)
    heavy = sum(1 for r in rows if r.heavy)
    print(f"uncounted ops: {len(rows)} ({heavy} look FLOP-heavy: their FLOPs are missing above)",
          file=out)
    shown = [r for r in rows if r.heavy] + [r for r in rows if not r.heavy][:limit]
    for r in shown:
        print(f"  {'!' if r.heavy else ' '} {r.name:<54}{r.calls:>8}  "
              f"largest input {list(r.largest_input)}", file=out)
    if len(rows) > len(shown):
        print(f"    ... and {len(rows) - len(shown)} more", file=out)


def _cmd_report(args: argparse.Namespace) -> int:
    from ._report import run

    print(run(args.path, args.out, prefix=args.prefix, title=args.title or ""))
    print(f"wrote {args.out}")
    return 0


def _cmd_build_ext(args: argparse.Namespace) -> int:
    """Build the C++ FLOP observer ahead of time into the per-user cache."""
    import torch

    from .._version import __version__
    from ..flops.counter import _build

    print(f"cache: {_build.cache_root()} (set {_build.CACHE_ENV} to move it; "
          "the training jobs need the same value)", file=sys.stdout)
    try:
        path = _build.ensure_built(__version__, force=args.force, retry=True)
    except _build.BuildError as exc:
        print(f"mfu-tracker build-ext: error: {exc}\n{exc.fix}.", file=sys.stderr)
        return 1
    print(f"built for torch {torch.__version__}: {path}", file=sys.stdout)
    return 0


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mfu-tracker", description="Model FLOPs Utilization tools.")
    sub = parser.add_subparsers(dest="command", required=True)

    gpus = sub.add_parser("gpus", help="print the dense peak table, or what this machine has")
    gpus.add_argument("--detect", action="store_true", help="look up the GPUs torch sees here")
    gpus.set_defaults(func=_cmd_gpus)

    est = sub.add_parser("estimate", help="MFU from a model, a throughput and a GPU")
    what = est.add_argument_group("model")
    what.add_argument("--model", help="preset name (e.g. llama-3.1-8b), path to a HuggingFace "
                      "config.json, or org/name in the local HF cache")
    what.add_argument("--params", type=float, help="bare parameter count N (6N rule)")
    what.add_argument("--formula", choices=["6n", "palm", "matmul"], help="FLOP formula (default palm for --model)")
    what.add_argument("--causal-attention", choices=["full", "half"], default="full",
                      help="count the causal attention square in full (PaLM, default) or half (Megatron)")
    what.add_argument("--lora", action="store_true", help="frozen base weights: no weight-gradient FLOPs")
    what.add_argument("--lora-rank", type=int, default=None, help="adapter rank (adds the adapters' FLOPs)")
    what.add_argument("--image-grid", action="append", metavar="T,H,W",
                      help="a VLM image's grid in patches (an image_grid_thw row), or NxT,H,W for N "
                      "images; repeatable")
    what.add_argument("--video-grid", action="append", metavar="T,H,W",
                      help="a VLM video's grid in patches (a video_grid_thw row), or NxT,H,W; repeatable")
    hw = est.add_argument_group("hardware")
    hw.add_argument("--gpu", help="device name as in `mfu-tracker gpus` (e.g. B200, 'H100 SXM', MI300X)")
    hw.add_argument("--num-gpus", type=int, default=1)
    hw.add_argument("--dtype", default="bf16")
    hw.add_argument("--peak-tflops", type=float, help="per-GPU peak, overriding the table")
    tp = est.add_argument_group("throughput")
    tp.add_argument("--tokens-per-sec", type=float, help="global tokens per second")
    tp.add_argument("--step-time", type=float, help="seconds per optimizer step")
    tp.add_argument("--batch-size", type=int, help="global batch size (sequences per step, all GPUs)")
    tp.add_argument("--seq-len", type=int, help="tokens per sequence")
    est.set_defaults(func=_cmd_estimate)

    prof = sub.add_parser("profile", help="count a full-size model's FLOPs on the meta device")
    prof.add_argument("--model", required=True,
                      help="preset name (e.g. llama-3.1-8b), path to a HuggingFace config.json, "
                      "or org/name in the local HF cache")
    prof.add_argument("--batch-size", type=int, default=1, help="sequences per step")
    prof.add_argument("--seq-len", type=int, required=True, help="tokens per sequence")
    prof.add_argument("--causal-attention", choices=["full", "half"], default="full",
                      help="count the causal attention square in full (default) or half")
    prof.add_argument("--attn-implementation", default="sdpa",
                      help="transformers attention implementation (default sdpa)")
    prof.add_argument("--forward-only", action="store_true", help="count inference (no backward)")
    prof.add_argument("--depth", type=int, default=3, help="module levels in the table")
    prof.set_defaults(func=_cmd_profile)

    rep = sub.add_parser("report", help="draw MFU, the waterfall and per-rank MFU from a metrics "
                         "log (JSONL from log_path=, or a TensorBoard log directory)")
    rep.add_argument("path", help="a JSONL metrics log, a TensorBoard log directory or event file")
    rep.add_argument("--out", required=True, help="the picture: FILE.png, or FILE.html (PNG + table)")
    rep.add_argument("--prefix", default=None,
                     help="metric key prefix (default: found from the <prefix>/mfu key)")
    rep.add_argument("--title", default=None, help="the picture's title")
    rep.set_defaults(func=_cmd_report)

    from .doctor import add_parser as add_doctor_parser

    add_doctor_parser(sub, _cmd_doctor)

    bext = sub.add_parser("build-ext", help="build the C++ FLOP counter now (for read-only home dirs)")
    bext.add_argument("--force", action="store_true", help="rebuild even if a build is cached")
    bext.set_defaults(func=_cmd_build_ext)
    return parser


def _cmd_doctor(args: argparse.Namespace) -> int:
    from .doctor import main_from_args

    return main_from_args(args)


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point; returns the exit status (0 ok, 2 usage error)."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except (CliError, ValueError, LookupError, FileNotFoundError) as exc:
        print(f"mfu-tracker {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
