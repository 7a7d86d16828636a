"""Reference-count and memory soak of the CPython layer (docs/reliability.md:
"Memory stays bounded over any number of steps").

Every soak runs its body once to warm up (caches, free lists, the fake
driver's event pool), then:

* RSS (``/proc/self/statm``) over the full count -- 10**6 ``track()`` blocks,
  10**6 ``Tracker.step()`` calls per clock, 10**4 ``FlopCounter`` uses -- must
  grow by at most ``RSS_SLACK``;
* ``tracemalloc`` (every Python-heap allocation, C extensions included) over
  a smaller count (tracemalloc makes each call ~10x slower) must grow by at
  most ``TRACED_SLACK``.

One leaked object per call is 10**5 x >= 32 bytes = 3 MB traced for the
CPython-layer bodies and 10**6 x 32 bytes = 32 MB of RSS: far above both
slacks -- ``test_the_detectors_catch_one_leaked_object_per_call`` proves it
with a deliberate leak. The loop over every ``_C`` entry point also checks,
with ``sys.getrefcount``, that no call (error paths included) keeps or drops
a reference to any of its arguments.

Figures: ``.venv/bin/python -m pytest tests/test_soak.py -s -q`` prints one
line per soak.
"""
from __future__ import annotations

import ctypes
import gc
import math
import os
import sys
import tracemalloc
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import _fake_nvml
import pytest

from mfu_tracker import _C, Tracker, track
from mfu_tracker.timing import _clock

PAGE = os.sysconf("SC_PAGE_SIZE")
RSS_SLACK = 4 << 20        # 4 MiB: allocator noise; a per-call leak is >= 32 MB
TRACED_SLACK = 64 << 10    # 64 KiB: a per-call leak is >= 3 MB (>= 320 KB for the counter)

N_BLOCKS = 10**6           # track() blocks, RSS
N_STEPS = 10**6            # Tracker.step() calls per clock, RSS
N_TRACED = 10**5           # the same bodies under tracemalloc
N_COUNTER = 10**4          # FlopCounter uses, RSS
N_COUNTER_TRACED = 10**4   # FlopCounter uses under tracemalloc
N_ENTRY = 2000             # repetitions of every _C entry-point call, RSS + refcounts
N_ENTRY_TRACED = 500       # repetitions under tracemalloc


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


@dataclass
class Soak:
    name: str
    calls_rss: int
    rss_delta: int
    calls_traced: int
    traced_delta: int

    def line(self) -> str:
        return (f"soak {self.name}: {self.calls_rss:,} calls, RSS {self.rss_delta / 1024:+,.0f} KiB; "
                f"{self.calls_traced:,} calls under tracemalloc, {self.traced_delta / 1024:+,.1f} KiB")

    def check(self) -> None:
        print(self.line())
        assert self.rss_delta <= RSS_SLACK, f"RSS grew: {self.line()}"
        assert self.traced_delta <= TRACED_SLACK, f"traced memory grew: {self.line()}"


def soak(name: str, body: Callable[[int], None], calls_rss: int, calls_traced: int,
         warm: int = 1000) -> Soak:
    """Run ``body(n)`` (n calls) and measure RSS and traced-memory growth."""
    body(warm)
    gc.collect()
    before = rss_bytes()
    body(calls_rss)
    gc.collect()
    rss_delta = rss_bytes() - before
    # Two traced windows, and the smaller growth: a leak grows in both, while
    # a table allocated before tracing started and rehashed once inside it
    # (CPython's interned-string dict, megabytes) shows as growth in one only.
    tracemalloc.start()
    try:
        body(warm)
        deltas = []
        for calls in (calls_traced // 2, calls_traced - calls_traced // 2):
            gc.collect()
            traced_before = tracemalloc.get_traced_memory()[0]
            body(calls)
            gc.collect()
            deltas.append(tracemalloc.get_traced_memory()[0] - traced_before)
        traced_delta = min(deltas)
    finally:
        tracemalloc.stop()
    return Soak(name, calls_rss, rss_delta, calls_traced, traced_delta)


# ---- the detectors can fail ------------------------------------------------------

_incref = ctypes.pythonapi.Py_IncRef
_incref.argtypes = [ctypes.py_object]
_incref.restype = None


def test_the_detectors_catch_one_leaked_object_per_call():
    """A body that leaks one float per call (a reference never dropped, as a
    missing Py_DECREF in C would) fails both checks; so does a call that
    keeps one reference to its argument."""
    def leaky(n: int) -> None:
        for i in range(n):
            _incref(float(i) + 0.5)  # a new float, never freed

    result = soak("leaky", leaky, N_BLOCKS, N_TRACED)
    assert result.rss_delta > RSS_SLACK, result.line()
    assert result.traced_delta > TRACED_SLACK, result.line()
    with pytest.raises(AssertionError):
        result.check()

    arg = float("2.5")
    with pytest.raises(AssertionError, match="refcount"):
        check_refcounts("leaky", _incref, (arg,), {}, None, 10)


# ---- track() ----------------------------------------------------------------------


def _track_body(clock: str) -> Callable[[int], None]:
    flops, nbytes, tokens, peak = 1.0, 1.0, 8.0, 1.0  # MFU ~1e-5: no > 1 warning

    def body(n: int) -> None:
        for _ in range(n):
            with track(flops, nbytes, num_tokens=tokens, dtype="bf16", peak_tflops=peak,
                       device="cpu", clock=clock) as r:
                pass
            r.mfu, r.elapsed_sec, r.tokens_per_sec, r.mbu
    return body


def _track_raising_body(clock: str) -> Callable[[int], None]:
    """Blocks whose body raises: the exception path of __exit__."""
    error = KeyError("in the block")

    def body(n: int) -> None:
        for _ in range(n):
            try:
                with track(1.0, peak_tflops=1.0, device="cpu", clock=clock) as r:
                    raise error
            except KeyError as caught:
                assert caught is error
            r.mfu
            error.__traceback__ = None
    return body


def test_track_blocks_cpu_clock_are_flat():
    _clock.reset_caches()
    soak("track() cpu clock", _track_body("cpu"), N_BLOCKS, N_TRACED).check()
    soak("track() cpu clock, block raising", _track_raising_body("cpu"),
         N_BLOCKS // 10, N_TRACED // 10).check()


def test_track_blocks_gpu_clock_are_flat(fake):
    body = _track_body("cuda")
    body(1)
    timer = _clock.MARK_TIMERS[("cuda", None)]
    assert timer is not None and timer.clock == "cuda"
    soak("track() fake cuda clock", body, N_BLOCKS, N_TRACED).check()
    soak("track() fake cuda clock, block raising", _track_raising_body("cuda"),
         N_BLOCKS // 10, N_TRACED // 10).check()
    assert not timer.failed
    assert fake.calls("cuEventRecord") >= 2 * (N_BLOCKS + N_TRACED)
    # The event pool is reused, not grown: a few events live, however many blocks.
    assert fake.live_events() <= 64


# ---- Tracker.step() -----------------------------------------------------------------


def _step_body(tracker: Tracker, advance: Optional[Callable[[int], None]] = None) -> Callable[[int], None]:
    def body(n: int) -> None:
        step = tracker.step
        for i in range(n):
            step(128, model_flops=1.0, executed_flops=1.5)  # MFU << 1: no warning
            if advance is not None:
                advance(1000)
            if i % 1000 == 0:
                tracker.metrics()
    return body


def test_tracker_steps_cpu_clock_are_flat():
    tracker = Tracker(1.0, dtype="bf16", peak_tflops=1.0, device="cpu", clock="cpu", window=100)
    soak("Tracker.step() cpu clock", _step_body(tracker), N_STEPS, N_TRACED).check()
    s = tracker.summary()
    assert s["boundaries"] == 2000 + N_STEPS + N_TRACED
    assert s["steps"] == 100 and s["steps_dropped"] == 0
    tracker.close()


def test_tracker_steps_gpu_clock_are_flat(fake):
    # Events complete 3 us after their record, the host moves 1 us per step:
    # steps resolve lazily (non-blocking queries), a few pending at any time.
    fake.set_lag_ns(3000)
    _clock.mark_timer("cuda", None, None, "test")  # the shared timer Tracker() creates
    live_before = fake.live_events()
    tracker = Tracker(1.0, dtype="bf16", peak_tflops=1.0, clock="cuda", window=100)
    assert tracker.clock == "cuda"
    soak("Tracker.step() fake cuda clock", _step_body(tracker, fake.advance), N_STEPS,
         N_TRACED).check()
    s = tracker.summary()
    assert s["clock"] == "cuda"
    assert s["boundaries"] == 2000 + N_STEPS + N_TRACED
    assert s["steps"] == 100 and s["steps_dropped"] == 0
    assert fake.sync_calls() == 0  # never blocked
    tracker.close()
    assert fake.live_events() == live_before  # every event of the pool released


def test_a_timer_far_ahead_of_the_gpu_keeps_exact_times(fake):
    """The host runs events_max marks ahead of the GPU before the first one
    resolved (a slow first step): the pool-full wait must free an event, and
    every interval stay exact (the fake GPU spends 1 us between marks)."""
    fake.set_work_ns(1000)
    timer = _C.MarkTimer("cuda", events_initial=2, events_max=4, history=64)
    ids = [timer.mark() for _ in range(10)]
    timer.flush()
    intervals = [timer.elapsed_s(a, b) for a, b in zip(ids, ids[1:])]
    assert intervals == [pytest.approx(1e-6, rel=1e-6)] * 9, intervals


# ---- FlopCounter ----------------------------------------------------------------------


def test_flop_counter_uses_are_flat():
    torch = pytest.importorskip("torch")
    from mfu_tracker import FlopCounter

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    x = torch.randn(4, 8)

    def body(n: int) -> None:
        for _ in range(n):
            with FlopCounter(modules=True) as fc:
                model(x).sum().backward()
            fc.model_flops, fc.executed_flops, fc.by_module, fc.by_op
            model.zero_grad(set_to_none=True)

    # forward 2*4*8*8 + 2*4*8*2 = 640; backward: weights 640, the first
    # layer's input needs no grad, the second's does (2*4*8*2 = 128) -> 1408
    with FlopCounter() as fc:
        model(x).sum().backward()
    assert fc.model_flops == 1408
    model.zero_grad(set_to_none=True)
    soak("FlopCounter fwd+bwd", body, N_COUNTER, N_COUNTER_TRACED, warm=200).check()


# ---- every _C entry point ---------------------------------------------------------------


def _fresh_int(value: int) -> int:
    return int(str(value))  # not a cached small int: its refcount is ours alone


def _fresh_str(text: str) -> str:
    return "".join(list(text))  # not interned


def _fresh_float(value: float) -> float:
    return float(repr(value))


Call = Tuple[str, Callable[..., Any], tuple, Dict[str, Any], Optional[type]]


def entry_point_calls(fake_available: bool) -> List[Call]:
    """(entry point, callable, args, kwargs, expected exception) for every
    function of _C, every method / property of its types, with good and bad
    arguments. Arguments are fresh objects, so their refcounts are ours."""
    I, S, F = _fresh_int, _fresh_str, _fresh_float
    calls: List[Call] = []

    def add(name: str, fn: Callable[..., Any], *args: Any, exc: Optional[type] = None,
            **kwargs: Any) -> None:
        calls.append((name, fn, args, kwargs, exc))

    # -- py_gpu_specs.c
    add("lookup_gpu_spec", _C.lookup_gpu_spec, S("NVIDIA H100 80GB HBM3"), I(9), I(0), I(132), None)
    add("lookup_gpu_spec", _C.lookup_gpu_spec, S("no such gpu 123"))
    add("lookup_gpu_spec", _C.lookup_gpu_spec, S("H100"), I(-1), exc=ValueError)
    add("lookup_gpu_spec", _C.lookup_gpu_spec, [S("H100")], exc=TypeError)
    add("lookup_gpu_spec", _C.lookup_gpu_spec, S("H100"), num_sms=F(1.5), exc=TypeError)
    add("gpu_candidates", _C.gpu_candidates, S("A100"))  # four rows: lists and dicts
    add("gpu_candidates", _C.gpu_candidates, S("H100 SXM"))  # one row: None
    add("gpu_candidates", _C.gpu_candidates, S("H100"), I(-1), exc=ValueError)
    add("gpu_spec_table", _C.gpu_spec_table)
    add("normalize_gpu_name", _C.normalize_gpu_name, S("NVIDIA  A100-SXM4-80GB"))
    add("normalize_gpu_name", _C.normalize_gpu_name, I(12345), exc=TypeError)
    add("parse_peak_override", _C.parse_peak_override, S("bf16=100,fp16=90"), S("bf16"))
    add("parse_peak_override", _C.parse_peak_override, S("bf16=100"), S("fp32"))
    add("parse_peak_override", _C.parse_peak_override, S("bf16=-1"), S("bf16"), exc=ValueError)
    add("parse_peak_override", _C.parse_peak_override, S("100"), S("nope"), exc=ValueError)
    add("parse_peak_override", _C.parse_peak_override, F(1.0), S("bf16"), exc=TypeError)
    add("dtype_names", _C.dtype_names)

    # -- py_flops.c
    for name in ("mm_flop", "addmm_flop"):
        fn = getattr(_C, name)
        add(name, fn, I(1000), I(2000), I(3000))
        add(name, fn, I(1000), I(-2000), I(3000), exc=ValueError)
        add(name, fn, I(1 << 40), I(1 << 40), I(1 << 40), exc=OverflowError)
        add(name, fn, F(1.5), I(2), I(3), exc=TypeError)
    for name in ("bmm_flop", "baddbmm_flop"):
        fn = getattr(_C, name)
        add(name, fn, I(300), I(1000), I(2000), I(3000))
        add(name, fn, I(300), I(1000), I(-2000), I(3000), exc=ValueError)
        add(name, fn, I(300), S("x"), I(2000), I(3000), exc=TypeError)
    add("grouped_mm_flop", _C.grouped_mm_flop, [I(400), I(800)], [I(300), I(800), I(1600)])
    add("grouped_mm_flop", _C.grouped_mm_flop, [I(400)], [I(300), I(800)], exc=ValueError)
    add("grouped_mm_flop", _C.grouped_mm_flop, [I(400), S("a")], [I(300), I(800)], exc=TypeError)
    add("grouped_mm_flop", _C.grouped_mm_flop, I(400), [I(300), I(800)], exc=TypeError)
    conv_x, conv_w, conv_o = [I(1), I(300), I(800), I(800)], [I(400), I(300), I(3), I(3)], [I(1), I(400), I(798), I(798)]
    add("convolution_flop", _C.convolution_flop, conv_x, conv_w, conv_o)
    add("convolution_flop", _C.convolution_flop, conv_x, conv_w, conv_o, transposed=True)
    add("convolution_flop", _C.convolution_flop, [I(1), I(300)], conv_w, conv_o, exc=ValueError)
    add("convolution_flop", _C.convolution_flop, conv_x, S("w"), conv_o, exc=TypeError)
    add("convolution_backward_flop", _C.convolution_backward_flop, conv_o, conv_x, conv_w,
        groups=I(1), input_grad=True, weight_grad=False)
    add("convolution_backward_flop", _C.convolution_backward_flop, conv_o, conv_x, conv_w,
        groups=I(0), exc=ValueError)
    add("convolution_backward_flop", _C.convolution_backward_flop, conv_o, conv_x, F(2.0), exc=TypeError)
    for name in ("sdpa_flop", "sdpa_backward_flop"):
        fn = getattr(_C, name)
        add(name, fn, I(1), I(300), I(300), I(1024), I(1024), I(300), I(300),
            causal_attention=S("half"))
        add(name, fn, I(1), I(300), I(300), I(1024), I(-1024), I(300), I(300), exc=ValueError)
        add(name, fn, I(1), I(300), I(300), I(1024), I(1024), I(300), I(300),
            causal_attention=S("quarter"), exc=ValueError)
        add(name, fn, I(1), I(300), I(300), I(1024), I(1024), I(300), F(1.0), exc=TypeError)
    cu = [I(0), I(1000), I(3000)]
    add("varlen_attention_flop", _C.varlen_attention_flop, cu, None, I(400), I(400), I(300), I(300),
        causal_attention=S("full"), backward=True)
    add("varlen_attention_flop", _C.varlen_attention_flop, cu, cu, I(400), I(400), I(300), I(300))
    add("varlen_attention_flop", _C.varlen_attention_flop, [I(0), I(3000), I(1000)], None,
        I(400), I(400), I(300), I(300), exc=ValueError)
    add("varlen_attention_flop", _C.varlen_attention_flop, S("cu"), None, I(400), I(400), I(300),
        I(300), exc=TypeError)
    dims = {S("hidden_size"): I(1024), S("num_layers"): I(300), S("num_heads"): I(512),
            S("num_kv_heads"): I(512), S("vocab_size"): I(32000), S("intermediate_size"): I(4096),
            S("mlp"): S("swiglu")}
    options = {S("formula"): S("palm"), S("causal_attention"): S("full")}
    add("transformer_flops", _C.transformer_flops, dims, options, batch_size=I(300), seq_len=I(2048))
    add("transformer_flops", _C.transformer_flops, dims, options,
        seq_lens=[I(1000), I(2000), I(3000)])
    add("transformer_flops", _C.transformer_flops, {**dims, S("num_layers"): I(-300)}, options,
        batch_size=I(300), seq_len=I(2048), exc=ValueError)
    add("transformer_flops", _C.transformer_flops, {**dims, S("mlp"): S("relu9")}, options,
        batch_size=I(300), seq_len=I(2048), exc=ValueError)
    add("transformer_flops", _C.transformer_flops, dims, {S("formula"): S("7n")},
        batch_size=I(300), seq_len=I(2048), exc=ValueError)
    add("transformer_flops", _C.transformer_flops, dims, options, seq_lens=S("x"), exc=TypeError)
    add("transformer_flops", _C.transformer_flops, [I(1)], options, batch_size=I(300),
        seq_len=I(2048), exc=TypeError)
    vision = {S("kind"): S("qwen2_5_vl"), S("depth"): I(300), S("hidden_size"): I(1280),
              S("intermediate_size"): I(3420), S("num_heads"): I(320), S("in_channels"): I(3),
              S("patch_size"): I(14), S("temporal_patch_size"): I(2),
              S("spatial_merge_size"): I(2), S("out_hidden_size"): I(1024),
              S("window_size"): I(1120), S("num_full_blocks"): I(4)}
    grids = [[I(1), I(640), I(640)], [I(2), I(260), I(260)]]  # 102,400 + 33,800 image tokens: within 300 x 2048
    add("transformer_flops", _C.transformer_flops, dims, options, batch_size=I(300),
        seq_len=I(2048), vision=vision, grids=grids)
    add("transformer_flops", _C.transformer_flops, dims, options, batch_size=I(300),
        seq_len=I(2048), vision=vision, grids=[[I(1), I(641), I(640)]], exc=ValueError)
    add("transformer_flops", _C.transformer_flops, dims, options, batch_size=I(300),
        seq_len=I(2048), vision={**vision, S("kind"): S("clip")}, grids=grids, exc=ValueError)
    add("transformer_flops", _C.transformer_flops, dims, options, batch_size=I(300),
        seq_len=I(2048), vision=vision, grids=[[I(1), I(2)]], exc=ValueError)
    add("transformer_family", _C.transformer_family, S("gemma3_text"))
    add("conventions", _C.conventions)
    verl = {S(k): S(v) for k, v in _C.conventions()[1]["choices"].items()}
    add("convention_flops", _C.convention_flops, dims, verl, batch_size=I(300), seq_len=I(2048))
    add("convention_flops", _C.convention_flops, dims, {S("causal"): S("sideways")},
        batch_size=I(300), seq_len=I(2048), exc=TypeError)
    add("convention_flops", _C.convention_flops, dims, verl,
        quirks=[S("padded_vocab"), S("no_shared_expert")], vocab_multiple=I(300),
        batch_size=I(300), seq_len=I(2048))
    add("convention_flops", _C.convention_flops, dims, verl, quirks=[S("sideways")],
        batch_size=I(300), seq_len=I(2048), exc=ValueError)
    add("convention_rule", _C.convention_rule, S("verl"), S("qwen2_moe"))
    add("convention_rule", _C.convention_rule, S("deepspeed"), S("llama"), exc=ValueError)
    add("convention_quirks", _C.convention_quirks)
    add("context_parallel_flops", _C.context_parallel_flops, dims, options, I(512), I(300),
        S("ulysses"), batch_size=I(300), seq_len=I(2048))
    add("context_parallel_flops", _C.context_parallel_flops, dims, options, I(512), I(600),
        S("ulysses"), batch_size=I(300), seq_len=I(2048), exc=ValueError)
    add("generation_flops", _C.generation_flops, dims, options, [I(1000), I(2000)],
        [I(300), I(400)], weight_dtype=S("fp8"), cache_dtype=S("bf16"), mla_cache=S("latent"))
    add("generation_flops", _C.generation_flops, dims, options, [I(1000), I(-2000)],
        [I(300), I(400)], exc=ValueError)
    add("generation_flops", _C.generation_flops, dims, options, [I(1000)], [I(300), I(400)],
        exc=ValueError)
    add("generation_flops", _C.generation_flops, dims, options, [I(1000)], [I(300)],
        cache_dtype=S("fp7"), exc=ValueError)
    add("generation_flops", _C.generation_flops, dims, options, S("x"), [I(300)], exc=TypeError)
    add("transformer_family", _C.transformer_family, S("bert_like"))
    add("transformer_family", _C.transformer_family, I(300), exc=TypeError)
    add("transformer_families", _C.transformer_families)
    add("transformer_dim_names", _C.transformer_dim_names)
    add("params_flops", _C.params_flops, F(7e9), I(4096), lora=True)
    add("params_flops", _C.params_flops, F(-7e9), I(4096), exc=ValueError)
    add("params_flops", _C.params_flops, S("n"), I(4096), exc=TypeError)
    add("sdpa_model_flop", _C.sdpa_model_flop, I(1), I(300), I(300), I(1024), I(1024), I(300),
        I(300), causal_attention=S("half"), with_backward=True)
    add("sdpa_model_flop", _C.sdpa_model_flop, I(1), I(300), I(300), I(1024), I(-1024), I(300),
        I(300), exc=ValueError)

    # -- py_ops.c: the op table, op_count, the custom-formula registry
    add("op_table", _C.op_table)
    add("node_kind", _C.node_kind, True, S("CheckpointFunctionBackward"),
        S("torch.utils.checkpoint"), False)
    add("node_kind", _C.node_kind, True, I(300), None, exc=TypeError)
    mm_args = [(( I(400), I(300)), True), ((I(300), I(200)), False)]
    add("op_count", _C.op_count, S("aten::mm"), mm_args, causal_attention=S("half"),
        backward_phase=False, grad_enabled=True)
    add("op_count", _C.op_count, S("aten::_flash_attention_forward"),
        [((I(1000), I(4), I(8)), True), ((I(1000), I(4), I(8)), True), ((I(1000), I(4), I(8)), True),
         ((I(3),), False, [I(0), I(300), I(1000)]), None, I(700), I(700), None, True])
    add("op_count", _C.op_count, S("aten::mm"), [((I(400), I(300)), True), ((I(400), I(300)), True)],
        exc=ValueError)  # inner dims differ
    add("op_count", _C.op_count, S("aten::add"), mm_args, exc=ValueError)
    add("op_count", _C.op_count, S("aten::mm"), [((I(400), S("x")), True)], exc=TypeError)
    add("op_count", _C.op_count, S("aten::mm"), mm_args, causal_attention=S("third"), exc=ValueError)

    def formula(*args: Any) -> int:
        return 1000

    def register_unregister(name: str, fn: Any) -> None:
        _C.register_flop_formula(name, fn)
        _C.unregister_flop_formula(name)

    # registering again revives the name's entry: no growth per call
    add("register_flop_formula", register_unregister, S("mfu_soak::cycle"), formula)
    add("register_flop_formula", _C.register_flop_formula, S("aten::mm"), formula, exc=ValueError)
    add("register_flop_formula", _C.register_flop_formula, S("mfu_soak::x"), I(3), exc=TypeError)
    add("unregister_flop_formula", _C.unregister_flop_formula, S("mfu_soak::none"), exc=KeyError)
    if not _C.has_flop_formula("mfu_soak::kept"):
        _C.register_flop_formula("mfu_soak::kept", formula)
    add("has_flop_formula", _C.has_flop_formula, S("mfu_soak::kept"))
    add("flop_formula_count", _C.flop_formula_count, S("mfu_soak::kept"), ((I(300), I(400)), I(2)),
        True, False, True)
    add("flop_formula_count", _C.flop_formula_count, S("mfu_soak::none"), (), True, False, True,
        exc=KeyError)

    # -- py_track.c: new_track / compute_metrics / UtilizationResult
    spec_obj = object()
    track_args = (F(1.5), F(1e6), F(2.5), F(4096.0), F(1e12), F(1e12), I(1), S("bf16"), spec_obj)
    add("new_track", _C.new_track, *track_args)
    add("new_track", _C.new_track, F(-1.0), *track_args[1:], exc=ValueError)
    add("new_track", _C.new_track, F(math.nan), *track_args[1:], exc=ValueError)
    add("new_track", _C.new_track, True, *track_args[1:], exc=TypeError)
    add("new_track", _C.new_track, *track_args[:6], I(0), *track_args[7:], exc=ValueError)
    add("new_track", _C.new_track, *track_args[:7], I(3), spec_obj, exc=TypeError)
    add("new_track", _C.new_track, *track_args[:5], exc=TypeError)
    cpu_timer = _C.MarkTimer(S("cpu"))
    add("new_track", _C.new_track, *track_args, cpu_timer, I(1 << 40))
    add("new_track", _C.new_track, *track_args, S("timer"), I(0), exc=TypeError)
    add("new_track", _C.new_track, *track_args, None, I(-5), exc=ValueError)
    add("compute_metrics", _C.compute_metrics, F(1e15), F(2.5), executed_flops=F(2e15),
        param_bytes=F(1e9), num_tokens=F(1e6), peak_flops_per_sec=F(1e15),
        peak_bytes_per_sec=F(3e12), num_gpus=I(8))
    add("compute_metrics", _C.compute_metrics, F(1e15), F(0.0), exc=ValueError)
    add("compute_metrics", _C.compute_metrics, F(1e15), F(1.0), num_gpus=True, exc=TypeError)
    add("compute_metrics", _C.compute_metrics, F(1e15), F(1.0), peak_flops_per_sec=F(-1.0),
        exc=ValueError)

    # track() itself (implemented in C: _C.track), through its resolution cache
    add("track", _C.track, F(1.5), F(1.0), num_tokens=F(8.0), dtype=S("bf16"), peak_tflops=F(1.0),
        device=S("cpu"), clock=S("cpu"))
    add("track", _C.track, F(1.5), hfu_flop_count=F(2.5), dtype=S("fp16"), peak_tflops=F(2.0),
        device=S("cpu"), clock=S("cuda" if fake_available else "cpu"), stream=I(0))
    add("track", _C.track, F(-1.0), peak_tflops=F(1.0), exc=ValueError)
    add("track", _C.track, True, peak_tflops=F(1.0), exc=TypeError)
    add("track", _C.track, F(1.5), dtype=S("bf17"), exc=ValueError)
    add("track", _C.track, F(1.5), peak_tflops=F(1.0), num_gpus=I(0), exc=ValueError)
    add("track", _C.track, F(1.5), peak_tflops=F(1.0), clock=S("gpu"), exc=ValueError)
    add("track", _C.track, F(1.5), peak_tflops=F(1.0), device=S("cpu"), stream=I(-1), exc=ValueError)
    add("track", _C.track, F(1.5), peak_tflops=F(1.0), nonsense=I(1), exc=TypeError)
    # track(flops_by_dtype=) (mixed precision)
    add("track", _C.track, F(1.5), dtype=S("bf16"), peak_tflops=F(1.0), device=S("cpu"),
        clock=S("cpu"), flops_by_dtype={S("bf16"): F(1.0), S("fp8"): F(0.5)})
    add("track", _C.track, F(1.5), peak_tflops=F(1.0), flops_by_dtype={S("fp9"): F(1.0)},
        exc=ValueError)
    add("track", _C.track, F(1.5), peak_tflops=F(1.0), flops_by_dtype=[I(1)], exc=TypeError)
    add("set_track_resolver", _C.set_track_resolver, _clock.resolve_track)
    add("set_track_resolver", _C.set_track_resolver, I(3), exc=TypeError)

    def block(timer: Any, stream: int, raise_in: Optional[BaseException]) -> Any:
        r = _C.new_track(*track_args, timer, stream)
        assert r.__enter__() is r
        if raise_in is None:
            assert r.__exit__(None, None, None) is False
        else:
            assert r.__exit__(type(raise_in), raise_in, None) is False
        return r

    error = ValueError(S("inside"))
    add("UtilizationResult.__enter__/__exit__", block, None, I(0), None)
    add("UtilizationResult.__enter__/__exit__", block, cpu_timer, I(0), error)
    done = block(None, 0, None)
    add("UtilizationResult.__enter__", done.__enter__, exc=RuntimeError)
    add("UtilizationResult.__exit__", done.__exit__, None, None, None)
    add("UtilizationResult.set_work", done.set_work, F(1.5), F(2.5), num_tokens=F(8.0))
    add("UtilizationResult.set_work", done.set_work)
    add("UtilizationResult.set_work", done.set_work, F(-1.0), exc=ValueError)
    add("UtilizationResult.set_work", done.set_work, num_tokens=S("8"), exc=TypeError)
    fresh = _C.new_track(*track_args)  # never entered: figures are None
    for prop in ("mfu", "hfu", "mbu", "elapsed_sec", "achieved_tflops", "achieved_flops_per_sec",
                 "achieved_tbs", "tokens_per_sec", "peak_flops_per_sec", "model_flops",
                 "executed_flops", "num_tokens", "num_gpus", "ready", "clock", "dtype", "gpu_spec",
                 "mfu_mixed"):
        add(f"UtilizationResult.{prop}", getattr, done, prop)
        add(f"UtilizationResult.{prop}", getattr, fresh, prop)
    add("UtilizationResult()", _C.UtilizationResult, exc=TypeError)

    # -- py_timer.c: MarkTimer
    clocks = [S("cpu")] + ([S("cuda"), S("hip")] if fake_available else [])
    for clock in clocks:
        timer = _C.MarkTimer(clock, events_initial=I(2), events_max=I(64), history=I(128))
        add("MarkTimer()", _C.MarkTimer, clock)
        add("MarkTimer.mark", timer.mark)
        add("MarkTimer.mark", timer.mark, I(1 << 20))
        add("MarkTimer.mark", timer.mark, F(0.0), exc=TypeError)
        add("MarkTimer.mark", timer.mark, I(-1), exc=ValueError)
        add("MarkTimer.poll", timer.poll)
        # A timer that is read but never marked again: its marks stay in history.
        reader = _C.MarkTimer(clock)
        first, second = reader.mark(), reader.mark()
        timer = reader
        add("MarkTimer.ready", timer.ready, I(first))
        add("MarkTimer.ready", timer.ready, I(10**12), exc=ValueError)
        add("MarkTimer.ready", timer.ready, S("1"), exc=TypeError)
        add("MarkTimer.time_s", timer.time_s, I(first), wait=False)
        add("MarkTimer.time_s", timer.time_s, I(first))
        add("MarkTimer.time_s", timer.time_s, I(10**12), exc=ValueError)
        add("MarkTimer.elapsed_s", timer.elapsed_s, I(first), I(second))
        add("MarkTimer.elapsed_s", timer.elapsed_s, I(first), F(1.0), exc=TypeError)
        add("MarkTimer.flush", timer.flush)
        add("MarkTimer.counters", timer.counters)
        for prop in ("clock", "failed", "error"):
            add(f"MarkTimer.{prop}", getattr, timer, prop)
    add("MarkTimer()", _C.MarkTimer, S("tpu"), exc=ValueError)
    add("MarkTimer()", _C.MarkTimer, I(1), exc=TypeError)
    add("MarkTimer()", _C.MarkTimer, S("cpu"), events_initial=I(1), exc=ValueError)

    # -- py_timer.c: StepTracker
    step_kwargs = dict(model_flops=F(1e9), executed_flops=F(2e9), param_bytes=F(1e6),
                       peak_flops_per_sec=F(1e12), peak_bytes_per_sec=F(1e12), num_gpus=I(300),
                       window=I(500), warmup=I(300))
    for clock in clocks:
        add("StepTracker()", _C.StepTracker, clock=clock, stream=I(0), **step_kwargs)
        st = _C.StepTracker(clock=clock, **step_kwargs)
        # Step past the records ring's capacity (window + 1,024 kept + the timer's
        # events, docs/step-records.md) so its pages are touched before the soak:
        # faulting them in during the measured calls is RSS growth that is no leak.
        for _ in range(4000):
            st.step(F(1.0))
        st.flush()
        add("StepTracker.step", st.step)
        add("StepTracker.step", st.step, F(4096.0), model_flops=F(1e9), executed_flops=F(3e9))
        add("StepTracker.step", st.step, F(-1.0))  # bad value: a warning, never an exception
        add("StepTracker.step", st.step, F(1.0), F(2.0), exc=TypeError)
        add("StepTracker.step", st.step, nonsense=F(2.0), exc=TypeError)
        add("StepTracker.step", st.step, F(8.0), flops_by_dtype={S("bf16"): F(1e9)})
        add("StepTracker.step", st.step, flops_by_dtype={S("fp9"): F(1e9)})  # a warning
        add("StepTracker.summary", st.summary)
        add("StepTracker.summary", st.summary, language_flops=F(1e8), num_tokens=F(8.0))
        # a step's work booked late, by id (core/steps/records.h): held, not held, bad
        add("StepTracker.book", st.book, I(1), model_flops=F(1e9), num_tokens=F(8.0))
        add("StepTracker.book", st.book, I(1_000_000), model_flops=F(1e9))  # False
        add("StepTracker.book", st.book, I(1), model_flops=F(-1.0))         # a warning
        add("StepTracker.book", st.book, F(1.0), exc=TypeError)
        add("StepTracker.book", st.book, exc=TypeError)
        add("StepTracker.book", st.book, I(1), nonsense=F(1.0), exc=TypeError)
        add("StepTracker.window_steps", st.window_steps)
        add("StepTracker.flush", st.flush)
        add("StepTracker.counters", st.counters)
        for prop in ("clock", "stream", "window", "warmup", "closed"):
            add(f"StepTracker.{prop}", getattr, st, prop)
        closed = _C.StepTracker(clock=clock)
        closed.close()
        add("StepTracker.close", closed.close)
        add("StepTracker.step", closed.step, F(1.0))  # after close: ignored, one warning
        add("StepTracker.__init__", st.__init__, exc=RuntimeError)
        # phases: marks inside an open step; misuse warns once
        st.step()
        block = st.phase(S("forward"))
        add("StepTracker.phase", st.phase, S("data"))
        add("StepTracker.phase", st.phase, S("dataloading"), exc=ValueError)
        add("PhaseBlock.__enter__", block.__enter__)
        add("PhaseBlock.__exit__", block.__exit__, None, None, None)
        add("StepTracker.begin_phase", st.begin_phase, S("backward"))
        add("StepTracker.begin_phase", st.begin_phase, I(3), exc=TypeError)
        add("StepTracker.switch_phase", st.switch_phase, S("optimizer"))
        add("StepTracker.end_phase", st.end_phase)
        add("StepTracker.phase_depth", st.phase_depth)
        add("StepTracker.phases", st.phases)
        add("StepTracker.ledger", st.ledger)
        add("StepTracker.phase", st.phase, S("checkpoint"))
        add("StepTracker._exclude_begin", st._exclude_begin)
        add("StepTracker._exclude_end", st._exclude_end)
    add("StepTracker()", _C.StepTracker, window=I(0), exc=ValueError)
    add("StepTracker()", _C.StepTracker, num_gpus=True, exc=TypeError)
    add("StepTracker()", _C.StepTracker, model_flops=F(math.inf), exc=ValueError)
    add("StepTracker()", _C.StepTracker, clock=S("tpu"), exc=ValueError)
    add("StepTracker()", _C.StepTracker, stream=F(0.0), exc=TypeError)
    unconfigured = _C.StepTracker.__new__(_C.StepTracker)
    add("StepTracker.summary", unconfigured.summary, exc=RuntimeError)
    add("StepTracker.phases", unconfigured.phases, exc=RuntimeError)
    add("StepTracker.ledger", unconfigured.ledger, exc=RuntimeError)
    add("StepTracker.window_steps", unconfigured.window_steps, exc=RuntimeError)
    add("StepTracker.book", unconfigured.book, I(1), model_flops=F(1.0))  # False
    add("PhaseBlock()", _C.PhaseBlock, exc=TypeError)
    peaks = tuple([F(1e12)] * (len(_C.dtype_names()) - 1) + [None])
    add("StepTracker()", _C.StepTracker, dtype_peaks=peaks, flops_by_dtype={S("bf16"): F(1e9)})
    add("StepTracker()", _C.StepTracker, dtype_peaks=(F(1.0),), exc=ValueError)
    add("StepTracker()", _C.StepTracker, flops_by_dtype={S("bf16"): F(-1.0)}, exc=ValueError)
    add("ideal_seconds", _C.ideal_seconds, {S("bf16"): F(1e12)}, peaks)
    add("ideal_seconds", _C.ideal_seconds, {S("fp4"): F(1e12)}, peaks)  # no peak: None
    add("ideal_seconds", _C.ideal_seconds, {S("bf16"): S("x")}, peaks, exc=TypeError)

    # -- py_nvml.c: Nvml, on the fake NVML (tests/_fake_nvml.py)
    nvml_path = _fake_nvml.build()
    add("nvml_library", _C.nvml_library)
    add("gpu_driver_library", _C.gpu_driver_library, S("cuda"))
    add("gpu_driver_library", _C.gpu_driver_library, S("cpu"), exc=ValueError)
    add("gpu_driver_library", _C.gpu_driver_library, I(1), exc=TypeError)
    add("Nvml()", _C.Nvml, S(_fake_nvml.UUID), S(nvml_path))
    add("Nvml()", _C.Nvml, S("0000:99:00.0"), S(nvml_path), exc=RuntimeError)
    add("Nvml()", _C.Nvml, S("GPU-x"), S("/nonexistent/libnvidia-ml.so.1"), exc=RuntimeError)
    add("Nvml()", _C.Nvml, I(3), exc=TypeError)
    opened = _C.Nvml(S(_fake_nvml.UUID), S(nvml_path))
    add("Nvml.read", opened.read)
    unopened = _C.Nvml(S(_fake_nvml.UUID), S(nvml_path))
    add("Nvml.gpm_sample", unopened.gpm_sample, exc=RuntimeError)  # GPM never opened on it
    add("Nvml.gpm_open", opened.gpm_open)
    add("Nvml.gpm_sample", opened.gpm_sample)                     # a window under 0.1 s
    add("Nvml.__init__", opened.__init__, S(_fake_nvml.UUID), exc=RuntimeError)

    # -- py_comm.c, py_links.c: communication; no sink subscribed here
    add("comm_kinds", _C.comm_kinds)
    add("phase_names", _C.phase_names)
    add("comm_op_table", _C.comm_op_table)
    add("comm_kind_phase", _C.comm_kind_phase, S("all_gather"))
    add("comm_kind_phase", _C.comm_kind_phase, S("gossip"), exc=ValueError)
    add("comm_op_type_kind", _C.comm_op_type_kind, S("ALLGATHER"))
    add("comm_op_type_kind", _C.comm_op_type_kind, I(3), exc=TypeError)
    add("comm_busbw_factor", _C.comm_busbw_factor, S("all_reduce"), I(512))
    add("comm_busbw_factor", _C.comm_busbw_factor, S("all_reduce"), S("eight"), exc=TypeError)
    add("comm_sinks", _C.comm_sinks)
    add("comm_wait_begin", _C.comm_wait_begin, I(1))           # every begin, then every end
    add("comm_wait_end", _C.comm_wait_end)
    add("comm_wait_begin", _C.comm_wait_begin, I(10_000), exc=ValueError)
    add("link_table", _C.link_table)
    add("link_intra", _C.link_intra, S("H100 SXM"))
    add("link_intra", _C.link_intra, S("no such device"))      # None
    add("link_inter", _C.link_inter, S("InfiniBand"), F(400.0))
    add("link_inter", _C.link_inter, S("InfiniBand"), S("four hundred"), exc=TypeError)
    add("link_parse_rate", _C.link_parse_rate, S("400 Gb/sec (4X NDR)"))
    add("link_parse_rate", _C.link_parse_rate, S("fast"), exc=ValueError)
    add("link_share", _C.link_share, F(50e9), I(300), I(600))
    add("link_share", _C.link_share, F(50e9), I(2), S("four"), exc=TypeError)
    add("StepTracker.comm", _C.StepTracker(clock=S("cpu")).comm)

    # -- py_record.c: the step record's table, its ratios and the one formula
    for type_name, row, fields in (
            ("StepField", _C.STEP_FIELDS[0],
             ("name", "unit", "given", "defaulted", "per_step", "loss", "meaning")),
            ("Ratio", _C.RATIOS[0], ("name", "field", "ceiling", "meaning"))):
        add(f"{type_name}()", getattr(_C, type_name), tuple(row))
        add(f"{type_name}()", getattr(_C, type_name), (S("x"),), exc=TypeError)
        for attr in (*fields, "n_fields", "n_sequence_fields", "n_unnamed_fields"):
            add(f"{type_name}.{attr}", getattr, row, attr)
    add("form_figures", _C.form_figures, {S("model_flops"): F(1e12), S("num_tokens"): None},
        F(2.0), peak_flops_per_sec=F(1e13), devices=F(2.0), step_s=F(0.1),
        phase_s={S("forward"): F(0.05), S("data"): None}, per_step={})
    add("form_figures", _C.form_figures, {S("nonsense"): F(1.0)}, F(1.0), exc=ValueError)
    add("form_figures", _C.form_figures, [F(1.0)], F(1.0), exc=TypeError)
    add("form_figures", _C.form_figures, {}, F(1.0), step_s=F(1.0), phase_s={S("nap"): F(1.0)},
        exc=ValueError)
    add("form_figures", _C.form_figures, {S("model_flops"): S("x")}, F(1.0), exc=TypeError)
    add("closing_share", _C.closing_share, [F(0.25), F(0.5)])
    add("closing_share", _C.closing_share, [S("x")], exc=TypeError)
    add("closing_share", _C.closing_share, I(3), exc=TypeError)

    # -- py_kernels.c: the kernel class table and the union timeline
    add("kernel_classes", _C.kernel_classes)
    add("kernel_rules", _C.kernel_rules)
    add("kernel_class", _C.kernel_class, S("nvjet_tst_128x256"), S("kernel"))
    add("kernel_class", _C.kernel_class, S("my forward"), S("annotation"))   # None
    add("kernel_class", _C.kernel_class, S("aten::mm"), S("trace"), exc=ValueError)
    add("kernel_class", _C.kernel_class, I(3), S("op"), exc=TypeError)
    starts, ends = [I(10), I(50), I(30)], [I(40), I(60), I(80)]
    add("timeline_split", _C.timeline_split, starts, ends, [I(0), I(0), I(1)], [I(0), I(4), I(8)],
        I(2), I(0), I(130))
    add("timeline_split", _C.timeline_split, starts, ends, [I(0), I(0), I(1)], [I(0), I(4), I(8)],
        I(1), I(0), I(130), exc=ValueError)                      # lane 1 of 1
    add("timeline_split", _C.timeline_split, starts, ends[:2], [I(0)] * 3, [I(0)] * 3, I(1),
        I(0), I(130), exc=ValueError)                            # lengths differ
    add("timeline_split", _C.timeline_split, starts, ends, [I(0)] * 3, [I(0)] * 3, I(1),
        I(130), I(0), exc=ValueError)                            # window backwards
    add("timeline_split", _C.timeline_split, [S("x")], [I(1)], [I(0)], [I(0)], I(1), I(0), I(9),
        exc=TypeError)
    return calls


def _entry_point_names() -> set:
    """Every callable the extension exposes, as the table names them."""
    names = set()
    for name in dir(_C):
        obj = getattr(_C, name)
        if name.startswith("_"):
            continue
        if isinstance(obj, type):
            names.add(f"{name}()")
            for attr, value in vars(obj).items():
                if attr in ("__enter__", "__exit__", "__init__") or not attr.startswith("_"):
                    names.add(f"{name}.{attr}")
        elif callable(obj):
            names.add(name)
    return names


def _covered(calls: List[Call]) -> set:
    covered = set()
    for name, *_ in calls:
        if name == "UtilizationResult.__enter__/__exit__":
            covered |= {"UtilizationResult.__enter__", "UtilizationResult.__exit__"}
        else:
            covered.add(name)
    return covered


def test_entry_point_table_covers_every_C_entry_point(fake):
    missing = _entry_point_names() - _covered(entry_point_calls(True))
    assert not missing, f"entry points not in the soak table: {sorted(missing)}"


def _run(fn: Callable[..., Any], args: tuple, kwargs: Dict[str, Any], exc: Optional[type]) -> None:
    if exc is None:
        fn(*args, **kwargs)
        return
    try:
        fn(*args, **kwargs)
    except exc:
        pass
    else:
        raise AssertionError(f"{fn!r}{args} did not raise {exc.__name__}")


def check_refcounts(name: str, fn: Callable[..., Any], args: tuple, kwargs: Dict[str, Any],
                    exc: Optional[type], n: int) -> None:
    """``n`` calls leave every argument's refcount as one call left it (a
    call may cache an argument once -- track() keeps its last resolved
    key -- but never take a reference per call, nor drop one)."""
    # None / True / False are shared singletons: not ours to count.
    objects = [o for o in (fn, *args, *kwargs.keys(), *kwargs.values())
               if o is not None and o is not True and o is not False]
    _run(fn, args, kwargs, exc)
    before = [sys.getrefcount(o) for o in objects]
    for i in range(n):
        _run(fn, args, kwargs, exc)
    del i  # the loop variable may be one of the small ints passed
    after = [sys.getrefcount(o) for o in objects]
    changed = [(repr(o)[:60], b, a) for o, b, a in zip(objects, before, after) if a != b]
    assert not changed, f"{name}: refcount changed over {n} calls (object, before, after): {changed}"


def test_every_C_entry_point_keeps_refcounts_and_memory_flat(fake):
    calls = entry_point_calls(True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # step(-1) / step after close() warn once
        for name, fn, args, kwargs, exc in calls:
            _run(fn, args, kwargs, exc)  # warm-up (and the expected outcome)
            check_refcounts(name, fn, args, kwargs, exc, 50)

        def body(n: int) -> None:
            for name, fn, args, kwargs, exc in calls:
                for _ in range(n):
                    _run(fn, args, kwargs, exc)

        result = soak(f"every _C entry point ({len(calls)} calls x N)", body, N_ENTRY,
                      N_ENTRY_TRACED, warm=20)
        for name, fn, args, kwargs, exc in calls:
            check_refcounts(name, fn, args, kwargs, exc, 200)
    result.calls_rss *= len(calls)
    result.calls_traced *= len(calls)
    result.check()
