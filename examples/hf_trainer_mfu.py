"""MFU of a HuggingFace Trainer run: MFUCallback with no arguments.

    python examples/hf_trainer_mfu.py --dtype bf16 --batch-size 16
    python examples/hf_trainer_mfu.py --steps 6 --logging-steps 2 --report-to tensorboard
    python examples/hf_trainer_mfu.py --log-path build/examples/mfu.jsonl
    mfu-tracker report build/examples/mfu.jsonl --out build/examples/mfu.png

A tiny GPT-2 (or --model) from its config, a synthetic in-memory dataset.
The callback counts every step's FLOPs, detects the dtype from the Trainer's
mixed-precision flags and the device from the Trainer, and puts
``throughput/mfu``, ``/hfu``, ``/mbu``, ``/tokens_per_sec``,
``/achieved_tflops`` and ``/peak_tflops`` into the Trainer's logs (so every
--report-to backend gets them). On a CPU the peak is a measured GEMM peak,
labelled as such. The Trainer's files go to --output-dir (default
build/examples/hf_trainer_mfu, which git ignores).
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

from _common import MODELS, build_model, default_device, ensure_peak, print_recheck  # noqa: E402
from _common import output_dir as default_output_dir  # noqa: E402


class Synthetic(torch.utils.data.Dataset):
    def __init__(self, n: int, seq_len: int, vocab: int) -> None:
        g = torch.Generator().manual_seed(0)
        self.ids = torch.randint(0, vocab, (n, seq_len), generator=g)

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gpt2-tiny", choices=MODELS)
    parser.add_argument("--dtype", default="fp32", choices=["fp32", "bf16", "fp16", "tf32"])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--logging-steps", type=int, default=2)
    parser.add_argument("--gradient-checkpointing", action="store_true")
    parser.add_argument("--gradient-accumulation-steps", type=int, default=1)
    parser.add_argument("--report-to", default="none",
                        help="comma-separated report_to backends (tensorboard, mlflow, wandb) or none")
    parser.add_argument("--output-dir", default=None)
    parser.add_argument("--log-path", default=None,
                        help="append the MFU keys of every log to this JSONL file (mfu-tracker report)")
    args = parser.parse_args()

    from transformers import Trainer, TrainingArguments

    from mfu_tracker.integrations.hf_trainer import MFUCallback

    device = default_device()
    if device.type == "cpu" and args.dtype in ("fp16", "tf32"):
        raise SystemExit(f"--dtype {args.dtype} needs a GPU; use fp32 or bf16 on a CPU")
    print(ensure_peak(device, "fp32" if args.dtype == "tf32" else args.dtype))
    model = build_model(args.model)
    n = args.steps * args.batch_size * args.gradient_accumulation_steps
    dataset = Synthetic(n, args.seq_len, model.config.vocab_size)
    report_to = [] if args.report_to in ("", "none") else args.report_to.split(",")
    output_dir = args.output_dir or default_output_dir("hf_trainer_mfu")
    os.environ.setdefault("WANDB_DIR", output_dir)  # wandb writes ./wandb otherwise
    training_args = TrainingArguments(
        output_dir=output_dir,
        max_steps=args.steps,
        per_device_train_batch_size=args.batch_size,
        gradient_accumulation_steps=args.gradient_accumulation_steps,
        gradient_checkpointing=args.gradient_checkpointing,
        logging_steps=args.logging_steps,
        bf16=args.dtype == "bf16",
        fp16=args.dtype == "fp16",
        tf32=True if args.dtype == "tf32" else None,
        use_cpu=device.type == "cpu",
        report_to=report_to,
        save_strategy="no",
        disable_tqdm=True,
        learning_rate=3e-4,
    )
    callback = MFUCallback(log_path=args.log_path)
    trainer = Trainer(model=model, args=training_args, train_dataset=dataset, callbacks=[callback])
    trainer.train()

    print(f"\ndtype {callback.resolved_dtype}; logs in {output_dir}")
    print(f"{'step':>5} {'MFU':>8} {'HFU':>8} {'tokens/s':>10} {'TFLOP/s':>9} {'s/step':>8}  peak TFLOP/s")
    for entry in callback.history:
        m = {k.split("/")[-1]: v for k, v in entry["metrics"].items()}
        print(f"{entry['step']:>5} {m.get('mfu', float('nan')):>8.4f} {m.get('hfu', float('nan')):>8.4f} "
              f"{m.get('tokens_per_sec', float('nan')):>10.1f} {m.get('achieved_tflops', float('nan')):>9.4f} "
              f"{m.get('step_time_s', float('nan')):>8.3f}  {m.get('peak_tflops', float('nan')):.4g}")


if __name__ == "__main__":
    main()
    print_recheck()   # a measured peak, measured again: did a busy machine skew it?
