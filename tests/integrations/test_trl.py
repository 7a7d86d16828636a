"""RolesCallback's own checks (integrations/trl.py); the full GRPO / DPO
runs are in tests/integrations/test_trl_roles.py."""
from __future__ import annotations

import pytest
import torch

from mfu_tracker.integrations import trl as trl_roles
from mfu_tracker.integrations.trl import RolesCallback


def test_a_forwards_real_tokens_are_its_masks_ones_else_its_ids():
    ids = torch.zeros(2, 5, dtype=torch.long)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    assert trl_roles._real_tokens((), {"input_ids": ids, "attention_mask": mask}) == 3 + 5
    assert trl_roles._real_tokens((ids,), {}) == 10
    assert trl_roles._real_tokens((), {"input_ids": ids}) == 10
    assert trl_roles._real_tokens((), {}) is None


def test_a_trainer_that_is_not_grpo_or_dpo_is_a_type_error_naming_it():
    pytest.importorskip("trl")

    class Trainer:
        pass

    with pytest.raises(TypeError, match="trainer must be a trl GRPOTrainer or DPOTrainer, not Trainer"):
        RolesCallback(Trainer())
