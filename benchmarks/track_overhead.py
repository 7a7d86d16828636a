"""CPU cost of one ``track()`` block (enter + exit + reading ``mfu``), against
``contextlib.nullcontext()`` and against the pure-Python ``mfu-tracker`` 0.3.0
from PyPI, measured in one run.

The peer has the same import name, so it runs in its own virtual environment
(``benchmarks/.peer-venv``, created on first use) in a child process; each
process also times ``nullcontext()`` so the ratios compare like with like.
The peer calls ``torch.cuda.synchronize()`` twice per block; this machine has
no GPU, so in its process that call is replaced by a no-op: on a GPU its cost
would be higher than measured here, never lower.

    .venv/bin/python benchmarks/track_overhead.py [--blocks 200000] [--rounds 5]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap
import venv
from pathlib import Path

HERE = Path(__file__).resolve().parent
PEER_VENV = HERE / ".peer-venv"

# Timing loop shared by both processes: best-of-rounds nanoseconds per block.
TIMER = textwrap.dedent(
    """
    import contextlib, time

    def per_block_ns(make_block, blocks, rounds):
        best = float("inf")
        for _ in range(rounds):
            start = time.perf_counter_ns()
            for _ in range(blocks):
                with make_block() as r:
                    pass
                r.mfu if r is not None else None
            best = min(best, (time.perf_counter_ns() - start) / blocks)
        return best

    def null_ns(blocks, rounds):
        return per_block_ns(contextlib.nullcontext, blocks, rounds)
    """
)

PEER_SCRIPT = TIMER + textwrap.dedent(
    """
    import json, sys, torch
    torch.cuda.synchronize = lambda device=None: None  # no GPU here: see module docstring
    from mfu_tracker import GPUSpec, track
    spec = GPUSpec(name="fixed", compute_capability=(9, 0), num_sms=132, clock_rate_hz=1.98e9,
                   memory_bandwidth_bytes_per_sec=3.35e12,
                   peak_flops_by_dtype={"bf16": 989.4e12}, peak_memory_bandwidth_tbs=3.35)
    blocks, rounds = int(sys.argv[1]), int(sys.argv[2])
    peer = per_block_ns(lambda: track(1e12, 1e9, dtype="bf16", spec=spec), blocks, rounds)
    print(json.dumps({"peer_ns": peer, "null_ns": null_ns(blocks, rounds)}))
    """
)


def ensure_peer_venv() -> Path:
    python = PEER_VENV / "bin" / "python"
    if not python.exists():
        print(f"creating {PEER_VENV} with mfu-tracker==0.3.0 (one time)", file=sys.stderr)
        venv.create(PEER_VENV, with_pip=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "torch==2.13.0", "mfu-tracker==0.3.0"],
                       check=True)
    return python


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-peer", action="store_true", help="skip the pure-Python mfu-tracker")
    args = parser.parse_args()

    namespace: dict = {}
    exec(TIMER, namespace)
    per_block_ns, null_ns = namespace["per_block_ns"], namespace["null_ns"]

    from mfu_tracker import track, user_gpu_spec

    spec = user_gpu_spec(989.4, name="fixed", memory_bandwidth_tbs=3.35)
    ours = per_block_ns(lambda: track(1e12, 1e9, dtype="bf16", spec=spec), args.blocks, args.rounds)
    ours_cached = per_block_ns(lambda: track(1e12, 1e9, dtype="bf16", peak_tflops=989.4, device="cpu"),
                               args.blocks, args.rounds)
    null = null_ns(args.blocks, args.rounds)

    print(f"blocks per round: {args.blocks}, best of {args.rounds} rounds")
    print(f"nullcontext()                             {null:8.0f} ns/block")
    print(f"mfu_tracker track(spec=...)               {ours:8.0f} ns/block  "
          f"(+{ours - null:.0f} ns over nullcontext, {ours / null:.1f}x)")
    print(f"mfu_tracker track(peak_tflops=..., cpu)   {ours_cached:8.0f} ns/block  "
          f"(+{ours_cached - null:.0f} ns over nullcontext, {ours_cached / null:.1f}x)")
    if args.no_peer:
        return
    python = ensure_peer_venv()
    out = subprocess.run([str(python), "-c", PEER_SCRIPT, str(args.blocks), str(args.rounds)],
                         check=True, capture_output=True, text=True, cwd="/")
    peer = json.loads(out.stdout)
    # Normalise by each process's own nullcontext so interpreter differences cancel.
    peer_over_null = peer["peer_ns"] / peer["null_ns"]
    print(f"mfu-tracker 0.3.0 track(spec=...)         {peer['peer_ns']:8.0f} ns/block  "
          f"({peer_over_null:.1f}x its process's nullcontext {peer['null_ns']:.0f} ns)")
    print(f"ratio pure-Python / ours (per block):     {peer['peer_ns'] / ours:.1f}x "
          f"(nullcontext-normalised: {peer_over_null / (ours / null):.1f}x)")


if __name__ == "__main__":
    main()
