"""``examples/train_plain.py`` instrumented by hand: the same model, data and
loop, its optimizer wrapped in ``MFUOptimizerWrapper`` with each step's
forward and backward in ``track_step()`` (counted exactly), logging every
``--log-every`` steps: the reference ``mfu-tracker run`` is held to.

    python plain_by_hand.py LOG [train_plain.py's flags] [--log-every 10]
"""
from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "examples"))

import torch  # noqa: E402
from train_plain import build_model, parse_args  # noqa: E402

from mfu_tracker import MFUOptimizerWrapper  # noqa: E402


def main() -> None:
    log = sys.argv.pop(1)
    every = 10
    if "--log-every" in sys.argv:
        at = sys.argv.index("--log-every")
        every = int(sys.argv[at + 1])
        del sys.argv[at:at + 2]
    args = parse_args()
    torch.manual_seed(args.seed)
    model = build_model(args)
    # the agent's defaults: window = log_every, warm-up 1, the peak of the dtype it detects
    optimizer = MFUOptimizerWrapper(torch.optim.AdamW(model.parameters(), lr=1e-3), model,
                                    dtype="fp32", window=every, log_path=log)
    corpus = torch.randint(0, args.vocab_size, (4, args.batch_size, args.seq_len))
    for step in range(args.steps):
        input_ids = corpus[step % corpus.shape[0]]
        with optimizer.track_step(num_tokens=input_ids.numel()):
            loss = model(input_ids=input_ids, labels=input_ids).loss
            loss.backward()
        optimizer.step()
        if (step + 1) % every == 0 or step + 1 == args.steps:
            optimizer.metrics()
    optimizer.close()
    print(f"{args.steps} steps, last loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
