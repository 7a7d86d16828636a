"""A transformers.Trainer script that knows nothing of mfu_tracker: a tiny
GPT-2 (built from a config, no download) trained for a few steps on a fixed
random corpus, on the CPU. ``hf_trainer_by_hand.py`` is the same script with
``MFUCallback`` added.

    python hf_trainer_plain.py OUTDIR [--steps 6] [--batch 4] [--seq 32] [--accumulate 1]
"""
from __future__ import annotations

import argparse
import sys
from typing import Any, List

import torch


class Corpus(torch.utils.data.Dataset):
    """Fixed random rows: every run sees the same batches."""

    def __init__(self, rows: int, seq: int, vocab: int) -> None:
        g = torch.Generator().manual_seed(0)
        self.ids = torch.randint(0, vocab, (rows, seq), generator=g)

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict:
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def parse_args(argv: List[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("outdir")
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=32)
    p.add_argument("--accumulate", type=int, default=1)
    return p.parse_args(argv)


def build_trainer(args: argparse.Namespace, callbacks: Any = None) -> Any:
    import transformers
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=256, n_positions=args.seq, n_embd=32, n_layer=2, n_head=2,
                        bos_token_id=0, eos_token_id=0, attn_implementation="sdpa")
    training = TrainingArguments(
        output_dir=args.outdir, max_steps=args.steps, per_device_train_batch_size=args.batch,
        gradient_accumulation_steps=args.accumulate, logging_steps=2, report_to=[],
        use_cpu=True, save_strategy="no", disable_tqdm=True, dataloader_num_workers=0,
        seed=0)
    return Trainer(model=GPT2LMHeadModel(config), args=training,
                   train_dataset=Corpus(args.steps * args.batch * args.accumulate, args.seq, 256),
                   callbacks=callbacks)


def main() -> None:
    args = parse_args(sys.argv[1:])
    build_trainer(args).train()


if __name__ == "__main__":
    main()
