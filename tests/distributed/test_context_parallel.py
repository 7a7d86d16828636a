"""Context parallelism, per rank: each rank's FlopCounter count of its share
of a step equals ``transformer_flops(..., context_parallel=N, cp_rank=r,
cp_mode=...)``, and the ranks' tokens add up to the sequence's.

``torchrun --nproc_per_node=2``, gloo, CPU: scripts/cp_worker.py runs a tiny
transformers Llama with each rank holding half of a 32-token sequence and
attention split explicitly (Ulysses all-to-all of heads; ring / all-gather
KV blocks), since PyTorch's own context_parallel has no CPU kernel. The
split's outputs equal the single-process model's.
"""
from __future__ import annotations

import pytest

from mfu_tracker import transformer_flops
from test_torchrun import TORCHRUN, launch

pytestmark = pytest.mark.skipif(not TORCHRUN.exists(), reason="torchrun not installed")

CONFIG = dict(model_type="llama", hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, intermediate_size=96, vocab_size=128, head_dim=16,
              tie_word_embeddings=False)
S = 32


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    from test_torchrun import WORKER

    worker = WORKER.with_name("cp_worker.py")
    return launch(None, tmp_path_factory.mktemp("cp"), worker=worker)


@pytest.mark.parametrize("mode", ["ulysses", "ring"])
@pytest.mark.parametrize("causal", ["full", "half"])
def test_each_rank_counts_its_analytic_share(ranks, mode, causal):
    for out in ranks:
        assert out[f"max_diff/{mode}"] < 1e-5  # the split computes the model's attention
        counted = out["counts"][f"{mode}/{causal}"]
        assert counted["errors"] == 0
        f = transformer_flops(CONFIG, seq_len=S, formula="matmul", causal_attention=causal,
                              context_parallel=2, cp_rank=out["rank"], cp_mode=mode)
        assert f.model_flops == counted["model"]
        assert f.num_tokens == out["tokens"] == S // 2
    # the group's tokens are the sequence's: never divided by the degree twice
    assert sum(out["tokens"] for out in ranks) == S == f.conventions["context_parallel"][
        "group_tokens"]


def test_ring_ranks_by_hand(ranks):
    single = transformer_flops(CONFIG, seq_len=S, formula="matmul", causal_attention="half")
    half = [out["counts"]["ring/half"]["model"] for out in ranks]
    # under "half" the ring's blocks add up to the single-device count: the
    # skipped upper blocks are the half not counted
    assert sum(half) == single.model_flops
    # rank 1 computes one whole 16 x 16 block more than rank 0: 256 pairs x 4
    # heads x 2 x (16 + 16) FLOPs a pair, 2 layers, 3x for the backward
    assert half[1] - half[0] == 3 * 2 * 256 * (2 * 4 * 32) == 393_216
    full = [out["counts"]["ring/full"]["model"] for out in ranks]
    whole = transformer_flops(CONFIG, seq_len=S, formula="matmul")
    # under "full" the upper block (rank 0's 16 x 16 block above the
    # diagonal) never runs: 393,216 fewer than the single-device full count
    assert whole.model_flops - sum(full) == 393_216
