"""A process group of rank 0 in this test process, destroyed after the block:
gloo for a world of one, torch's fake backend (collectives that do nothing)
for the ranks a single machine lacks."""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

import pytest


@contextlib.contextmanager
def process_group(backend: str, world_size: int) -> Iterator[Any]:
    """``torch.distributed`` with a group of ``world_size`` initialised on
    ``backend`` ("gloo" or "fake"); skips the test where it is unavailable."""
    dist = pytest.importorskip("torch.distributed")
    if not dist.is_available():
        pytest.skip("no torch.distributed")
    if backend == "gloo" and not dist.is_gloo_available():
        pytest.skip("no gloo")
    if backend == "fake":
        store = pytest.importorskip("torch.testing._internal.distributed.fake_pg").FakeStore()
    else:
        store = dist.HashStore()
    dist.init_process_group(backend, store=store, rank=0, world_size=world_size)
    try:
        yield dist
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
