"""One torchrun worker for tests/distributed/test_context_parallel.py:
``cp_worker.py OUTDIR``.

PyTorch's own context parallelism (torch.distributed.tensor.experimental.
context_parallel) does not run on the CPU (no sharding rule for the CPU
flash-attention kernel in torch 2.13), so each rank runs an explicit split
of a tiny Llama built by transformers: it holds its contiguous chunk of the
sequence (token ids and global position ids) and attention, registered as a
transformers attention function, is either

* ``ulysses``: q, k, v all-to-all to H / N heads over the whole sequence,
  causal SDPA, all-to-all back; or
* ``ring``: k and v all-gathered; the rank's queries against the keys
  before its chunk (non-causal SDPA) and its own chunk (causal SDPA), the
  two merged by their log-sum-exp (the blocks ring attention computes).

One forward + backward of each (mode, causal convention) runs under
FlopCounter; every rank writes its counts to ``OUTDIR/rank{r}.json``. The
outputs are checked against a single-process run (the split computes the
same attention).
"""
from __future__ import annotations

import json
import os
import sys

import torch
import torch.distributed as dist
import torch.distributed.nn.functional as dnf
import warnings
import torch.nn.functional as F
import transformers

from mfu_tracker.counter import FlopCounter

CONFIG = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
              intermediate_size=96, vocab_size=128, head_dim=16, use_cache=False)
S = 32  # tokens in the sequence (16 per rank)


def _heads_to_sequence(x: torch.Tensor, world: int) -> torch.Tensor:
    """[B, H, c, D] on each rank -> [B, H / world, c * world, D]: all-to-all."""
    parts = [p.contiguous() for p in x.chunk(world, dim=1)]  # heads, by destination rank
    got = dnf.all_to_all([torch.empty_like(p) for p in parts], parts)
    return torch.cat(got, dim=2)                        # chunks in rank order = sequence


def _sequence_to_heads(x: torch.Tensor, world: int) -> torch.Tensor:
    parts = [p.contiguous() for p in x.chunk(world, dim=2)]  # sequence chunks, back home
    got = dnf.all_to_all([torch.empty_like(p) for p in parts], parts)
    return torch.cat(got, dim=1)


def ulysses(module, query, key, value, attention_mask, scaling=None, **kwargs):
    world = dist.get_world_size()
    q, k, v = (_heads_to_sequence(t, world) for t in (query, key, value))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scaling,
                                         enable_gqa=True)
    return _sequence_to_heads(out, world).transpose(1, 2).contiguous(), None


def _flash(q, k, v, causal, scaling):
    out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
        q, k, v, 0.0, is_causal=causal, scale=scaling)[:2]
    return out, lse


def ring(module, query, key, value, attention_mask, scaling=None, **kwargs):
    rank, world = dist.get_rank(), dist.get_world_size()
    groups = query.shape[1] // key.shape[1]
    keys = dnf.all_gather(key.contiguous())
    values = dnf.all_gather(value.contiguous())
    k_own = keys[rank].repeat_interleave(groups, dim=1)
    v_own = values[rank].repeat_interleave(groups, dim=1)
    out, lse = _flash(query, k_own, v_own, True, scaling)          # the diagonal block
    if rank > 0:                                                     # the blocks before it
        k_pre = torch.cat(keys[:rank], dim=2).repeat_interleave(groups, dim=1)
        v_pre = torch.cat(values[:rank], dim=2).repeat_interleave(groups, dim=1)
        out_pre, lse_pre = _flash(query, k_pre, v_pre, False, scaling)
        total = torch.logaddexp(lse, lse_pre)
        out = (out * torch.exp(lse - total).unsqueeze(-1)
               + out_pre * torch.exp(lse_pre - total).unsqueeze(-1))
    return out.transpose(1, 2).contiguous(), None


def model_for(attention: str):
    torch.manual_seed(0)
    config = transformers.LlamaConfig(**CONFIG)
    model = transformers.LlamaForCausalLM(config).float()
    model.config._attn_implementation = attention
    return model


def main() -> None:
    warnings.simplefilter("ignore", FutureWarning)  # dnf.all_gather: differentiable, kept
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    transformers.AttentionInterface.register("cp_ulysses", ulysses)
    transformers.AttentionInterface.register("cp_ring", ring)
    for name in ("cp_ulysses", "cp_ring"):
        transformers.masking_utils.AttentionMaskInterface.register(
            name, lambda *args, **kwargs: None)  # each split masks on its own
    ids = torch.randint(0, 128, (1, S), generator=torch.Generator().manual_seed(0))
    chunk = S // world
    mine = slice(rank * chunk, (rank + 1) * chunk)
    positions = torch.arange(S)[None, mine]
    reference = model_for("sdpa")(input_ids=ids).logits[:, mine]
    out: dict = {"rank": rank, "world": world, "tokens": chunk, "counts": {}}
    for mode in ("ulysses", "ring"):
        model = model_for(f"cp_{mode}")
        for causal in ("full", "half"):
            with FlopCounter(causal_attention=causal) as fc:
                logits = model(input_ids=ids[:, mine], position_ids=positions).logits
                logits.float().sum().backward()
            out["counts"][f"{mode}/{causal}"] = {"model": fc.model_flops,
                                                 "errors": fc.errors}
            out[f"max_diff/{mode}"] = float((logits - reference).abs().max().detach())
            model.zero_grad(set_to_none=True)
    with open(os.path.join(sys.argv[1], f"rank{rank}.json"), "w") as f:
        json.dump(out, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
