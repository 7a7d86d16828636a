"""A real training loop writing a Tracker's metrics log, for the page and
passport tests: a tiny GPT-2 on the CPU, its FLOPs counted by FlopCounter on
the first step, phases marked, tokens given, the run record told the model
(``model_info``). Importable (:func:`train`) and runnable as a process that
keeps writing while a page follows it::

    python tests/_view_train.py LOG --steps 40 --log-every 2 --pause 0.3
"""
from __future__ import annotations

import argparse
import time
from typing import Any, Dict, Optional

import torch

BATCH, SEQ, VOCAB = 2, 32, 256
PEAK_TFLOPS = 0.05           # a CPU has no datasheet peak: given (declared)


def config() -> Any:
    from transformers import GPT2Config

    return GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=VOCAB, n_positions=SEQ,
                      bos_token_id=0, eos_token_id=0)


def train(log_path: str, steps: int = 12, log_every: int = 4, pause_s: float = 0.0,
          model_info: Optional[Dict[str, Any]] = None, window: Optional[int] = None,
          profile_steps: Any = None) -> None:
    """Train ``steps`` steps, logging every ``log_every``; ``model_info``
    None: the model's config and sequence length, FLOPs counted."""
    import transformers
    from transformers import GPT2LMHeadModel

    from mfu_tracker import FlopCounter, Tracker

    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    cfg = config()
    model = GPT2LMHeadModel(cfg)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = torch.randint(0, VOCAB, (BATCH, SEQ))
    with FlopCounter() as counter:
        model(input_ids=ids, labels=ids).loss.backward()
    optimizer.zero_grad()
    info = {"config": cfg, "seq_len": SEQ, "flops": "counted"} if model_info is None \
        else model_info
    tracker = Tracker(counter.model_flops, peak_tflops=PEAK_TFLOPS, dtype="fp32", clock="cpu",
                      window=window or log_every, warmup=1, log_path=log_path,
                      model_info=info or None, profile_steps=profile_steps)
    tracker.step()
    for step in range(steps):
        with tracker.phase("data"):
            ids = torch.randint(0, VOCAB, (BATCH, SEQ))
        with tracker.phase("forward"):
            loss = model(input_ids=ids, labels=ids).loss
        with tracker.phase("backward"):
            loss.backward()
        with tracker.phase("optimizer"):
            optimizer.step()
            optimizer.zero_grad()
        tracker.step(num_tokens=BATCH * SEQ)
        if (step + 1) % log_every == 0:
            tracker.metrics()
        if pause_s:
            time.sleep(pause_s)
    tracker.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("log")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--log-every", type=int, default=2)
    parser.add_argument("--pause", type=float, default=0.3)
    args = parser.parse_args()
    train(args.log, args.steps, args.log_every, args.pause)


if __name__ == "__main__":
    main()


# ---- a log of a GPU with hardware counters: the fake driver and the fake NVML ----------

MS = 1_000_000                 # ns
GPM_FLOPS = 5e11               # per 1 ms step against 1e15 FLOP/s: MFU 0.5


def gpm_log(fake: Any, path: Any, monkeypatch: Any, windows: int = 2) -> Any:
    """A Tracker on the fake GPU (its clock exact: each step 1 ms), the fake
    NVML's GPM counters as scripted by the caller and the fake allocator (8 GiB
    held) writing ``path``: ``windows`` metrics lines of 4 steps, >= 0.1 s apart
    (GPM's minimum window). Returns the allocator."""
    from _fake_allocator import GIB, FakeAllocator
    from _fake_nvml import UUID

    from mfu_tracker import user_gpu_spec
    from mfu_tracker.step import Tracker

    allocator = FakeAllocator().install(monkeypatch, torch)
    tracker = Tracker(GPM_FLOPS, spec=user_gpu_spec(1000.0, name="fake GPU"), clock="cuda",
                      stream=0, warmup=0, dtype="bf16", telemetry=UUID, memory=True,
                      log_path=str(path), window=4)
    allocator.malloc(8 * GIB)
    tracker.step()
    for _ in range(windows):
        for _ in range(4):
            fake.set_work_ns(MS)
            fake.advance(MS)
            tracker.step()
        tracker.flush()
        time.sleep(0.11)
        tracker.metrics()
    tracker.close()
    return allocator
