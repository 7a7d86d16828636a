"""The Mamba-1 token loop batched for meta counts
(mfu_tracker/flops/_meta_scans.py): the swap in and out, and the readout
matmul's FLOPs, 2*b*L*I*N, by FlopCounterMode."""
from __future__ import annotations

import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from mfu_tracker.flops import _meta_scans  # noqa: E402

MAMBA = "transformers.models.mamba.modeling_mamba"
B, I, L, N = 2, 8, 5, 4  # batch, inner width, tokens, state size


def _inputs(device):
    make = lambda *shape: torch.randn(*shape, device=device)  # noqa: E731
    return make(B, I, L), make(B, I, L), make(I, N), make(B, N, L), make(B, N, L)


def test_the_scan_is_swapped_while_the_block_runs_and_restored_after():
    module = pytest.importorskip(MAMBA)
    original = module.mamba_selective_scan
    assert MAMBA in _meta_scans.MODULES
    with _meta_scans.batched_scans():
        with _meta_scans.batched_scans():  # nested blocks share one swap
            assert module.mamba_selective_scan.__wrapped__ is original
        assert module.mamba_selective_scan is not original
    assert sys.modules[MAMBA].mamba_selective_scan is original


def test_meta_tensors_run_batched_with_one_readout_matmul():
    module = pytest.importorskip(MAMBA)
    before = _meta_scans.batched_calls()
    with _meta_scans.batched_scans(), FlopCounterMode(display=False) as mode:
        out = module.mamba_selective_scan(*_inputs("meta"))
    assert _meta_scans.batched_calls() == before + 1
    assert tuple(out.shape) == (B, I, L)
    # every token's state [I, N] read out by C[:, t] [N, 1]: 2 * 2*5*8*4 = 640
    assert mode.get_total_flops() == 2 * B * L * I * N == 640


def test_real_tensors_take_transformers_own_scan():
    module = pytest.importorskip(MAMBA)
    inputs = _inputs("cpu")
    expected = module.mamba_selective_scan(*inputs)
    before = _meta_scans.batched_calls()
    with _meta_scans.batched_scans():
        got = module.mamba_selective_scan(*inputs)
    assert _meta_scans.batched_calls() == before
    torch.testing.assert_close(got, expected)
