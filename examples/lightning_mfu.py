"""MFU of a ``lightning.Trainer`` run: ``MFUCallback`` logging to CSV / TensorBoard.

    python examples/lightning_mfu.py --steps 8 --log-every 2 --accumulate 2 \\
        --precision bf16-mixed [--output-dir DIR]    (default: build/examples/lightning_mfu)

The callback takes the peak's dtype from the Trainer's precision, counts the
FLOPs of every micro-batch of each optimizer step, and writes
``throughput/mfu``, ``throughput/tokens_per_sec``... to every logger of the
Trainer every ``log_every_n_steps`` optimizer steps. Runs on a CPU (a
measured or MFU_TRACKER_PEAK_TFLOPS peak) or a GPU (the datasheet peak).
"""
from __future__ import annotations

import argparse
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

from _common import build_model, default_device, ensure_peak, output_dir, print_recheck  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8, help="optimizer steps")
    parser.add_argument("--log-every", type=int, default=2, help="Trainer log_every_n_steps")
    parser.add_argument("--accumulate", type=int, default=1, help="accumulate_grad_batches")
    parser.add_argument("--seq-len", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--precision", default="32-true", help="Trainer precision (bf16-mixed, ...)")
    parser.add_argument("--device", default=str(default_device()))
    parser.add_argument("--output-dir", default=output_dir("lightning_mfu"),
                        help="the loggers' directory (default: under the checkout's ignored build/)")
    args = parser.parse_args()

    import lightning as L
    from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger

    from mfu_tracker.integrations.fabric import dtype_from_precision
    from mfu_tracker.integrations.lightning import MFUCallback

    device = torch.device(args.device)
    print(ensure_peak(device, dtype_from_precision(args.precision, device=device) or "fp32"))

    class CausalLM(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.model = build_model("gpt2-tiny")
            self.config = self.model.config   # lets count_every=0 use the analytic count

        def training_step(self, batch, batch_idx):
            return self.model(**batch).loss

        def configure_optimizers(self):
            return torch.optim.AdamW(self.parameters(), lr=3e-4)

    module = CausalLM()
    n = args.steps * args.accumulate * args.batch_size
    ids = torch.randint(0, module.config.vocab_size, (n, args.seq_len),
                        generator=torch.Generator().manual_seed(0))
    loader = torch.utils.data.DataLoader([{"input_ids": r, "labels": r} for r in ids],
                                         batch_size=args.batch_size)

    callback = MFUCallback()
    trainer = L.Trainer(
        accelerator=device.type, devices=1, precision=args.precision, max_steps=args.steps,
        log_every_n_steps=args.log_every, accumulate_grad_batches=args.accumulate,
        logger=[CSVLogger(args.output_dir, name="csv"), TensorBoardLogger(args.output_dir, name="tb")],
        callbacks=[callback], enable_progress_bar=False, enable_checkpointing=False,
        enable_model_summary=False,
    )
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", module="lightning")   # Lightning's advice on CPUs
        trainer.fit(module, loader)

    print(f"dtype {callback.resolved_dtype}")
    print(f"{'step':>6} {'MFU':>10} {'HFU':>10} {'tokens/s':>10} {'model FLOPs/step':>18}")
    for entry in callback.history:
        m = entry["metrics"]
        mfu, hfu = m.get("throughput/mfu"), m.get("throughput/hfu")
        print(f"{entry['step']:>6} {'n/a' if mfu is None else f'{mfu:.6f}':>10} "
              f"{'n/a' if hfu is None else f'{hfu:.6f}':>10} "
              f"{m.get('throughput/tokens_per_sec', float('nan')):>10.1f} "
              f"{entry['step_flops'][-1]:>18.0f}")
    print(f"logs in {os.path.abspath(args.output_dir)}")


if __name__ == "__main__":
    main()
    print_recheck()   # a measured peak, measured again: did a busy machine skew it?
