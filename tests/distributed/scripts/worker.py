"""One torchrun worker for tests/distributed: ``worker.py CASE OUTDIR``.

Every rank runs CASE on the gloo backend on the CPU and writes
``OUTDIR/rank{r}.json``: what each aggregation returned, the rank's local
summary read right after it (the same window: the CPU clock resolves a step
at its step() call), the mfu_tracker warnings it got and the number of
all-gathers it started (counted by wrapping torch.distributed's). The pytest
side (tests/distributed/test_torchrun.py) recomputes the global figures from
those per-rank summaries by hand.
"""
from __future__ import annotations

import json
import os
import sys
import time
import warnings

import torch
import torch.distributed as dist
import torch.nn as nn

from mfu_tracker import param_bytes, user_gpu_spec
from mfu_tracker.step import Tracker

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from _rows import record_rows  # noqa: E402 -- tests/_rows.py

H = 32  # hidden size of the test MLP
# A made-up device: 0.05 TFLOP/s and 0.01 TB/s, so CPU figures are O(0.01 .. 1).
SPEC = user_gpu_spec(0.05, name="test cpu", memory_bandwidth_tbs=0.01)

GATHERS = 0
TRACKER_GROUPS: list = []  # the trackers' side groups (FSDP's own all-gathers are not counted)


def _count_gathers() -> None:
    """Wrap the all-gathers the aggregation may use, to count its collectives
    independently of the tracker's own counters."""
    for name in ("all_gather_single", "all_gather_into_tensor"):
        original = getattr(dist, name, None)
        if original is None:
            continue

        def counted(*args, __original=original, **kwargs):
            global GATHERS
            if any(kwargs.get("group") is g for g in TRACKER_GROUPS):
                GATHERS += 1
            return __original(*args, **kwargs)

        setattr(dist, name, counted)


def new_tracker(*args, **kwargs) -> Tracker:
    tracker = Tracker(*args, **kwargs)
    if tracker._dist is not None and tracker._dist.group is not None:
        TRACKER_GROUPS.append(tracker._dist.group)
    return tracker


def mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(H, 4 * H, bias=False), nn.GELU(), nn.Linear(4 * H, H, bias=False))


def mlp_flops(tokens: int) -> int:
    """Model FLOPs of one training step of mlp() on `tokens` rows (input without grad).

    up   [T, H] x [H, 4H]: forward 2*T*H*4H, weight grad 2*T*H*4H (no input grad)
    down [T, 4H] x [4H, H]: forward, weight grad, input grad: 3 * 2*T*4H*H
    total = 16*T*H^2 + 24*T*H^2 = 40*T*H^2
    """
    return 40 * tokens * H * H


def train_step(model: nn.Module, opt: torch.optim.Optimizer, batch: int, seq: int) -> None:
    x = torch.randn(batch, seq, H)
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)


def record(tracker: Tracker, metrics: dict) -> dict:
    return {"metrics": metrics, "summary": tracker.summary(),
            "counters": tracker.distributed_counters()}


def run(out: dict, trackers: dict, steps: int, every, work) -> None:
    """`steps` steps; tracker names -> lists of records at their logging steps.

    `every(name)` is the logging interval of a tracker on this rank."""
    for name in trackers:
        out.setdefault(name, [])
    for step in range(1, steps + 1):
        work(step)
        for tracker in trackers.values():
            tracker.step(num_tokens=out["tokens"])
        for name, tracker in trackers.items():
            if step % every(name) == 0:
                t0 = time.perf_counter()
                metrics = tracker.metrics()
                rec = record(tracker, metrics)
                rec["step"] = step
                rec["metrics_wall_s"] = time.perf_counter() - t0
                out[name].append(rec)


def case_bare(rank: int, out: dict) -> None:
    """Even work; a plain tracker, a tracker declaring tensor_parallel=2 (both
    ranks give the same replica figures) and an opted-out local tracker."""
    model, seq, batch = mlp(), 16, 4
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    tokens = batch * seq
    out["tokens"] = tokens
    flops = mlp_flops(tokens)
    common = dict(spec=SPEC, dtype="fp32", warmup=1, window=100)
    trackers = {
        "plain": new_tracker(flops, executed_flops_per_step=flops, param_bytes=param_bytes(model), **common),
        "tp2": new_tracker(flops, tensor_parallel=2, **common),
        "local": new_tracker(flops, distributed=False, **common),
    }
    out["distributed"] = {k: t.distributed for k, t in trackers.items()}
    run(out, trackers, 12, lambda name: 4, lambda step: train_step(model, opt, batch, seq))


def case_uneven(rank: int, out: dict) -> None:
    """Rank 1 gets 4x longer sequences and sleeps 20 ms more per step."""
    model, batch = mlp(), 4
    seq = 16 if rank == 0 else 64
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    out["tokens"] = batch * seq
    record_rows(out)             # the row this rank gives each aggregation
    tracker = new_tracker(mlp_flops(batch * seq), spec=SPEC, dtype="fp32", warmup=1)

    def work(step: int) -> None:
        train_step(model, opt, batch, seq)
        if rank == 1:
            time.sleep(0.02)

    run(out, {"tracker": tracker}, 15, lambda name: 5, work)


def case_ddp(rank: int, out: dict) -> None:
    """DDP with uneven per-rank tokens (rank 1: 4x); FLOPs counted on the DDP model."""
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.flop_counter import FlopCounterMode

    model = DDP(mlp())
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    batch, seq = 4, 16 * (1 + 3 * rank)
    out["tokens"] = batch * seq
    with FlopCounterMode(display=False) as counter:
        train_step(model, opt, batch, seq)
    flops = counter.get_total_flops()
    out["counted_flops"] = flops
    out["hand_flops"] = mlp_flops(batch * seq)
    tracker = new_tracker(flops, spec=SPEC, dtype="fp32", warmup=1)
    run(out, {"tracker": tracker}, 12, lambda name: 4, lambda step: train_step(model, opt, batch, seq))
    out["param_checksum"] = float(sum(p.detach().double().sum() for p in model.parameters()))


def case_fsdp2(rank: int, out: dict) -> None:
    """FSDP2: FLOPs and parameter bytes of the sharded model cover the full weights."""
    from torch.distributed.fsdp import fully_shard
    from torch.utils.flop_counter import FlopCounterMode

    reference = mlp()
    full_bytes = param_bytes(reference)
    model = mlp()
    for layer in model:
        if isinstance(layer, nn.Linear):
            fully_shard(layer)
    fully_shard(model)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    batch, seq = 4, 16
    out["tokens"] = batch * seq
    out["param_types"] = sorted({type(p).__name__ for p in model.parameters()})
    out["param_bytes"] = param_bytes(model)
    out["full_param_bytes"] = full_bytes
    out["local_shard_bytes"] = sum(p.to_local().numel() * p.element_size() for p in model.parameters())
    with FlopCounterMode(display=False) as counter:
        train_step(model, opt, batch, seq)
    out["counted_flops"] = counter.get_total_flops()
    with FlopCounterMode(display=False) as counter:
        train_step(reference, torch.optim.SGD(reference.parameters(), lr=1e-3), batch, seq)
    out["reference_flops"] = counter.get_total_flops()
    out["hand_flops"] = mlp_flops(batch * seq)
    tracker = new_tracker(out["counted_flops"], spec=SPEC, dtype="fp32", warmup=1,
                      param_bytes=param_bytes(model))
    run(out, {"tracker": tracker}, 8, lambda name: 4, lambda step: train_step(model, opt, batch, seq))


def case_mismatch(rank: int, out: dict) -> None:
    """Rank 0 logs every 2 steps, rank 1 every 3: four pairs meet at different
    steps, then rank 0's 5th call finds nobody (rank 1 is at the final barrier)."""
    model, batch, seq = mlp(), 2, 8
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    out["tokens"] = batch * seq
    tracker = new_tracker(mlp_flops(batch * seq), spec=SPEC, dtype="fp32", warmup=0,
                      distributed_timeout=float(os.environ.get("MFU_TEST_TIMEOUT", "3")))
    run(out, {"tracker": tracker}, 12, lambda name: 2 if rank == 0 else 3,
        lambda step: train_step(model, opt, batch, seq))
    out["distributed_after"] = tracker.distributed


def case_single(rank: int, out: dict) -> None:
    """World size 1 (torchrun --nproc_per_node=1): aggregation keys, no collective."""
    model, batch, seq = mlp(), 4, 16
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    out["tokens"] = batch * seq
    tracker = new_tracker(mlp_flops(batch * seq), spec=SPEC, dtype="fp32", warmup=1)
    out["distributed"] = tracker.distributed
    run(out, {"tracker": tracker}, 8, lambda name: 4, lambda step: train_step(model, opt, batch, seq))


def case_trainer(rank: int, out: dict) -> None:
    """A tiny GPT-2 under transformers.Trainer, which wraps it in DDP when
    launched by torchrun, with MFUCallback."""
    import tempfile

    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

    import mfu_tracker.tracker._tracker
    from mfu_tracker.integrations.hf_trainer import MFUCallback

    mfu_tracker.tracker._tracker.Tracker = new_tracker  # count the callback tracker's all-gathers too

    class Data(torch.utils.data.Dataset):
        def __init__(self) -> None:
            g = torch.Generator().manual_seed(1)
            self.ids = torch.randint(1, 64, (64, 8), generator=g)

        def __len__(self) -> int:
            return len(self.ids)

        def __getitem__(self, i: int) -> dict:
            return {"input_ids": self.ids[i], "labels": self.ids[i]}

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_embd=32, n_layer=2, n_head=2, vocab_size=64,
                                       n_positions=64, bos_token_id=0, eos_token_id=0))
    callback = MFUCallback(peak_tflops=0.05)
    with tempfile.TemporaryDirectory() as tmp:
        args = TrainingArguments(output_dir=tmp, per_device_train_batch_size=2, max_steps=6,
                                 logging_steps=2, report_to=[], use_cpu=True, save_strategy="no",
                                 ddp_backend="gloo", disable_tqdm=True, dataloader_num_workers=0)
        trainer = Trainer(model=model, args=args, train_dataset=Data(), callbacks=[callback])
        trainer.train()
    out["wrapped"] = type(trainer.model_wrapped).__name__
    out["logs"] = [{k: v for k, v in entry.items() if isinstance(v, (int, float))}
                   for entry in trainer.state.log_history]
    out["tokens"] = 0


def case_mixed(rank: int, out: dict) -> None:
    """Mixed precision and telemetry under aggregation: flops_by_dtype on an H100 SXM spec (rank 0
    fp8 + bf16, rank 1 bf16 only) and telemetry from the fake NVML that
    MFU_TRACKER_NVML_LIBRARY names, its knobs set per rank (each rank loads
    its own copy: 200 / 400 W, 1800 / 1400 MHz of 1980, rank 1 power-capped),
    on the fake's virtual clock (steps of exactly 2 ms)."""
    import ctypes

    from mfu_tracker import lookup_gpu_spec

    import mfu_tracker

    nvml = ctypes.CDLL(os.environ["MFU_TRACKER_NVML_LIBRARY"])
    nvml.fake_nvml_set.argtypes = [ctypes.c_char_p, ctypes.c_ulonglong]
    nvml.fake_nvml_virtual_clock.argtypes = [ctypes.c_int]
    nvml.fake_nvml_advance_ns.argtypes = [ctypes.c_uint64]
    for knob, value in (("power_mw", (200_000, 400_000)[rank]), ("sm_mhz", (1800, 1400)[rank]),
                        ("sm_max_mhz", 1980), ("reasons", (0, 0x4)[rank])):
        assert nvml.fake_nvml_set(knob.encode(), value) == 0, knob
    # the core's CPU time and the fake's energy counter on one virtual clock that only
    # the steps move (2 ms each): power is exact, whatever the machine's load
    nvml.fake_nvml_virtual_clock(1)
    core = ctypes.CDLL(mfu_tracker._C.__file__)
    core.mfu_clock_set_source.argtypes = [ctypes.c_void_p]
    core.mfu_clock_set_source(ctypes.cast(nvml.fake_nvml_clock_ns, ctypes.c_void_p))
    h100 = lookup_gpu_spec("NVIDIA H100 80GB HBM3", num_sms=132)
    by_dtype = ({"fp8": 4e6, "bf16": 1e6}, {"bf16": 2e6})[rank]
    out["tokens"] = 64
    tracker = new_tracker(None, spec=h100, dtype="bf16", clock="cpu", warmup=1, window=100,
                          flops_by_dtype=by_dtype, telemetry=os.environ["FAKE_NVML_UUID"])
    run(out, {"tracker": tracker}, 9, lambda name: 3, lambda step: nvml.fake_nvml_advance_ns(2_000_000))


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}


def main() -> None:
    case, outdir = sys.argv[1], sys.argv[2]
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    _count_gathers()
    out: dict = {"rank": rank, "world_size": dist.get_world_size()}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        CASES[case](rank, out)
        dist.barrier()
    out["warnings"] = [str(w.message) for w in caught if "mfu_tracker" in str(w.message)]
    out["gathers"] = GATHERS
    with open(os.path.join(outdir, f"rank{rank}.json"), "w") as f:
        json.dump(out, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
