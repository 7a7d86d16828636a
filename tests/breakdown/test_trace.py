"""The kernel breakdown's reduction on Kineto traces built by hand.

Every expected number is worked out beside it from the intervals below
(microseconds). The traces are Kineto's JSON format (what
``export_chrome_trace`` writes and HTA / TraceLens read): ``ph`` "X" events
with ``cat`` cpu_op / user_annotation / kernel / gpu_memcpy, kernels linked
to the op that launched them by ``args["External id"]``.
"""
from __future__ import annotations

import gzip
import json
import math

import pytest

from mfu_tracker._native import _C
from mfu_tracker.breakdown import _reduce
from mfu_tracker.breakdown._record import ROWS, Breakdown
from mfu_tracker.breakdown._reduce import MARKER, BreakdownError, reduce_events
from mfu_tracker.breakdown._trace import chrome_trace_events, operand_bytes

US = 1e-6


def op(name, ts, dur, ext, dims=(), types=(), tid=1):
    return {"ph": "X", "cat": "cpu_op", "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": tid,
            "args": {"External id": ext, "Input Dims": [list(d) for d in dims],
                     "Input type": list(types)}}


def annotation(name, ts, dur, ext=0, tid=1):
    return {"ph": "X", "cat": "user_annotation", "name": name, "ts": ts, "dur": dur, "pid": 1,
            "tid": tid, "args": {"External id": ext}}


def kernel(name, ts, dur, stream, ext=0, cat="kernel"):
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": 0, "tid": stream,
            "args": {"External id": ext, "stream": stream, "device": 0}}


F32 = "float"


def two_streams_trace():
    """Host thread 1 and two device streams (7: compute, 9: NCCL).

    host:   marker [0, 300); aten::mm [10, 20) ext 1 (4x8 @ 8x16 fp32: 640 bytes);
            Optimizer.step#SGD.step [100, 150) holding aten::add_ [110, 120) ext 3
            (4x16 + 4x16 fp32: 512 bytes) and aten::mm [125, 130) ext 4 (2x2 @ 2x2:
            32 bytes); aten::_foreach_add_ [160, 170) ext 5 (tensor lists: not sized).
    stream 7: memcpy [15, 20) (no op); sgemm [20, 60) ext 1; elementwise add
            [130, 140) ext 3; xmma gemm [140, 150) ext 4; multi_tensor_apply
            [170, 180) ext 5.
    stream 9: all-reduce [40, 100); all-gather [175, 200).
    """
    return {"traceEvents": [
        annotation(MARKER, 0, 300),
        op("aten::mm", 10, 10, 1, [(4, 8), (8, 16)], [F32, F32]),
        annotation("Optimizer.step#SGD.step", 100, 50, ext=9),
        op("aten::add_", 110, 10, 3, [(4, 16), (4, 16), ()], [F32, F32, "Scalar"]),
        op("aten::mm", 125, 5, 4, [(2, 2), (2, 2)], [F32, F32]),
        op("aten::_foreach_add_", 160, 10, 5, [(), ()], ["TensorList", "TensorList"]),
        kernel("Memcpy HtoD (Pageable -> Device)", 15, 5, 7, cat="gpu_memcpy"),
        kernel("ampere_sgemm_32x32_sliced1x4_nn", 20, 40, 7, 1),
        kernel("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add"
               "<float>, std::array<char*, 3ul> >(int, ...)", 130, 10, 7, 3),
        kernel("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x32x8_stage3_warpsize1x2x1_"
               "ffma_aligna4_alignc4_execute_kernel_trt", 140, 10, 7, 4),
        kernel("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::"
               "(anonymous namespace)::TensorListMetadata<2>, ...>(...)", 170, 10, 7, 5),
        kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
               40, 60, 9),
        kernel("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 175, 25, 9),
        # runtime calls and GPU-side annotations are not part of the breakdown
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 12, "dur": 3,
         "pid": 1, "tid": 1, "args": {"External id": 1, "correlation": 77}},
        {"ph": "X", "cat": "gpu_user_annotation", "name": "Optimizer.step#SGD.step", "ts": 130,
         "dur": 50, "pid": 0, "tid": 7, "args": {}},
    ]}


FLOPS = {"aten::mm": (2, 2 * 4 * 8 * 16 + 2 * 2 * 2 * 2),          # 1024 + 16 = 1040
         "aten::_scaled_dot_product_flash_attention_for_cpu": (1, 5000)}


def test_two_streams_overlap_and_gaps_on_the_device_timeline():
    b = reduce_events(chrome_trace_events(two_streams_trace()), timeline="device",
                      flops_by_op=FLOPS, step=7, peak_flops_per_sec=1e12)
    # window: the first device activity (memcpy at 15) to the last (all-gather
    # ends at 200): 185 us.
    #   [15, 20) memory 5; [20, 60) gemm 40 (the all-reduce under it from 40);
    #   [60, 100) communication 40 (exposed); [100, 130) idle 30;
    #   [130, 140) optimizer 10 (an add launched inside Optimizer.step);
    #   [140, 150) gemm 10 (a GEMM keeps its class under the scope);
    #   [150, 170) idle 20; [170, 180) optimizer 10 (the all-gather under it
    #   from 175); [180, 200) communication 20.
    assert b.step_s == pytest.approx(185 * US, abs=1e-15)
    assert b.classes["gemm"].time_s == pytest.approx((40 + 10) * US)
    assert b.classes["optimizer"].time_s == pytest.approx((10 + 10) * US)
    assert b.classes["memory"].time_s == pytest.approx(5 * US)
    assert b.classes["communication"].time_s == pytest.approx((40 + 20) * US)
    assert b.idle_s == pytest.approx((30 + 20) * US)
    assert math.fsum(b.time_of(row) for row in ROWS) == pytest.approx(b.step_s, rel=1e-12)
    # active: a class's own union, overlap with others not taken out:
    # communication [40, 100) + [175, 200) = 85
    assert b.classes["communication"].active_s == pytest.approx(85 * US)
    assert b.classes["gemm"].active_s == pytest.approx(50 * US)
    assert [b.classes[c].count for c in ("gemm", "optimizer", "memory", "communication")] == \
        [2, 2, 1, 2]
    # FLOPs: the counter's per-op counts by the op's class
    assert b.classes["gemm"].flops == 1040
    assert b.classes["attention"].flops == 5000 and b.tflops("attention") is None  # never ran
    assert b.tflops("gemm") == pytest.approx(1040 / 50e-6 * 1e-12)
    assert b.peak_share("gemm") == pytest.approx(1040 / 50e-6 / 1e12)
    # bytes: both GEMM ops sized (640 + 32), both GEMM kernels launched by them
    assert b.classes["gemm"].bytes == 672 and b.classes["gemm"].unsized == 0
    assert b.gbs("gemm") == pytest.approx(672 / 50e-6 * 1e-9)
    # the foreach op (tensor lists) and its kernel are not sized: optimizer
    # bytes unknown; the memcpy and the collectives were launched by no op
    assert b.classes["optimizer"].bytes is None and b.classes["optimizer"].unsized == 2
    assert b.classes["memory"].bytes is None and b.classes["communication"].unsized == 2
    assert b.timeline == "device" and b.step == 7 and b.host_s == pytest.approx(300 * US)
    assert b.events == 13  # the 15 events less the runtime call and the GPU-side annotation
    assert b.top[0].name.startswith("ncclDevKernel_AllReduce") and b.top[0].time_s == \
        pytest.approx(60 * US)
    assert not b.compiled


def test_the_same_trace_on_the_host_timeline():
    b = reduce_events(chrome_trace_events(two_streams_trace()), timeline="host",
                      flops_by_op=FLOPS)
    # window: the marker, [0, 300). Thread 1's self times: gemm 10 + 5 = 15;
    # optimizer: the annotation's own 50 - 10 - 5 = 35, add_ 10, _foreach_add_ 10 = 55
    assert b.step_s == pytest.approx(300 * US)
    assert b.classes["gemm"].time_s == pytest.approx(15 * US)
    assert b.classes["optimizer"].time_s == pytest.approx(55 * US)
    assert b.idle_s == pytest.approx((300 - 15 - 55) * US)
    assert b.classes["communication"].count == 0        # kernels are not on this timeline
    assert b.classes["optimizer"].unsized == 1 and b.classes["optimizer"].bytes is None
    names = {row.name: (row.kclass, row.count) for row in b.top}
    assert names["aten::mm"] == ("gemm", 2) and names["aten::add_"] == ("optimizer", 1)


def host(*events):
    return {"traceEvents": [annotation(MARKER, 0, 200), *events]}


def test_bytes_count_once_per_class_chain():
    trace = host(
        # aten::linear (gemm, sized: 4x8, 16x8, 16 fp32 = (32 + 128 + 16) x 4 = 704)
        # holds aten::addmm (counted by the FLOP op table: it owns what runs
        # inside it) holding aten::copy_ (the bias broadcast: gemm, inside the
        # counted op), and a view (other)
        op("aten::linear", 0, 100, 1, [(4, 8), (16, 8), (16,)], [F32, F32, F32]),
        op("aten::t", 2, 3, 2, [(16, 8)], [F32]),
        op("aten::addmm", 10, 80, 3, [(16,), (4, 8), (8, 16)], [F32, F32, F32]),
        op("aten::copy_", 20, 10, 4, [(4, 16), (4, 16)], [F32, F32]),
        # an outer reduction op the profiler cannot size holds a sized one:
        # covered, its bytes are the inner op's (8 x 32 bf16 + 32 x 2 bytes)
        op("aten::layer_norm", 110, 40, 5, [(8, 32)], ["weird dtype"]),
        op("aten::native_layer_norm", 115, 30, 6, [(8, 32), (32,)], ["c10::BFloat16",
                                                                      "c10::BFloat16"]),
        # a copy of its own (4x16 + 4x16 fp32 = 512 bytes)
        op("aten::copy_", 160, 10, 7, [(4, 16), (4, 16)], [F32, F32]),
    )
    b = reduce_events(chrome_trace_events(trace), timeline="host")
    assert b.classes["gemm"].bytes == 704                 # once: linear, not addmm nor its copy
    assert b.classes["memory"].bytes == 512
    assert b.classes["reduction"].bytes == 8 * 32 * 2 + 32 * 2 and b.classes["reduction"].unsized == 0
    assert b.classes["other"].bytes is None     # views: operands that are not traffic
    # self times: linear 100 - 3 - 80 = 17, addmm 80 - 10 = 70, its copy 10 -> gemm 97;
    # other 3; reduction 40 (10 + 30); memory 10; idle 200 - 150 = 50
    assert b.classes["gemm"].time_s == pytest.approx(97 * US)
    assert b.classes["memory"].time_s == pytest.approx(10 * US)
    assert b.classes["reduction"].time_s == pytest.approx(40 * US)
    assert b.idle_s == pytest.approx(50 * US)


def test_a_counted_attention_op_owns_its_decomposition():
    # SDPA's math path: the counter counts aten::_scaled_dot_product_attention_math
    # (attention) and skips its nested bmm / softmax, so they are attention too,
    # on the host and for the kernels they launch
    sdpa = "aten::_scaled_dot_product_attention_math"
    trace = {"traceEvents": [
        annotation(MARKER, 0, 200),
        op(sdpa, 10, 100, 1, [(1, 2, 8, 4)] * 3, [F32] * 3),
        op("aten::bmm", 20, 20, 2, [(2, 8, 4), (2, 4, 8)], [F32, F32]),
        op("aten::_softmax", 50, 10, 3, [(2, 8, 8)], [F32]),
        op("aten::bmm", 70, 20, 4, [(2, 8, 8), (2, 8, 4)], [F32, F32]),
        op("aten::mm", 150, 20, 5, [(4, 4), (4, 4)], [F32, F32]),
        kernel("ampere_sgemm_32x32_nn", 30, 10, 7, 2),
        kernel("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>", 60, 5, 7, 3),
        kernel("ampere_sgemm_32x32_nn", 80, 10, 7, 4),
        kernel("ampere_sgemm_32x32_nn", 160, 10, 7, 5),
    ]}
    flops = {sdpa: (1, 2 * 2 * 8 * 8 * 4 * 2), "aten::mm": (1, 2 * 4 * 4 * 4)}
    b = reduce_events(chrome_trace_events(trace), timeline="host", flops_by_op=flops)
    assert b.classes["attention"].time_s == pytest.approx(100 * US)   # the whole op
    assert b.classes["gemm"].time_s == pytest.approx(20 * US)         # the mm alone
    assert b.classes["reduction"].count == 0
    assert b.classes["attention"].bytes == 3 * 64 * 4                 # q, k, v once
    d = reduce_events(chrome_trace_events(trace), timeline="device", flops_by_op=flops)
    # window [30, 170): attention 10 + 5 + 10 = 25, gemm 10, idle 140 - 35 = 105
    assert d.classes["attention"].time_s == pytest.approx(25 * US)
    assert d.classes["gemm"].time_s == pytest.approx(10 * US)
    assert d.tflops("attention") == pytest.approx(2048 / 25e-6 * 1e-12)
    assert d.tflops("gemm") == pytest.approx(128 / 10e-6 * 1e-12)


def test_an_unsized_chain_leaves_the_bytes_out():
    trace = host(op("aten::_foreach_mul_", 0, 10, 1, [()], ["TensorList"]),
                 op("aten::mul", 20, 10, 2, [(4, 4), ()], [F32, "Scalar"]))
    b = reduce_events(chrome_trace_events(trace), timeline="host")
    assert b.classes["optimizer"].bytes is None and b.classes["optimizer"].unsized == 1
    assert b.classes["elementwise"].bytes == 64
    assert b.bound("elementwise") is None       # no peak: no roofline side


def test_a_compiled_region_on_the_host_is_fused():
    # torch.compile on CPU: the graph runs under '## Call CompiledFxGraph <key> ##',
    # its extern matmul an aten::mm inside it; the rest is inductor's C++ code
    trace = host(annotation("## Call CompiledFxGraph fwc6cciurifv3ec7gjrno4mqru7rolrgh25 ##",
                            10, 100, ext=3),
                 op("aten::mm", 40, 20, 4, [(4, 8), (8, 4)], [F32, F32]))
    b = reduce_events(chrome_trace_events(trace), timeline="host")
    assert b.compiled
    assert b.classes["fused"].time_s == pytest.approx(80 * US)     # 100 - the mm's 20
    assert b.classes["gemm"].time_s == pytest.approx(20 * US)
    assert b.classes["fused"].bytes is None and b.classes["fused"].unsized == 1


def test_threads_overlap_by_priority():
    # thread 1: aten::mm [0, 50); thread 2: aten::copy_ [20, 80) (a data loader
    # thread's copy): [20, 50) is the GEMM's (gemm before memory), [50, 80) memory
    trace = host(op("aten::mm", 0, 50, 1, [(2, 2), (2, 2)], [F32, F32], tid=1),
                 op("aten::copy_", 20, 60, 2, [(2, 2), (2, 2)], [F32, F32], tid=2))
    b = reduce_events(chrome_trace_events(trace), timeline="host")
    assert b.classes["gemm"].time_s == pytest.approx(50 * US)
    assert b.classes["memory"].time_s == pytest.approx(30 * US)
    assert b.classes["memory"].active_s == pytest.approx(60 * US)
    assert b.idle_s == pytest.approx(120 * US)


def test_kernels_launched_outside_any_op():
    # a compiled region's Triton kernels are launched from the region's span,
    # not from an op: their bytes are unknown; inside Optimizer.step a Triton
    # foreach / pointwise kernel is the optimizer's
    trace = host(annotation("## Call CompiledFxGraph abc ##", 0, 50, ext=1),
                 annotation("Optimizer.step#AdamW.step", 60, 50, ext=2),
                 kernel("triton_poi_fused_add_mul_0", 10, 10, 7, 1),
                 kernel("triton_red_fused_native_layer_norm_0", 20, 10, 7, 1),
                 kernel("triton_tem_fused_mm_0", 30, 10, 7, 1),
                 kernel("triton_poi_fused_lerp_mul_0", 70, 10, 7, 2))
    b = reduce_events(chrome_trace_events(trace), timeline="device")
    assert [b.classes[c].time_s for c in ("elementwise", "reduction", "gemm", "optimizer")] == \
        pytest.approx([10 * US, 10 * US, 10 * US, 10 * US])
    assert b.idle_s == pytest.approx(30 * US)          # [40, 70): the window is [10, 80)
    assert all(b.classes[c].bytes is None for c in ("elementwise", "reduction", "gemm"))
    assert b.compiled


def test_the_roofline_side_by_hand():
    # peak 100 TFLOP/s, 2 TB/s: the balance point is 50 FLOP per byte.
    # GEMM: 640 bytes, 1040 FLOPs -> 1.6 FLOP/byte < 50: memory-bound here;
    # elementwise counts no FLOPs: intensity 0, memory-bound.
    b = reduce_events(chrome_trace_events(two_streams_trace()), timeline="device",
                      flops_by_op=FLOPS, peak_flops_per_sec=100e12, peak_bytes_per_sec=2e12)
    assert b.bound("gemm") == "memory"
    assert b.bandwidth_share("gemm") == pytest.approx(672 / 50e-6 / 2e12)
    assert b.bound("optimizer") is None                 # its bytes are unknown
    big = Breakdown(step_s=1.0, idle_s=0.0, classes={c: b.classes[c] for c in b.classes},
                    peak_flops_per_sec=100e12, peak_bytes_per_sec=2e12)
    big.classes["gemm"].flops = 51.0 * 672              # 51 FLOP/byte > 50
    assert big.bound("gemm") == "compute"


def test_the_record_round_trip_and_bad_records():
    b = reduce_events(chrome_trace_events(two_streams_trace()), timeline="device",
                      flops_by_op=FLOPS, step=7, peak_flops_per_sec=1e12,
                      peak_bytes_per_sec=2e12, dtype="bf16")
    record = json.loads(json.dumps(b.to_record()))
    back = Breakdown.from_record(record)
    assert back.to_record() == record
    assert back.shares() == pytest.approx(b.shares())
    assert back.peak_flops_per_sec == pytest.approx(1e12) and back.dtype == "bf16"
    figures = b.metric_figures()
    assert math.fsum(figures["kernel_share"].values()) == pytest.approx(1.0, abs=1e-12)
    assert set(figures["kernel_tflops"]) == {"gemm"} and figures["kernel_step_s"] == b.step_s
    for bad, where in ((dict(record, step_s=-1.0), "'step_s'"), (dict(record, classes=3), "'classes'"),
                       (dict(record, classes={"gemm": {"time_s": "x"}}), "'classes.gemm.time_s'")):
        with pytest.raises(ValueError, match=where):
            Breakdown.from_record(bad)


def test_names_past_the_bound_are_folded(monkeypatch):
    monkeypatch.setattr(_reduce, "MAX_NAMES", 2)
    trace = host(*(op(f"aten::mul{i}", 10 * i, 5, i, [(2,)], [F32]) for i in range(5)))
    b = reduce_events(chrome_trace_events(trace), timeline="host")
    assert len(b.top) == 2 and b.names_folded == 3


def test_refusals(monkeypatch, tmp_path):
    with pytest.raises(BreakdownError, match="no device activity"):
        reduce_events(chrome_trace_events(host(op("aten::mm", 0, 5, 1))), timeline="device")
    with pytest.raises(BreakdownError, match="no host op"):
        reduce_events(iter(()), timeline="host")
    with pytest.raises(ValueError, match="timeline"):
        reduce_events(iter(()), timeline="gpu")
    monkeypatch.setattr(_reduce, "EVENTS_MAX", 3)
    with pytest.raises(BreakdownError, match="more than 3 events"):
        reduce_events(chrome_trace_events(two_streams_trace()), timeline="device")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"events": []}))
    with pytest.raises(ValueError, match="not a Kineto trace"):
        list(chrome_trace_events(str(bad)))


def test_a_host_window_without_the_marker_and_files(tmp_path):
    # no marker (a trace from elsewhere): the host window runs from the first
    # op to the last; a .json.gz file reads the same; 1.0004 us rounds to 1000 ns
    trace = {"traceEvents": [op("aten::mm", 10.0004, 5, 1, [(2, 2), (2, 2)], [F32, F32]),
                             op("aten::add", 30, 10, 2, [(2, 2), (2, 2)], [F32, F32])]}
    path = tmp_path / "trace.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        json.dump(trace, f)
    b = reduce_events(chrome_trace_events(str(path)), timeline="host")
    assert b.step_s == pytest.approx((40 - 10) * US, abs=1e-12)
    assert b.idle_s == pytest.approx(15 * US, abs=1e-12)   # [15, 30)
    assert b.host_s is None
    first = next(chrome_trace_events(trace))
    assert first.start_ns == 10000 and first.end_ns == 15000


def test_operand_bytes():
    assert operand_bytes([[4, 8], [], []], ["c10::BFloat16", "Scalar", ""]) == 64
    assert operand_bytes([[3], [2, 2]], ["bool", "c10::Float8_e4m3fn"]) == 3 + 4
    assert operand_bytes([[2, 2]], ["long int"]) == 32
    assert operand_bytes([[]], ["float"]) == 4                     # a 0-d tensor: one element
    assert operand_bytes([[], []], ["TensorList", "float"]) is None
    assert operand_bytes([[2, -1]], ["float"]) is None
    assert operand_bytes([[2]], ["some::NewType"]) is None


def test_every_counted_op_is_classed_by_its_flop_kind():
    # the class table consults the FLOP op table: every counted op is gemm or
    # attention, so a class's FLOPs are exactly the counter's for its ops
    for row in _C.op_table():
        kclass, scope, rule = _C.kernel_class(row["name"], "op")
        want = "attention" if row["kind"].startswith("attention") else "gemm"
        assert (kclass, scope, rule) == (want, False, -1), row["name"]


def test_the_top_table_keeps_a_name_apart_per_class():
    # aten::add_ runs 10 us on its own (elementwise), then 30 us inside the
    # optimizer's annotation (its scope makes it optimizer): two rows
    trace = host(op("aten::add_", 10, 10, 1),
                 annotation("Optimizer.step#AdamW.step", 40, 50),
                 op("aten::add_", 50, 30, 2))
    b = reduce_events(chrome_trace_events(trace), timeline="host")
    rows = {(k.name, k.kclass): (k.time_s, k.count) for k in b.top}
    assert rows[("aten::add_", "optimizer")] == (pytest.approx(30 * US), 1)
    assert rows[("aten::add_", "elementwise")] == (pytest.approx(10 * US), 1)
