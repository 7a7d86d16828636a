"""The process's communication observer (distributed/_comm_observer.py), in
a gloo group of one: the C++ observer is what sees the collectives, a
tracker's own collectives are nobody's, the link given is every group's, and
the ninth observing tracker is refused with a warning."""
from __future__ import annotations

import warnings

import pytest
import torch

from _process_group import process_group
from mfu_tracker import _C, user_gpu_spec
from mfu_tracker._native._observer import key_problem, observer_module
from mfu_tracker.distributed import _comm_observer
from mfu_tracker.distributed._comm_observer import CommObservation, unobserved
from mfu_tracker.step import Tracker

SPEC = user_gpu_spec(1000.0, name="fake GPU", memory_bandwidth_tbs=2.0)


@pytest.fixture
def world_of_one():
    if observer_module() is None or key_problem("comm") is not None:
        pytest.skip(f"the C++ observer is unavailable here (collectives would be seen "
                    f"through the dispatch fallback): {key_problem('comm')}")
    with process_group("gloo", world_size=1) as dist:
        yield dist


def test_the_cpp_observer_is_installed_not_the_dispatch_fallback(world_of_one):
    with warnings.catch_warnings():
        warnings.simplefilter("error")             # the fallback would warn
        t = Tracker(1e9, spec=SPEC, warmup=0)
    process = _comm_observer._PROCESS
    assert isinstance(t._comm, CommObservation)
    assert process.module is observer_module() and process.mode is None
    assert process.observations == 1
    t.close()
    assert process.module is None and process.observations == 0


def test_a_trackers_own_collectives_are_nobodys(world_of_one):
    t = Tracker(1e9, spec=SPEC, warmup=0)
    t.step()
    with unobserved():
        world_of_one.all_reduce(torch.ones(1024))      # 4 KiB: not recorded
    world_of_one.all_reduce(torch.ones(64))            # 256 B: recorded
    t.step()
    assert t.summary()["comm_bytes"] == {"all_reduce": 64 * 4}
    t.close()
    with unobserved():                                 # nobody observes: a no-op block
        world_of_one.all_reduce(torch.ones(4))


def test_the_link_given_is_every_groups_link(world_of_one):
    t = Tracker(1e9, spec=SPEC, warmup=0, link_bandwidth_gbs=450.0)
    assert t._comm.link_of("0") == 450e9               # GB/s -> bytes/s per direction
    assert t._comm.link_of("any group") == 450e9
    t.close()
    # without one, a CPU group's link is unknown: None (net_utilization left out)
    plain = Tracker(1e9, spec=SPEC, warmup=0)
    assert plain._comm.link_of("0") is None
    plain.close()


def test_the_trackers_beyond_the_sinks_are_refused_with_a_warning(world_of_one):
    trackers = [Tracker(1e9, spec=SPEC, warmup=0) for _ in range(_C.LIMIT_COMM_SINKS_MAX)]
    try:
        with pytest.warns(RuntimeWarning, match=f"{_C.LIMIT_COMM_SINKS_MAX} trackers already "
                          "observe communication; this one does not"):
            extra = Tracker(1e9, spec=SPEC, warmup=0)
        assert not extra.observes_communication
        assert all(t.observes_communication for t in trackers)
        extra.close()
    finally:
        for t in trackers:
            t.close()
    assert _comm_observer._PROCESS.observations == 0


def test_without_a_group_nothing_is_observed():
    t = Tracker(1e9, spec=SPEC, warmup=0)
    assert not t.observes_communication and _comm_observer._PROCESS.module is None
    t.close()
