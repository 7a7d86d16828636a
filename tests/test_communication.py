"""Communication in one process (docs/communication.md): the arguments, the C tables seen
from Python (checked against torch's own operator schemas), the links
(intra- vs inter-node by host, a fake sysfs), the waterfall with the kinds
and the bubble by hand, the job's figures by hand (combine), and the GPU
timeline on the fake driver through Tracker: exposure and overlap exact,
zero synchronizing calls. Multi-rank behaviour: tests/distributed/
test_distributed_communication.py (torchrun)."""
from __future__ import annotations

import math
import warnings

import pytest

from mfu_tracker import _C, user_gpu_spec
from mfu_tracker.distributed._figures import ROW_FIELDS, RankFigures, combine
from mfu_tracker.timing._totals import StepSums
from mfu_tracker.distributed._links import GroupLinks, is_intra_node, network_ports
from mfu_tracker.step import Tracker
from mfu_tracker.timing._metrics import format_metrics
from mfu_tracker.timing._waterfall import COMM_KINDS, split_communication, waterfall

from _process_group import process_group

SPEC = user_gpu_spec(1000.0, name="fake GPU", memory_bandwidth_tbs=2.0)  # 1e15 FLOP/s
MS = 1_000_000


# ---- arguments ------------------------------------------------------------------

def test_bad_arguments_name_themselves():
    with pytest.raises(TypeError, match="comm"):
        Tracker(1.0, spec=SPEC, comm="yes")
    with pytest.raises(ValueError, match="link_bandwidth_gbs"):
        Tracker(1.0, spec=SPEC, link_bandwidth_gbs=0.0)
    with pytest.raises(ValueError, match="comm=True needs an initialized"):
        Tracker(1.0, spec=SPEC, comm=True)
    t = Tracker(1.0, spec=SPEC)  # no process group: nothing to observe
    assert not t.observes_communication


# ---- the tables, against torch's own schemas -------------------------------------

def test_op_table_matches_torch_schemas():
    torch = pytest.importorskip("torch")
    import torch.distributed  # noqa: F401  (registers the c10d operators)

    schemas = {s.name: s for s in torch._C._jit_get_all_schemas() if s.name.startswith("c10d::")}
    for row in _C.comm_op_table():
        schema = schemas[row["name"]]  # every row is a real operator
        args = schema.arguments
        assert "ProcessGroup" in str(args[row["group_arg"]].type), row
        for key in ("payload_arg", "result_arg"):
            if row[key] >= 0:
                assert str(args[row[key]].type) in ("Tensor", "List[Tensor]",
                                                     "List[List[Tensor]]"), (row, key)
    # every collective ProcessGroup dispatches is in the table
    collectives = {n for n in schemas if n not in ("c10d::check_for_nan",)}
    assert collectives <= {row["name"] for row in _C.comm_op_table()}


def test_kinds_phases_and_bus_factors():
    assert COMM_KINDS == ("all_gather", "reduce_scatter", "all_reduce", "all_to_all",
                          "broadcast", "p2p", "other")
    names = _C.phase_names()
    assert names[_C.comm_kind_phase("other")] == "communication"
    assert names[_C.comm_kind_phase("all_gather")] == "all_gather"
    # nccl-tests doc/PERFORMANCE.md, 4 ranks: 2 * 3 / 4, 3 / 4, 1
    assert _C.comm_busbw_factor("all_reduce", 4) == 1.5
    assert _C.comm_busbw_factor("reduce_scatter", 4) == 0.75
    assert _C.comm_busbw_factor("p2p", 4) == 1.0
    assert _C.comm_busbw_factor("other", 4) is None
    with pytest.raises(ValueError, match="group_size"):
        _C.comm_busbw_factor("all_reduce", 0)
    with pytest.raises(ValueError, match="kind"):
        _C.comm_busbw_factor("allreduce", 2)
    assert _C.comm_op_type_kind("_REDUCE_SCATTER_BASE") == "reduce_scatter"
    assert _C.comm_op_type_kind("UNKNOWN") is None


def test_link_table_rows():
    rows = _C.link_table()
    assert all(r["source"] and "https://" in r["source"] for r in rows)
    assert _C.link_intra("H100 SXM")["bytes_per_sec"] == 450e9  # 900 GB/s total / 2
    assert _C.link_intra("H100 SXM")["kind"] == "nvlink"
    assert _C.link_intra("MI300X")["kind"] == "xgmi"
    assert _C.link_intra("not a device") is None
    assert _C.link_inter("InfiniBand", 400.0)["bytes_per_sec"] == 50e9  # NDR: 400 Gb/s / 8
    assert _C.link_inter("Ethernet", 200.0)["kind"] == "roce"
    assert _C.link_parse_rate("200 Gb/sec (4X HDR)\n") == 200.0
    with pytest.raises(ValueError, match="rate"):
        _C.link_parse_rate("fast")
    assert _C.link_share(50e9, 2, 4) == 25e9 and _C.link_share(50e9, 0, 4) is None


# ---- links: intra- vs inter-node by host ------------------------------------------

def _sysfs(tmp_path, ports):
    """A fake /sys/class/infiniband: ports = [(hca, state, layer, rate), ...]."""
    for i, (hca, state, layer, rate) in enumerate(ports, 1):
        port = tmp_path / hca / "ports" / str(i)
        port.mkdir(parents=True)
        (port / "state").write_text(state)
        (port / "link_layer").write_text(layer + "\n")
        (port / "rate").write_text(rate + "\n")
    return tmp_path


def test_group_links_by_host(tmp_path):
    root = _sysfs(tmp_path, [("mlx5_0", "4: ACTIVE", "InfiniBand", "400 Gb/sec (4X NDR)"),
                             ("mlx5_1", "4: ACTIVE", "InfiniBand", "400 Gb/sec (4X NDR)"),
                             ("mlx5_2", "1: DOWN", "InfiniBand", "400 Gb/sec (4X NDR)")])
    hosts = ["a", "a", "a", "a", "b", "b", "b", "b"]  # 4 ranks per node
    links = GroupLinks("H100 SXM", hosts, rank=1, sysfs_root=root)
    assert links.link_of("tp", [0, 1, 2, 3]) == 450e9         # one host: NVLink 4
    # across hosts: 2 active NDR ports x 50 GB/s shared by the 4 ranks of the node
    assert links.link_of("dp", [1, 5]) == 2 * 50e9 / 4
    assert links.unknown == {}
    # the override wins everywhere
    assert GroupLinks("H100 SXM", hosts, 1, fallback=7e9, sysfs_root=root).link_of("dp", [1, 5]) == 7e9


def test_group_links_unknown_says_why(tmp_path):
    root = _sysfs(tmp_path, [("mlx5_0", "4: ACTIVE", "InfiniBand", "56 Gb/sec (4X FDR)")])
    links = GroupLinks(None, ["a", "b"], rank=0, sysfs_root=root)
    assert links.link_of("world", [0, 1]) is None
    assert "56 Gb/s" in links.unknown["world"]
    assert links.link_of("self", [0]) is None and "not a peak-table GPU" in links.unknown["self"]
    assert GroupLinks("A10G", None, 0).link_of("g", [0, 1]) is None  # hosts unknown
    assert network_ports(tmp_path / "missing")[0] is None
    mixed = _sysfs(tmp_path / "mixed", [("a", "ACTIVE", "InfiniBand", "400 Gb/sec"),
                                        ("b", "ACTIVE", "Ethernet", "100 Gb/sec")])
    assert "differ" in network_ports(mixed)[2]
    assert is_intra_node([0, 1], ["x", "x"]) is True and is_intra_node([0, 2], ["x"]) is None


# ---- the waterfall with kinds and the bubble, by hand -----------------------------

def test_split_and_waterfall_by_hand():
    # the engine's phases: backward 4, all_gather 1, reduce_scatter 0.5, the
    # hand-marked communication 0.25 (kind `other`), bubble 2; T = 10 s, mfu 0.2
    raw = {"backward": 4.0, "all_gather": 1.0, "reduce_scatter": 0.5, "communication": 0.25,
           "pipeline_bubble": 2.0}
    phase_s, comm_s = split_communication(raw)
    assert comm_s == {"all_gather": 1.0, "reduce_scatter": 0.5, "other": 0.25}
    assert phase_s == {"backward": 4.0, "communication": 1.75, "pipeline_bubble": 2.0}
    w = waterfall(0.2, None, 10.0, phase_s)
    assert w["communication"] == pytest.approx(0.175)        # 1.75 / 10
    assert w["pipeline_bubble"] == pytest.approx(0.2)        # 2 / 10: its own share
    assert w["compute"] == pytest.approx(0.4 - 0.2)          # 4 / 10 - mfu
    assert math.fsum([0.2, *w.values()]) == 1.0
    assert list(w) == ["communication", "pipeline_bubble", "compute", "other"]


def _rank(rank, comm, *, comm_s_total=None, busy_comm=0.0, bubble=None, **extra):
    return RankFigures(
        rank=rank, boundaries=11, steps=10, window_s=1.0, step_time_s=0.1, step_time_min_s=0.1,
        step_time_max_s=0.1, sums=StepSums(model_flops=1e12), peak_flops_per_sec=1e13,
        peak_bytes_per_sec=None, num_devices=1, model_parallel=1, interval_s=None,
        interval_steps=0, phase_backward_s=0.05, phase_communication_s=busy_comm,
        phase_pipeline_bubble_s=bubble, comm_observed=1.0, comm=comm, **extra)


def test_combine_communication_by_hand():
    r0 = _rank(0, (("comm_bytes", {"all_reduce": 100.0, "p2p": 10.0}),
                   ("comm_s", {"all_reduce": 0.02}),
                   ("comm_busbw_gbs", {"all_reduce": 4.0})),
               busy_comm=0.02, net_utilization=0.4, comm_overlap=0.5)
    r1 = _rank(1, (("comm_bytes", {"all_reduce": 100.0}),
                   ("comm_s", {"all_reduce": 0.01, "p2p": 0.03})),
               busy_comm=0.04, net_utilization=None, comm_overlap=0.7)
    g = combine([r0, r1])
    assert g.comm_bytes == {"all_reduce": 100.0, "p2p": 5.0}     # (10 + 0) / 2
    assert g.comm_s == {"all_reduce": 0.015, "p2p": 0.015}       # (0.02 + 0.01) / 2, (0 + 0.03) / 2
    assert g.comm_s_max == pytest.approx(0.04)                   # rank 1: 0.01 + 0.03
    assert g.comm_busbw_gbs == {"all_reduce": 4.0}               # the rank that timed it
    assert g.net_utilization == 0.4 and g.comm_overlap == pytest.approx(0.6)
    assert g.straggler_rank == 0  # busy 0.1 - 0.02 > 0.1 - 0.04
    m = g.metrics()
    assert m["throughput/comm_bytes/p2p"] == 5.0 and m["throughput/comm_s_max"] == pytest.approx(0.04)
    # the row carries it all: a round trip through the gathered floats
    assert len(r1.to_row()) == len(ROW_FIELDS)
    assert RankFigures.from_row(r0.to_row()) == r0 and RankFigures.from_row(r1.to_row()) == r1
    # a rank that does not observe its communication: no job figure
    r2 = _rank(2, ()).__class__(**{**r1.__dict__, "rank": 2, "comm_observed": None})
    assert combine([r0, r2]).comm_bytes is None


def test_keys_of_the_families():
    m = format_metrics({"comm_bytes": {"all_gather": 2.0}, "comm_s": {"p2p": 0.5},
                        "comm_busbw_gbs": {"all_gather": 3.0}, "net_utilization": 0.25,
                        "comm_overlap": 0.75, "comm_s_max": 1.0}, "tp")
    assert m == {"tp/comm_bytes/all_gather": 2.0, "tp/comm_s/p2p": 0.5,
                 "tp/comm_busbw_gbs/all_gather": 3.0, "tp/net_utilization": 0.25,
                 "tp/comm_overlap": 0.75, "tp/comm_s_max": 1.0}


# ---- a process group of one, in this process ---------------------------------------

@pytest.fixture
def world_of_one():
    with process_group("gloo", world_size=1) as dist:
        yield dist


COMPUTE, COMM = 1, 2  # fake stream handles


def test_gpu_timeline_exposure_and_overlap(fake, world_of_one):
    """Through Tracker on the fake GPU: a collective on its own stream and the
    compute stream waiting for it (conftest's fake driver; fake_cuda.c's
    header). Two steps, GPU timeline in ms:
      step 1: compute 0..2, launch at 2, the collective 2..7 on K; compute
              2..5, then C waits for K (5..7: 2 exposed), compute 7..8
      step 2: compute 8..10, launch at 10, the collective 10..14; compute
              10..16 hides it (0 exposed), compute 16..17
    exposed 2 ms of 9 ms of collectives: overlap 7 / 9."""
    t = Tracker(5e11, spec=SPEC, clock="cuda", stream=COMPUTE, warmup=0, comm=True,
                link_bandwidth_gbs=450.0)
    assert t.observes_communication and t.clock == "cuda"
    phase = _C.comm_kind_phase("all_reduce")
    t.step()
    for compute_after_launch in (3, 6):
        with t.phase("backward"):
            fake.enqueue_ns(COMPUTE, 2 * MS)
            token = t._comm_begin("all_reduce", 8e6, 8e6, 450e9)  # n = 2: factor 1
            fake.stream_wait_stream(COMM, COMPUTE)
            fake.enqueue_ns(COMM, (5 if compute_after_launch == 3 else 4) * MS)
            t._comm_end(token, COMM)
            fake.enqueue_ns(COMPUTE, compute_after_launch * MS)
            _C.comm_wait_begin(phase)               # the Work.wait wrapper's marks
            fake.stream_wait_stream(COMPUTE, COMM)  # the stream waits for the collective
            _C.comm_wait_end()
            fake.enqueue_ns(COMPUTE, 1 * MS)
        t.step()
    fake.advance(1000 * MS)
    local = t.summary()
    assert local["comm_s"] == {"all_reduce": pytest.approx(2e-3 / 2, rel=1e-5)}  # per step
    assert local["phase_s"]["communication"] == local["comm_s"]["all_reduce"]
    assert local["step_time_s"] == pytest.approx(17e-3 / 2, rel=1e-6)           # (8 + 9) / 2
    assert local["comm_overlap"] == pytest.approx(7 / 9, rel=1e-5)
    assert local["comm_bytes"] == {"all_reduce": 8e6}
    assert local["comm_busbw_gbs"]["all_reduce"] == pytest.approx(16e6 / 9e-3 / 1e9, rel=1e-5)
    assert local["net_utilization"] == pytest.approx(16e6 / (9e-3 * 450e9), rel=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = t.metrics()
    assert m["throughput/comm_overlap"] == pytest.approx(7 / 9, rel=1e-5)
    assert m["throughput/mfu_lost/communication"] == pytest.approx(1e-3 / 8.5e-3, rel=1e-4)
    assert math.fsum([m["throughput/mfu"], *(v for k, v in m.items() if "/mfu_lost/" in k)]) == 1.0
    assert fake.sync_calls() == 0
    t.close()


def test_observer_installs_and_leaves(world_of_one):
    torch = pytest.importorskip("torch")
    work_type = world_of_one.distributed_c10d.Work
    original = work_type.wait
    t = Tracker(1e9, spec=SPEC, warmup=0)
    assert t.observes_communication and work_type.wait is not original
    off = Tracker(1e9, spec=SPEC, warmup=0, comm=False)
    assert not off.observes_communication
    t.step()
    off.step()
    x = torch.ones(256)
    world_of_one.all_reduce(x)                      # 1 KiB, waited for in Python
    world_of_one.broadcast(torch.ones(8), src=0)    # 32 B
    y = torch.ones(4) + 1                           # an op that is not a collective
    t.step()
    off.step()
    local = t.summary()
    assert local["comm_bytes"] == {"all_reduce": 1024.0, "broadcast": 32.0}
    assert set(local["comm_s"]) == {"all_reduce", "broadcast"}
    assert "comm_bytes" not in off.summary()
    assert y.sum().item() == 8.0
    t.close()
    off.close()
    assert work_type.wait is original                # the last observer restores it
    dropped = Tracker(1e9, spec=SPEC, warmup=0)      # never closed: freed, it lets go too
    assert work_type.wait is not original
    del dropped
    assert work_type.wait is original


def test_attach_ddp_with_the_observer_counts_once(world_of_one):
    torch = pytest.importorskip("torch")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 8))
    t = Tracker(1e9, spec=SPEC, warmup=0)
    t.attach_ddp(model)          # observed: nothing registered, nothing marked twice
    t.step()
    with t.phase("backward"):
        model(torch.ones(2, 8)).sum().backward()
    t.step()
    local = t.summary()
    assert local["comm_bytes"] == {"all_reduce": (8 * 8 + 8) * 4}  # one bucket, 288 B
    assert set(local["comm_s"]) == {"all_reduce"}                # DDP's own wait, from C++
    assert local["phase_s"]["communication"] == local["comm_s"]["all_reduce"]
    t.close()


def test_collectives_inside_a_badput_phase_are_that_phases(world_of_one):
    """A checkpoint's (an eval's) collectives are its own work, which the job
    ledger books: neither their bytes nor their waits are the step's
    communication, and the checkpoint's time still leaves the step."""
    torch = pytest.importorskip("torch")
    t = Tracker(1e9, spec=SPEC, warmup=0)
    t.step()
    with t.phase("checkpoint"):
        world_of_one.all_reduce(torch.ones(1024))   # 4 KiB, the checkpoint's
        with t.phase("forward"):                    # a step phase inside: the step's again
            world_of_one.broadcast(torch.ones(8), src=0)   # 32 B
    world_of_one.all_reduce(torch.ones(256))        # 1 KiB, the step's
    t.step()
    local = t.summary()
    assert local["comm_bytes"] == {"all_reduce": 1024.0, "broadcast": 32.0}
    assert set(local["comm_s"]) == {"all_reduce", "broadcast"}
    ledger = _C.StepTracker.ledger(t)    # the checkpoint's time: the ledger's, not the step's
    assert ledger["phase_s"]["checkpoint"] > 0.0 and "checkpoint" not in local["phase_s"]
    t.close()


def test_higher_order_ops_run_while_observing(world_of_one):
    """Higher-order operators dispatch in Python on the thread's keys: with
    the observer's key included they once failed ("could not find kernel for
    HigherOrderOperator"); every one falls through it, and a collective run
    inside one is still observed."""
    torch = pytest.importorskip("torch")
    from torch._higher_order_ops.cond import cond_op

    t = Tracker(1e9, spec=SPEC, warmup=0)
    t.step()
    x = torch.ones(64)

    def branch(v):
        world_of_one.all_reduce(v)                   # 256 B, inside the op
        return (v + 1,)

    out = cond_op(torch.tensor(True), branch, lambda v: (v - 1,), (x,))
    assert out[0].tolist() == [2.0] * 64
    t.step()
    assert t.summary()["comm_bytes"] == {"all_reduce": 256.0}
    t.close()


def test_cuda_event_waits_on_a_collectives_stream(fake, world_of_one):
    """FSDP2 (FSDP1) on a GPU waits for its collectives with ``current_stream().
    wait_event(event)``, outside c10d: an event recorded on a stream a
    collective was launched on carries the collective's phase, and a wait on
    it is bracketed (stand-ins for torch.cuda's Event / Stream: this torch
    has no CUDA; the stream handle -> phase lookup is the C++ observer's).
    Each stand-in wait stalls the compute stream on the fake GPU timeline:
    10 ms for a collective's, 60 ms for the others, exactly."""
    from mfu_tracker.distributed._comm_observer import cuda_wait_patches

    ag = _C.comm_kind_phase("all_gather")
    launched_on = {0xA6: ag}                      # the all-gather stream
    log = []

    class Stream:
        def __init__(self, handle):
            self.cuda_stream = handle

    class Event:
        pass

    def record(event, stream=None):
        log.append(("record", stream.cuda_stream if stream else None))

    def wait_event(stream, event):                # the compute stream stalls
        fake.enqueue_ns(COMPUTE, (10 if event is comm_event else 60) * MS)
        log.append(("wait", stream.cuda_stream))

    def wait_stream(stream, other):
        fake.enqueue_ns(COMPUTE, (10 if other.cuda_stream == 0xA6 else 60) * MS)
        log.append(("wait_stream", other.cuda_stream))

    compute = Stream(0xC0)
    observed_record, observed_wait, observed_wait_stream = cuda_wait_patches(
        record, wait_event, wait_stream, lambda: compute, lambda handle: launched_on.get(handle, -1))
    comm_event, other_event = Event(), Event()
    t = Tracker(1e9, spec=SPEC, clock="cuda", stream=COMPUTE, warmup=0)
    t.step()
    observed_record(comm_event, Stream(0xA6))     # after the all-gather, on its stream
    observed_record(other_event)                  # on the compute stream: no collective
    observed_wait(compute, comm_event)
    observed_wait(compute, other_event)
    observed_wait_stream(compute, Stream(0xA6))   # FSDP1: the stream itself
    observed_wait_stream(compute, Stream(0xB0))   # a stream no collective ran on
    t.step()
    fake.advance(1000 * MS)                       # every mark resolved
    local = t.summary()
    assert log == [("record", 0xA6), ("record", None), ("wait", 0xC0), ("wait", 0xC0),
                   ("wait_stream", 0xA6), ("wait_stream", 0xB0)]
    assert comm_event._mfu_comm_phase == ag and other_event._mfu_comm_phase is None
    assert set(local["comm_s"]) == {"all_gather"}              # two waits of four
    # the two 10 ms stalls, not the 60 ms ones: 20 ms (float ms from the driver)
    assert local["comm_s"]["all_gather"] == pytest.approx(20e-3, rel=1e-6)
    assert local["step_time_s"] == pytest.approx(140e-3, rel=1e-6)   # 10 + 60 + 10 + 60
    assert fake.sync_calls() == 0
    t.close()
