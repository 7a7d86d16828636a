"""MFUOptimizerWrapper: a real optimizer, exact FLOPs per optimizer step, no sync.

Hand arithmetic: a bias-free ``nn.Linear(IN, OUT)`` on an input that does not
require grad costs 2·b·IN·OUT forward plus 2·b·IN·OUT for the weight gradient
(no input gradient): 4·b·IN·OUT model FLOPs per micro-batch.
"""
from __future__ import annotations

import copy
import math
import time
import warnings

import pytest

torch = pytest.importorskip("torch")

from mfu_tracker import track, user_gpu_spec  # noqa: E402
from mfu_tracker.optim import MFUOptimizerWrapper, StepResult  # noqa: E402

IN, OUT, BATCH = 16, 8, 4
LINEAR_FLOPS = 4 * BATCH * IN * OUT     # 4 * 4 * 16 * 8 = 2048
SPEC = user_gpu_spec(1000.0, name="fake GPU", memory_bandwidth_tbs=2.0)  # 1e15 FLOP/s
MS = 1_000_000


def linear():
    torch.manual_seed(0)
    return torch.nn.Linear(IN, OUT, bias=False)


def wrap(model, **kwargs):
    kwargs.setdefault("spec", SPEC)
    kwargs.setdefault("clock", "cpu")
    kwargs.setdefault("warmup", 0)
    return MFUOptimizerWrapper(torch.optim.SGD(model.parameters(), lr=0.1), model, **kwargs)


def loss_of(model, batch=BATCH):
    return model(torch.ones(batch, IN)).sum()


# ---- a real optimizer -----------------------------------------------------------


def test_is_an_optimizer_sharing_the_wrapped_state():
    model = linear()
    opt = wrap(model)
    assert isinstance(opt, torch.optim.Optimizer)
    assert opt.param_groups is opt.optimizer.param_groups
    assert opt.state is opt.optimizer.state
    assert opt.defaults is opt.optimizer.defaults
    assert opt.defaults["lr"] == 0.1          # attribute forwarding
    opt.optimizer.custom_attribute = 7
    assert opt.custom_attribute == 7


def test_lr_scheduler_drives_the_wrapped_optimizer():
    model = linear()
    opt = wrap(model)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "lr_scheduler.step() before optimizer.step()"
        for _ in range(3):
            with opt.track_step():
                loss_of(model).backward()
            opt.step()
            sched.step()
    # 0.1 halved three times = 0.0125
    assert opt.optimizer.param_groups[0]["lr"] == pytest.approx(0.0125)
    assert sched.get_last_lr() == [pytest.approx(0.0125)]


def test_state_dict_round_trip_and_load_keeps_sharing():
    model = linear()
    opt = MFUOptimizerWrapper(torch.optim.Adam(model.parameters(), lr=1e-2), model, spec=SPEC,
                              clock="cpu")
    with opt.track_step():
        loss_of(model).backward()
    opt.step()
    saved = copy.deepcopy(opt.state_dict())
    assert saved.keys() == opt.optimizer.state_dict().keys()
    assert saved["state"][0]["step"] == 1

    fresh = MFUOptimizerWrapper(torch.optim.Adam(model.parameters(), lr=5.0), model, spec=SPEC,
                                clock="cpu")
    fresh.load_state_dict(saved)
    assert fresh.param_groups[0]["lr"] == 1e-2
    assert fresh.param_groups is fresh.optimizer.param_groups   # replaced groups still shared
    assert torch.equal(fresh.state[model.weight]["exp_avg"], opt.state[model.weight]["exp_avg"])


def test_step_with_closure_returns_the_loss_and_counts_it():
    model = linear()
    opt = wrap(model)
    opt.zero_grad()  # starts the clock

    def closure():
        opt.zero_grad()
        loss = loss_of(model)
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert isinstance(loss, torch.Tensor)
    assert opt.last_step_flops == (LINEAR_FLOPS, LINEAR_FLOPS)   # 2048, 2048

    lbfgs = MFUOptimizerWrapper(torch.optim.LBFGS(model.parameters(), max_iter=1), model,
                                spec=SPEC, clock="cpu")
    assert isinstance(lbfgs.step(closure), torch.Tensor)


# ---- FLOPs, tokens, time per optimizer step ------------------------------------------


def test_track_step_counts_the_block_and_the_step():
    model = linear()
    opt = wrap(model)
    for _ in range(3):
        with opt.track_step(num_tokens=BATCH) as result:
            loss_of(model).backward()
        opt.step()
        assert isinstance(result, StepResult)
        assert result.model_flops == LINEAR_FLOPS          # 2048
        assert result.elapsed_sec > 0
        # mfu = 2048 / elapsed / 1e15
        assert result.mfu == pytest.approx(LINEAR_FLOPS / result.elapsed_sec / 1e15, rel=1e-9)
        assert result.tokens_per_sec == pytest.approx(BATCH / result.elapsed_sec, rel=1e-9)
        assert result.dtype == "bf16" and result.gpu_spec is SPEC
    summary = opt.summary()
    # the first track_step started the clock, each step() closed one: 3 steps
    assert summary["steps"] == 3
    m = opt.metrics()
    # end to end: 3 steps x 2048 FLOPs over the window time
    assert m["throughput/mfu"] == pytest.approx(3 * LINEAR_FLOPS / summary["window_s"] / 1e15, rel=1e-9)
    assert m["throughput/tokens_per_sec"] == pytest.approx(3 * BATCH / summary["window_s"], rel=1e-9)


def test_gradient_accumulation_sums_micro_batches():
    model = linear()
    opt = wrap(model)
    for _ in range(2):
        opt.zero_grad()
        for _ in range(3):  # 3 micro-batches, each in its own block
            with opt.track_step(num_tokens=BATCH, zero_grad=False):
                loss_of(model).backward()
        opt.step()
        # 3 x 2048 = 6144
        assert opt.last_step_flops == (3 * LINEAR_FLOPS, 3 * LINEAR_FLOPS)
    s = opt.summary()
    assert s["steps"] == 2 and s["tokens_per_sec"] == pytest.approx(2 * 3 * BATCH / s["window_s"])


def test_grads_survive_zero_grad_false_and_are_cleared_by_default():
    model = linear()
    opt = wrap(model)
    with opt.track_step():
        loss_of(model).backward()
    with opt.track_step(zero_grad=False):
        loss_of(model).backward()
    # d(sum(W x))/dW with x = ones: every entry = BATCH, twice accumulated = 8
    assert torch.all(model.weight.grad == 2 * BATCH)
    with opt.track_step():
        loss_of(model).backward()
    assert torch.all(model.weight.grad == BATCH)


def test_count_every_scales_uncounted_steps_by_tokens():
    model = linear()
    opt = wrap(model, count_every=2)
    flops = []
    for batch in (4, 4, 2, 8):
        with opt.track_step(num_tokens=batch):
            loss_of(model, batch).backward()
        opt.step()
        flops.append(opt.last_step_flops[0])
    # step 0 counted (4·4·16·8 = 2048); 1 scaled 2048·4/4; 2 counted (4·2·16·8 = 1024);
    # 3 scaled from step 2: 1024·8/2 = 4096
    assert flops == [2048, 2048, 1024, 4096]


def test_profile_fallback_without_counting():
    model = linear()
    opt = wrap(model, sample_batch=torch.ones(BATCH, IN), count_every=0, gradient_accumulation_steps=2)
    opt.profile()
    # the sample batch: input x needs no grad -> 2048; x 2 micro-batches per step = 4096
    for _ in range(2):
        opt.zero_grad()
        loss_of(model).backward()
        loss_of(model).backward()
        opt.step()
        assert opt.last_step_flops == (2 * LINEAR_FLOPS, 2 * LINEAR_FLOPS)


def test_failed_profile_is_not_retried_every_step():
    # A sample_batch the model cannot run once made profile() -- two runs of
    # the model, forward + backward -- start again at every step of the loop.
    model = linear()
    calls = []
    model.register_forward_pre_hook(lambda module, args: calls.append(args[0].shape[-1]))
    opt = wrap(model, sample_batch=torch.ones(BATCH, IN + 1), count_every=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            with opt.track_step():
                loss_of(model).backward()
            opt.step()
    assert calls.count(IN + 1) == 1     # tried once (it fails in the first forward)
    assert calls.count(IN) == 3         # the training steps themselves
    assert len([w for w in caught if "profiling sample_batch failed" in str(w.message)]) == 1


def test_hfu_backward_factor_overrides_executed_flops():
    model = linear()
    opt = wrap(model, hfu_backward_factor=3.0)
    with opt.track_step():
        loss_of(model).backward()
    opt.step()
    # forward 2·4·16·8 = 1024; executed = 1024 · (1 + 3) = 4096; model unchanged 2048
    assert opt.last_step_flops == (LINEAR_FLOPS, 4096)
    opt = wrap(model, backward_factor=4.0)
    with opt.track_step():
        loss_of(model).backward()
    opt.step()
    assert opt.last_step_flops == (LINEAR_FLOPS, 4096)   # 1024 · 4


def test_no_flops_source_warns_once_and_leaves_mfu_out():
    model = linear()
    opt = wrap(model)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            opt.zero_grad()
            loss_of(model).backward()   # not in a track_step block: nothing counted
            opt.step()
    assert len([w for w in caught if "no FLOPs" in str(w.message)]) == 1
    m = opt.metrics()
    assert "throughput/mfu" not in m and "throughput/step_time_s" in m


def test_exception_in_block_propagates_and_the_wrapper_keeps_working():
    model = linear()
    opt = wrap(model)
    with pytest.raises(ZeroDivisionError):
        with opt.track_step():
            1 / 0
    with opt.track_step():
        loss_of(model).backward()
    opt.step()
    assert opt.last_step_flops == (LINEAR_FLOPS, LINEAR_FLOPS)


def test_gpu_clock_never_synchronizes(fake):
    # records complete at the host's time (no work, no lag); the host takes 2 ms a step
    fake.set_work_ns(0)
    fake.set_lag_ns(0)
    model = linear()
    opt = wrap(model, clock="cuda", warmup=1)  # step 1 opens and closes at t = 0
    for _ in range(50):
        with opt.track_step(num_tokens=BATCH):
            loss_of(model).backward()
        opt.step()
        opt.metrics()      # read every step: never waits
        fake.advance(2 * MS)
    assert fake.sync_calls() == 0
    opt.close()
    s = opt.summary()
    # each optimizer step spans 2 ms of the fake GPU timeline -> 2048 / 0.002 / 1e15
    assert s["step_time_s"] == pytest.approx(0.002, rel=1e-6)
    assert s["mfu"] == pytest.approx(LINEAR_FLOPS / 0.002 / 1e15, rel=1e-6)
    assert s["mbu"] == pytest.approx(IN * OUT * 4 / 0.002 / 2e12, rel=1e-6)  # 512 B / 2 ms / 2 TB/s


# ---- bad input -------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(sample_batch="tokens"), TypeError, "sample_batch"),
    (dict(sample_batch=3), TypeError, "sample_batch"),
    (dict(dtype="bf17"), ValueError, "dtype"),
    (dict(hfu_backward_factor=-1.0), ValueError, "hfu_backward_factor"),
    (dict(hfu_backward_factor=math.inf), ValueError, "hfu_backward_factor"),
    (dict(backward_factor=0.5), ValueError, "backward_factor"),
    (dict(hfu_backward_factor=2.0, backward_factor=3.0), ValueError, "not both"),
    (dict(count_every=-1), ValueError, "count_every"),
    (dict(gradient_accumulation_steps=0), ValueError, "gradient_accumulation_steps"),
    (dict(num_gpus=0), ValueError, "num_gpus"),
    (dict(window=0), ValueError, "window"),
    (dict(causal_attention="none"), ValueError, "causal_attention"),
])
def test_bad_arguments_raise_naming_them(kwargs, error, match):
    with pytest.raises(error, match=match):
        wrap(linear(), **kwargs)


def test_bad_optimizer_and_model():
    model = linear()
    with pytest.raises(TypeError, match="optimizer"):
        MFUOptimizerWrapper(object(), model)
    with pytest.raises(TypeError, match="model"):
        MFUOptimizerWrapper(torch.optim.SGD(model.parameters(), lr=0.1), "model")
    with pytest.raises(ValueError, match="no parameters"):
        MFUOptimizerWrapper(torch.optim.SGD(model.parameters(), lr=0.1), torch.nn.ReLU())
    opt = wrap(model)
    with pytest.raises(TypeError, match="already"):
        MFUOptimizerWrapper(opt, model)


# ---- one result type: a late read keeps its value --------------------------------------------


LATE_READ_BLOCKS = 3000      # ~3x the timer's history (1,024 marks) of two marks a block
LATE_READ_INDEX = 5          # the block read late
SLOW_BLOCK_S = 0.02          # CPU clock: the one block that sleeps, so no other block's time fits


def _late_read_block_ns(i: int, reference: bool) -> int:
    """Fake GPU time of block i: distinct for every block, so a value read from
    another block's marks cannot pass. track_step() blocks: 1 ms + i us; track()
    blocks: 1 ms + i us + 0.5 us."""
    return MS + i * 1000 + (500 if reference else 0)


@pytest.mark.parametrize("clock", ["cpu", "cuda"])
def test_track_step_result_read_late_keeps_its_value(clock, fake):
    """Regression: track_step() yielded its own StepResult, which read its time
    from the shared timer's history (1024 marks) when it was read: after 3,000
    blocks the 6th result had elapsed_sec and mfu None. It now yields track()'s
    UtilizationResult, whose time is its own. track() is read the same way.

    Both clocks check the late value against the block's own time, so a value
    lost (None), taken from another block's marks (a history slot reused) or
    measured up to the read fails either case: on the fake CUDA clock every
    block has its own programmed GPU time (exact); on the CPU clock block 5
    alone sleeps 20 ms and its value must lie between the monotonic clock's
    readings inside and around the block (the core's CPU clock is the same
    CLOCK_MONOTONIC)."""
    fake.set_work_ns(0)
    fake.set_lag_ns(0)
    model = linear()
    opt = wrap(model, clock=clock)
    blocks, references = [], []
    bounds = {}                  # (kind, i) -> (inside the block, around it), ns
    for i in range(LATE_READ_BLOCKS):
        slow = clock == "cpu" and i == LATE_READ_INDEX
        outer = time.monotonic_ns()
        with opt.track_step(num_tokens=BATCH) as result:
            inner = time.monotonic_ns()
            fake.advance(_late_read_block_ns(i, reference=False))   # GPU time inside the block
            loss_of(model).backward()
            if slow:
                time.sleep(SLOW_BLOCK_S)
            bounds["block", i] = (time.monotonic_ns() - inner, None)
        bounds["block", i] = (bounds["block", i][0], time.monotonic_ns() - outer)
        opt.step()
        blocks.append(result)
        outer = time.monotonic_ns()
        with track(LINEAR_FLOPS, spec=SPEC, dtype="bf16", clock=clock) as reference:
            inner = time.monotonic_ns()
            fake.advance(_late_read_block_ns(i, reference=True))
            if slow:
                time.sleep(SLOW_BLOCK_S)
            bounds["reference", i] = (time.monotonic_ns() - inner, None)
        bounds["reference", i] = (bounds["reference", i][0], time.monotonic_ns() - outer)
        references.append(reference)
    i = LATE_READ_INDEX
    for kind, r in (("block", blocks[i]), ("reference", references[i])):
        # read now, 2 x 3,000 blocks later: the block's own time, not lost, not another's
        assert r.elapsed_sec is not None, kind
        if clock == "cuda":
            # block 5: 1 ms + 5 us = 0.001005 s (track(): + 0.5 us = 0.0010055 s); the
            # driver API reports float milliseconds (a float32: ~1e-7 relative), while
            # neighbouring blocks differ by 1 us (1e-3) and the two kinds by 0.5 us
            expected = _late_read_block_ns(i, reference=kind == "reference") * 1e-9
            assert r.elapsed_sec == pytest.approx(expected, rel=1e-6), kind
        else:
            inside, around = bounds[kind, i]
            assert inside >= SLOW_BLOCK_S * 1e9       # the sleep made this block the slow one
            assert inside * 1e-9 <= r.elapsed_sec <= around * 1e-9, kind
        # mfu = 2048 / elapsed / 1e15
        assert r.mfu == pytest.approx(LINEAR_FLOPS / r.elapsed_sec / 1e15, rel=1e-9)
        assert isinstance(r, StepResult) and r.clock == clock
    assert blocks[i].model_flops == LINEAR_FLOPS and blocks[i].num_tokens == BATCH
    assert blocks[i].tokens_per_sec == pytest.approx(BATCH / blocks[i].elapsed_sec, rel=1e-9)
    # the last block, read at once, is its own too
    if clock == "cuda":
        assert blocks[-1].elapsed_sec == pytest.approx(
            _late_read_block_ns(LATE_READ_BLOCKS - 1, reference=False) * 1e-9, rel=1e-6)
    assert fake.sync_calls() == 0 or clock == "cpu"


def test_track_step_result_is_pending_until_the_block_exits():
    model = linear()
    opt = wrap(model)
    with opt.track_step(num_tokens=BATCH) as result:
        assert result.model_flops is None and result.mfu is None and result.elapsed_sec is None
        loss_of(model).backward()
    assert result.model_flops == LINEAR_FLOPS and result.elapsed_sec > 0
