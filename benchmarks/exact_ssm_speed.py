"""Wall time of the exact (meta-device) count of a Mamba model, with the
token-by-token selective scan batched (the default) and, for a length short
enough to wait for, run token by token as transformers writes it.

    .venv/bin/python benchmarks/exact_ssm_speed.py --layers 24 --hidden 2048 \
        --seq-lens 64,256,2048 --loop-seq-lens 64,256

Each length is counted from a cold cache (the model built once per mode);
the counts of both modes must be equal (the script exits 1 otherwise).
"""
from __future__ import annotations

import argparse
import sys
import time


def _count(config, seq_len: int, batched: bool) -> tuple[float, float]:
    from mfu_tracker import transformer_flops
    from mfu_tracker.flops import _meta, _meta_scans

    modules = _meta_scans.MODULES
    _meta._steps.clear()  # a cold count: the built model stays
    _meta_scans.MODULES = modules if batched else ()
    try:
        start = time.perf_counter()
        flops = transformer_flops(config, seq_len=seq_len).model_flops
        return time.perf_counter() - start, flops
    finally:
        _meta_scans.MODULES = modules


def main(argv: list[str] | None = None) -> int:
    import transformers

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=24)
    parser.add_argument("--hidden", type=int, default=2048)
    parser.add_argument("--seq-lens", default="64,256,2048")
    parser.add_argument("--loop-seq-lens", default="64,256",
                        help="lengths also counted token by token (slow: minutes at 2,048)")
    args = parser.parse_args(argv)
    config = transformers.MambaConfig(hidden_size=args.hidden, num_hidden_layers=args.layers)
    start = time.perf_counter()
    _count(config, 8, True)
    print(f"Mamba {args.layers} x {args.hidden}: first count (the model built on meta) "
          f"{time.perf_counter() - start:.1f} s")
    loop = {int(s) for s in args.loop_seq_lens.split(",") if s}
    ok = True
    for seq_len in (int(s) for s in args.seq_lens.split(",")):
        seconds, flops = _count(config, seq_len, True)
        line = f"S={seq_len:>6}: batched {seconds:7.2f} s, {flops:.6e} FLOPs"
        if seq_len in loop:
            loop_s, loop_flops = _count(config, seq_len, False)
            ok &= loop_flops == flops
            line += f" | token by token {loop_s:7.2f} s, counts equal: {loop_flops == flops}"
        print(line, flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
