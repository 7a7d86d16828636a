"""A Lightning script that knows nothing of mfu_tracker: tiny_loop.py's
model trained by ``lightning.Trainer`` (automatic optimization: the
optimizer steps with a closure that runs the forward and backward) on the CPU.

    python lightning_plain.py [--steps 6] [--batch 4] [--seq 16] [--accumulate 1]
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import lightning  # noqa: E402
import torch  # noqa: E402

from tiny_loop import VOCAB, TinyLM  # noqa: E402


class Rows(torch.utils.data.Dataset):
    def __init__(self, rows: int, seq: int) -> None:
        self.ids = torch.randint(0, VOCAB, (rows, seq), generator=torch.Generator().manual_seed(0))

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict:
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


class Module(lightning.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = TinyLM()

    def training_step(self, batch: dict, index: int) -> torch.Tensor:
        return self.net(**batch)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.01)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=16)
    p.add_argument("--accumulate", type=int, default=1)
    args = p.parse_args()
    torch.manual_seed(0)
    data = torch.utils.data.DataLoader(Rows(args.steps * args.batch * args.accumulate, args.seq),
                                       batch_size=args.batch)
    trainer = lightning.Trainer(max_steps=args.steps, accelerator="cpu", devices=1, logger=False,
                                enable_checkpointing=False, enable_progress_bar=False,
                                enable_model_summary=False,
                                accumulate_grad_batches=args.accumulate)
    trainer.fit(Module(), data)
    print(f"trained {trainer.global_step} steps", flush=True)


if __name__ == "__main__":
    main()
