"""A plain training script that knows nothing of mfu_tracker: ``make run``'s
GPT-2 (the model of ``examples/train_gpt2.py``, built from a
``transformers.GPT2Config``, no download) trained by a bare PyTorch loop on a
fixed random corpus, printing its loss.

Run it bare, or measured with no change to it::

    python examples/train_plain.py [--steps 30] [--batch-size 8] [--seq-len 128]
        [--device cuda] [--autocast bf16]
    mfu-tracker run -- python examples/train_plain.py
"""
from __future__ import annotations

import argparse
import contextlib
import time

import torch


def build_model(args: argparse.Namespace) -> torch.nn.Module:
    """The GPT-2 of ``make run`` (also ``examples/train_gpt2.py``'s), from a
    config: no download."""
    import transformers
    from transformers import GPT2Config, GPT2LMHeadModel

    transformers.logging.set_verbosity_error()  # config notices are not this job's output
    config = GPT2Config(vocab_size=args.vocab_size, n_positions=args.seq_len, n_embd=args.hidden,
                        n_layer=args.layers, n_head=args.heads, bos_token_id=0, eos_token_id=0,
                        attn_implementation="sdpa")
    return GPT2LMHeadModel(config)


def add_model_args(parser: argparse.ArgumentParser) -> None:
    """The batch and the model :func:`build_model` reads (make run's defaults)."""
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--vocab-size", type=int, default=8192)
    parser.add_argument("--seed", type=int, default=0)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    add_model_args(parser)
    parser.add_argument("--device", default="cpu", help="cpu, cuda, cuda:1, ...")
    parser.add_argument("--autocast", default=None, choices=("bf16", "fp16"),
                        help="run forward and loss under torch.autocast in this dtype")
    parser.add_argument("--quiet", action="store_true", help="print only the last line")
    parser.add_argument("--timed-from", type=int, default=2,
                        help="the first step the last line's per-step times include")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    model = build_model(args).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    corpus = torch.randint(0, args.vocab_size, (4, args.batch_size, args.seq_len), device=device)
    precision = (torch.autocast(device.type, dtype={"bf16": torch.bfloat16,
                                                    "fp16": torch.float16}[args.autocast])
                 if args.autocast else contextlib.nullcontext())
    start = time.perf_counter()
    timed = None     # (wall, this thread's CPU time) when step --timed-from began
    for step in range(args.steps):
        if step + 1 == args.timed_from:
            timed = (time.perf_counter(), time.thread_time())
        input_ids = corpus[step % corpus.shape[0]]
        with precision:
            loss = model(input_ids=input_ids, labels=input_ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if not args.quiet:
            print(f"step {step + 1:>4}  loss {loss.item():.3f}", flush=True)
    elapsed = time.perf_counter() - start
    line = f"{args.steps} steps in {elapsed:.1f} s"
    if timed is not None:
        # the loop's own clock, from step --timed-from on (the first steps warm up);
        # the training thread's CPU time is robust to other processes' load
        n = args.steps - args.timed_from + 1
        wall_ms = (time.perf_counter() - timed[0]) / n * 1e3
        cpu_ms = (time.thread_time() - timed[1]) / n * 1e3
        line += (f"; steps {args.timed_from}..{args.steps}: {wall_ms:.2f} ms/step wall, "
                 f"{cpu_ms:.2f} ms/step CPU (training thread)")
    print(line)


if __name__ == "__main__":
    main()
