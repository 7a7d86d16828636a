"""profile_flops (mfu_tracker/flops/counter/_profile.py): one sample step
counted, against FlopCounterMode, on the CPU and on meta."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from mfu_tracker.flops.counter._profile import (  # noqa: E402
    FlopProfile,
    profile_flops,
    profile_flops_with_hfu,
)


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16, bias=False),
                               torch.nn.Linear(16, 4, bias=False))


X = torch.randn(4, 8)
# forward 2*4*8*16 + 2*4*16*4 = 1,024 + 512; backward: both weight grads
# (1,024 + 512) and the second layer's input grad (512; the batch needs none)
FORWARD, STEP = 1_536, 1_536 + 1_536 + 512


def test_a_step_is_counted_as_flop_counter_mode_counts_it():
    model = _model()
    with FlopCounterMode(display=False) as mode:
        model(X).sum().backward()
    assert profile_flops(model, X) == mode.get_total_flops() == STEP
    assert profile_flops(model, X, with_backward=False) == FORWARD
    fresh = _model()
    assert profile_flops(fresh, X) == STEP
    assert all(p.grad is None for p in fresh.parameters())  # autograd.grad, no .grad left


def test_meta_counts_the_same_without_touching_the_model():
    model = _model()
    assert profile_flops(model, kwargs={"input": X}, device="meta") == STEP
    assert all(p.device.type == "cpu" for p in model.parameters())
    profile = profile_flops_with_hfu(model, (X,))
    assert isinstance(profile, FlopProfile) and profile == (STEP, STEP)  # no recompute


def test_a_frozen_first_layer_needs_no_gradient_below_the_second_weight():
    model = _model()
    model[0].weight.requires_grad_(False)
    # forward 1,536 + the second weight's gradient 512 (no input gradient is needed)
    assert profile_flops(model, X) == FORWARD + 512 == 2_048


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="model must be a torch.nn.Module"):
        profile_flops(lambda x: x, X)
    with pytest.raises(TypeError, match="args must be a tensor"):
        profile_flops(_model(), 3)
    with pytest.raises(TypeError, match="kwargs must be a dict"):
        profile_flops(_model(), kwargs=[X])
    with pytest.raises(TypeError, match="not a dict in both"):
        profile_flops(_model(), {"input": X}, {"input": X})
