"""The training loops of tests/flops/counter/test_compiled.py (docs/flops.md, "The stack people run"), run twice: with the
tool in the test process, and without it in a child process that never
imports mfu_tracker (``python tests/_compile_loops.py``, which prints the
results as JSON). Same models, batches, loops and order; each loop's
``torch._dynamo`` counter increments (frames traced, graphs, graph breaks)
are recorded, so the test compares what torch.compile did with and without
the tool, loop by loop.

Per model (a small GPT-2 and a small Llama from transformers configs, CPU,
inductor, compiled once and reused by every loop):

  counter    STEPS steps, a FlopCounter (module table on) around each
  tracker    a Tracker with phases marked around forward / backward /
             optimizer (and the counted FLOPs given to step())
  wrapper    MFUOptimizerWrapper(count_every=1) with track_step() blocks
  hf         transformers.Trainer(torch_compile=True) + MFUCallback
  lightning  lightning.Trainer with a LightningModule holding the compiled
             model + the Lightning MFUCallback
  fabric     lightning.Fabric set up with the compiled model, fabric_tracker()
             with phases around forward / fabric.backward / optimizer
  accelerate accelerate.Accelerator preparing the compiled model and an
             MFUOptimizerWrapper (wrapped first, as the README says), a
             track_step(zero_grad=False) block inside accelerator.accumulate

With the tool, each loop also returns the model FLOPs it reported per step,
and ``eager`` is the eager model's count of one step (FlopCounter).
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import warnings
from typing import Any, Dict, List

import torch

B, S, VOCAB, STEPS = 2, 32, 256, 3
PEAK_TFLOPS = 1.0  # a made-up CPU peak: MFU is defined, its value irrelevant here
LOOPS = ("counter", "tracker", "wrapper", "hf", "lightning", "fabric", "accelerate")


def make_model(name: str) -> Any:
    import transformers

    torch.manual_seed(0)
    if name == "gpt2":
        cfg = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=VOCAB,
                                      n_positions=64, bos_token_id=0, eos_token_id=0)
        return transformers.GPT2LMHeadModel(cfg)
    cfg = transformers.LlamaConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=2, intermediate_size=128, vocab_size=VOCAB,
                                   bos_token_id=0, eos_token_id=0, pad_token_id=0)
    return transformers.LlamaForCausalLM(cfg)


def _ids() -> torch.Tensor:
    return torch.randint(0, VOCAB, (B, S), generator=torch.Generator().manual_seed(1))


def _counts() -> List[int]:
    from torch._dynamo.utils import counters

    return [int(counters["frames"]["total"]), int(counters["stats"]["unique_graphs"]),
            int(sum(counters["graph_break"].values()))]


class _Tokens(torch.utils.data.Dataset):
    def __len__(self) -> int:
        return 64

    def __getitem__(self, i: int) -> Dict[str, torch.Tensor]:
        ids = _ids()[i % B]
        return {"input_ids": ids, "labels": ids}


def _loop_counter(compiled: Any, opt: Any, tool: bool) -> List[float]:
    flops = []
    for _ in range(STEPS):
        if tool:
            from mfu_tracker import FlopCounter

            with FlopCounter(modules=True) as fc:
                compiled(input_ids=_ids(), labels=_ids()).loss.backward()
            flops.append(fc.model_flops)
        else:
            compiled(input_ids=_ids(), labels=_ids()).loss.backward()
        opt.step()
        opt.zero_grad()
    return flops


def _loop_tracker(compiled: Any, opt: Any, tool: bool) -> List[float]:
    if not tool:
        for _ in range(STEPS + 1):
            compiled(input_ids=_ids(), labels=_ids()).loss.backward()
            opt.step()
            opt.zero_grad()
        return []
    from mfu_tracker import FlopCounter, Tracker

    tracker = Tracker(dtype="fp32", peak_tflops=PEAK_TFLOPS, clock="cpu", warmup=0)
    phase = tracker.phase
    flops: List[float] = []
    for _ in range(STEPS + 1):
        with FlopCounter(modules=False) as fc:
            with phase("forward"):
                loss = compiled(input_ids=_ids(), labels=_ids()).loss
            with phase("backward"):
                loss.backward()
        with phase("optimizer"):
            opt.step()
            opt.zero_grad()
        tracker.step(num_tokens=B * S, model_flops=fc.model_flops,
                     executed_flops=fc.executed_flops, overcompute_flops=fc.overcompute_flops)
        flops.append(fc.model_flops)
    assert "throughput/mfu_lost/compute" in tracker.metrics()
    return flops[1:]


def _loop_wrapper(compiled: Any, opt: Any, tool: bool) -> List[float]:
    if not tool:
        for _ in range(STEPS):
            compiled(input_ids=_ids(), labels=_ids()).loss.backward()
            opt.step()
            opt.zero_grad()
        return []
    from mfu_tracker.optim import MFUOptimizerWrapper

    wrapped = MFUOptimizerWrapper(opt, compiled, peak_tflops=PEAK_TFLOPS, clock="cpu",
                                  count_every=1, warmup=0)
    flops = []
    for _ in range(STEPS):
        with wrapped.track_step(num_tokens=B * S):
            compiled(input_ids=_ids(), labels=_ids()).loss.backward()
        wrapped.step()
        flops.append(wrapped.last_step_flops[0])
    return flops


def _loop_hf(model: Any, tool: bool, tmp: str) -> List[float]:
    from transformers import Trainer, TrainingArguments

    callbacks = []
    if tool:
        from mfu_tracker.integrations.hf_trainer import MFUCallback

        callbacks = [MFUCallback(peak_tflops=PEAK_TFLOPS, count_every=1, warmup=0)]
    args = TrainingArguments(output_dir=os.path.join(tmp, "hf"), max_steps=STEPS,
                             per_device_train_batch_size=B, logging_steps=STEPS, report_to=[],
                             use_cpu=True, save_strategy="no", disable_tqdm=True,
                             torch_compile=True, seed=0)
    Trainer(model=model, args=args, train_dataset=_Tokens(), callbacks=callbacks).train()
    return list(callbacks[0].history[-1]["step_flops"]) if tool else []


def _loop_lightning(compiled: Any, tool: bool, tmp: str) -> List[float]:
    import lightning as L

    class Module(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.model = compiled

        def training_step(self, batch: Any, batch_idx: int) -> Any:
            return self.model(input_ids=batch["input_ids"], labels=batch["labels"]).loss

        def configure_optimizers(self) -> Any:
            return torch.optim.SGD(self.parameters(), lr=0.0)

    callbacks = []
    if tool:
        from mfu_tracker.integrations.lightning import MFUCallback

        callbacks = [MFUCallback(peak_tflops=PEAK_TFLOPS, count_every=1, warmup=0)]
    trainer = L.Trainer(max_steps=STEPS, accelerator="cpu", devices=1, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, log_every_n_steps=STEPS,
                        callbacks=callbacks, default_root_dir=os.path.join(tmp, "pl"))
    loader = torch.utils.data.DataLoader(_Tokens(), batch_size=B)
    trainer.fit(Module(), loader)
    return list(callbacks[0].history[-1]["step_flops"]) if tool else []


def _loop_fabric(compiled: Any, tool: bool) -> List[float]:
    import lightning as L

    fabric = L.Fabric(accelerator="cpu", devices=1)
    # the model stays the one compiled here (Fabric would re-compile it only
    # when lightning was imported before torch.compile)
    model, opt = fabric.setup(compiled, torch.optim.SGD(compiled.parameters(), lr=0.0),
                              _reapply_compile=False)
    if not tool:
        for _ in range(STEPS + 1):
            fabric.backward(model(input_ids=_ids(), labels=_ids()).loss)
            opt.step()
            opt.zero_grad()
        return []
    from mfu_tracker import FlopCounter
    from mfu_tracker.integrations.fabric import fabric_tracker

    tracker = fabric_tracker(fabric, peak_tflops=PEAK_TFLOPS, clock="cpu", warmup=0)
    flops: List[float] = []
    for _ in range(STEPS + 1):
        with FlopCounter(modules=True) as fc:
            with tracker.phase("forward"):
                loss = model(input_ids=_ids(), labels=_ids()).loss
            with tracker.phase("backward"):
                fabric.backward(loss)
        with tracker.phase("optimizer"):
            opt.step()
            opt.zero_grad()
        tracker.step(num_tokens=B * S, model_flops=fc.model_flops,
                     executed_flops=fc.executed_flops, overcompute_flops=fc.overcompute_flops)
        flops.append(fc.model_flops)
    assert "throughput/mfu_lost/compute" in tracker.metrics()
    return flops[1:]


def _loop_accelerate(compiled: Any, tool: bool) -> List[float]:
    from accelerate import Accelerator

    accelerator = Accelerator(cpu=True)
    opt: Any = torch.optim.SGD(compiled.parameters(), lr=0.0)
    if tool:
        from mfu_tracker.optim import MFUOptimizerWrapper

        opt = MFUOptimizerWrapper(opt, compiled, peak_tflops=PEAK_TFLOPS, clock="cpu",
                                  count_every=1, warmup=0)
    model, prepared = accelerator.prepare(compiled, opt)
    flops = []
    for _ in range(STEPS):
        with accelerator.accumulate(model):
            if tool:
                with opt.track_step(zero_grad=False, num_tokens=B * S):
                    accelerator.backward(model(input_ids=_ids(), labels=_ids()).loss)
            else:
                accelerator.backward(model(input_ids=_ids(), labels=_ids()).loss)
            prepared.step()
            prepared.zero_grad()
        if tool:
            flops.append(opt.last_step_flops[0])
    return flops


def run(name: str, tool: bool) -> Dict[str, Any]:
    """The loops on one model; {"eager": FLOPs or None, loop: {"counts":
    [frames, graphs, breaks] increments, "flops": [...]}}."""
    import torch._dynamo

    model = make_model(name)
    eager = None
    if tool:
        from mfu_tracker import FlopCounter

        with FlopCounter(modules=True) as fc:  # the tool is set up before the first compiled call
            model(input_ids=_ids(), labels=_ids()).loss.backward()
        eager = fc.model_flops
    else:
        model(input_ids=_ids(), labels=_ids()).loss.backward()
    model.zero_grad()
    torch._dynamo.reset()
    from torch._dynamo.utils import counters

    counters.clear()
    compiled = torch.compile(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.0)  # lr 0: every step sees the same weights
    out: Dict[str, Any] = {"eager": eager}
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for loop in LOOPS:
            before = _counts()
            if loop == "counter":
                flops = _loop_counter(compiled, opt, tool)
            elif loop == "tracker":
                flops = _loop_tracker(compiled, opt, tool)
            elif loop == "wrapper":
                flops = _loop_wrapper(compiled, opt, tool)
            elif loop == "hf":
                flops = _loop_hf(model, tool, tmp)
            elif loop == "lightning":
                flops = _loop_lightning(compiled, tool, tmp)
            elif loop == "fabric":
                flops = _loop_fabric(compiled, tool)
            else:
                flops = _loop_accelerate(compiled, tool)
            out[loop] = {"counts": [a - b for a, b in zip(_counts(), before)], "flops": flops}
    return out


if __name__ == "__main__":  # the baseline: never imports mfu_tracker
    torch.set_num_threads(1)
    results = {name: run(name, tool=False) for name in sys.argv[1:]}
    assert "mfu_tracker" not in sys.modules
    print(json.dumps(results))
