"""mfu_tracker/distributed/_comm_mode.py: the payload of a collective's
arguments -- bytes of a Tensor, Tensor[] or Tensor[][] (numel x element
size), whether they are real tensors and all on the host."""
from __future__ import annotations

import torch

from mfu_tracker.distributed._comm_mode import payload_bytes


def test_payload_bytes_by_hand():
    one = torch.zeros(10, dtype=torch.float32)                  # 40 bytes
    assert payload_bytes(one) == (40.0, True, True)
    nested = [[torch.zeros(4, dtype=torch.bfloat16)], (torch.zeros(2, 3, dtype=torch.int64),)]
    assert payload_bytes(nested) == (4 * 2 + 6 * 8, True, True)  # 8 + 48 bytes
    assert payload_bytes("not a tensor") == (0.0, True, True)


def test_meta_tensors_are_not_a_real_collective():
    total, real, host = payload_bytes([torch.zeros(4), torch.empty(8, device="meta")])
    assert total == 16.0 and real is False


