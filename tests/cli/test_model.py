"""A command line's model: built on the meta device from its config and
counted there, against the matmul FLOPs written out by hand."""
from __future__ import annotations

import pytest

from mfu_tracker.cli._model import ModelError, meta_count

# A tiny Llama: hidden 64, 4 heads of 16 (no GQA), MLP 128, vocab 256, 2 layers.
CONFIG = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
          "num_key_value_heads": 4, "intermediate_size": 128, "vocab_size": 256,
          "num_hidden_layers": 2, "max_position_embeddings": 64, "tie_word_embeddings": False}

# One sequence of 16 tokens, forward, 2 FLOPs per multiply-add:
#   q, k, v, o projections: 2 x 16 x 64 x (4 x 64)    =   524,288 per layer
#   gate, up, down (MLP):   2 x 16 x 64 x 128 x 3     =   786,432 per layer
#   QK^T and AV, causal full: 2 x 2 x 16 x 16 x 64    =    65,536 per layer
#   lm_head:                2 x 16 x 64 x 256         =   524,288
FORWARD = 2 * (524_288 + 786_432 + 65_536) + 524_288      # 3,276,800


def test_forward_only_is_the_matmuls_by_hand():
    fc, model = meta_count(CONFIG, batch_size=1, seq_len=16, causal_attention="full",
                           attn_implementation="eager", forward_only=True)
    assert fc.model_flops == FORWARD
    assert next(model.parameters()).device.type == "meta"     # nothing allocated


def test_a_training_step_is_three_forwards():
    # backward: each matmul's input and weight gradients, 2 x the forward
    fc, _ = meta_count(CONFIG, batch_size=2, seq_len=16, causal_attention="full",
                       attn_implementation="eager")
    assert fc.model_flops == 3 * 2 * FORWARD


def test_a_config_transformers_cannot_build_is_one_line():
    assert issubclass(ModelError, Exception)
    with pytest.raises(ModelError, match="model_type"):
        meta_count({"hidden_size": 8}, batch_size=1, seq_len=4, causal_attention="full")
