"""mfu_tracker/agent/_inputs.py: the tokens among a root call's inputs, and
the dtype it computes in."""
from __future__ import annotations

import torch

from mfu_tracker.agent._inputs import NOT_TOKENS, detect_dtype, token_inputs

IDS = torch.zeros(4, 16, dtype=torch.long)


def test_the_token_tensor_in_order_of_preference():
    other = torch.ones(2, 3, dtype=torch.long)
    assert token_inputs((other,), {"input_ids": IDS}) == ({"input_ids": IDS}, "input_ids")
    found, where = token_inputs((torch.randn(2), IDS), {})
    assert found["input_ids"] is IDS and where == "argument 1"
    found, where = token_inputs((), {"labels": other, "tokens": IDS})
    assert found["input_ids"] is IDS and where == "tokens"      # labels are not tokens
    assert "labels" in NOT_TOKENS and "attention_mask" in NOT_TOKENS
    embeds = torch.randn(4, 16, 8)
    assert token_inputs((), {"inputs_embeds": embeds}) == \
        ({"inputs_embeds": embeds}, "inputs_embeds (batch x sequence)")
    assert token_inputs((torch.randn(3), torch.ones(3, dtype=torch.bool)), {}) == (None, "")


def test_a_cpu_mask_of_the_same_shape_is_read():
    mask = torch.ones(4, 16, dtype=torch.long)
    found, where = token_inputs((), {"input_ids": IDS, "attention_mask": mask})
    assert found["attention_mask"] is mask and where == "attention_mask ones of input_ids"
    other_shape = torch.ones(4, 8, dtype=torch.long)
    found, where = token_inputs((), {"input_ids": IDS, "attention_mask": other_shape})
    assert "attention_mask" not in found and where == "input_ids"


def test_the_dtype():
    cpu = torch.device("cpu")
    assert detect_dtype(torch.nn.Linear(2, 2), cpu) == ("fp32", "the parameters")
    assert detect_dtype(torch.nn.Linear(2, 2).to(torch.bfloat16), cpu) == \
        ("bf16", "the parameters")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert detect_dtype(torch.nn.Linear(2, 2), cpu) == ("bf16", "autocast")
    assert detect_dtype(torch.nn.ReLU(), cpu) == ("fp32", "the parameters")   # no parameters
