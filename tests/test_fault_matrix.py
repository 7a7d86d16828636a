"""Fault matrix for the training path (docs/reliability.md, "Bad input and
faults": once training runs the tracker never raises into the loop and never
changes its results; a failure becomes one warning and a missing metric; an exception inside a
tracked block propagates unchanged).

A real tiny training loop (an MLP, SGD, 6 steps, CPU, fixed seeds) runs
without any tracker (the reference) and instrumented under each fault:

=====================================  ==================================================
fault                                  how it is made
=====================================  ==================================================
GPU driver missing                     a subprocess with MFU_TRACKER_CUDA_LIBRARY naming a
                                       file that does not exist, clock="cuda"
a driver call failing mid-run          the fake driver's fake_fail_next(<call>, code)
                                       armed at step 3 (cuEventRecord / Query / Elapsed)
the FLOP counter failing mid-step      a custom op whose registered formula raises
a logging backend failing              MFUCallback's own logging raising inside a Trainer;
                                       a report_to-style callback after it raising
an exception inside the tracked block  the loop's body raises on step 3 (a skipped batch)
=====================================  ==================================================

Each row checks: losses and final parameters bit-identical to the
reference (``torch.equal``, float ``==``), exactly one RuntimeWarning from
mfu_tracker where the design says one (none where nothing failed), and an
exception raised in the block reaching the loop as the same object.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest

torch = pytest.importorskip("torch")

from mfu_tracker import (  # noqa: E402
    MFUOptimizerWrapper,
    Tracker,
    register_flop_formula,
    track,
)
from mfu_tracker.counter import unregister_flop_formula  # noqa: E402
from mfu_tracker.timing import _clock  # noqa: E402

STEPS = 6
ROOT = Path(__file__).resolve().parent.parent


class SkipBatch(Exception):
    """Raised inside the tracked block on one step (an OOM the loop skips)."""


def _double_op() -> Any:
    """mfu_fault::double -- a custom op (x * 2) with autograd, created once."""
    if not hasattr(_double_op, "op"):
        @torch.library.custom_op("mfu_fault::double", mutates_args=())
        def double(x: torch.Tensor) -> torch.Tensor:
            return x * 2

        @double.register_fake
        def _(x: torch.Tensor) -> torch.Tensor:
            return torch.empty_like(x)

        double.register_autograd(lambda ctx, grad: grad * 2)
        _double_op.op = double
    return _double_op.op


class Net(torch.nn.Module):
    def __init__(self, custom_op: bool) -> None:
        super().__init__()
        self.a = torch.nn.Linear(8, 16)
        self.b = torch.nn.Linear(16, 1)
        self.double = _double_op() if custom_op else (lambda x: x * 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.tanh(self.double(self.a(x))))


Instrument = Callable[[Any, Any], Any]


def train(instrument: Optional[str] = None, *, clock: str = "cpu", custom_op: bool = False,
          raise_on: Optional[int] = None, on_step: Optional[Callable[[int], None]] = None
          ) -> Tuple[List[float], Dict[str, torch.Tensor], List[str]]:
    """The loop: (losses, final parameters, mfu_tracker warnings).

    ``instrument``: None (the reference), "tracker" (a Tracker stepped every
    step + track() around forward/backward, figures read every step) or
    "wrapper" (MFUOptimizerWrapper.track_step, counted every step).
    ``raise_on``: the step whose block raises SkipBatch (caught by the loop).
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.manual_seed(0)
        model = Net(custom_op)
        opt: Any = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        tracker = None
        if instrument == "tracker":
            tracker = Tracker(1e4, dtype="fp32", peak_tflops=1.0, device="cpu", clock=clock, warmup=0)
        elif instrument == "wrapper":
            opt = MFUOptimizerWrapper(opt, model, dtype="fp32", peak_tflops=1.0, device="cpu",
                                      clock=clock, warmup=0)
        g = torch.Generator().manual_seed(1)
        losses: List[float] = []
        for step in range(STEPS):
            if on_step is not None:
                on_step(step)
            x = torch.randn(4, 8, generator=g)
            y = torch.randn(4, 1, generator=g)
            try:
                if instrument == "tracker":
                    opt.zero_grad()
                    with track(1e4, num_tokens=4, dtype="fp32", peak_tflops=1.0, device="cpu",
                               clock=clock) as r:
                        loss = torch.nn.functional.mse_loss(model(x), y)
                        if step == raise_on:
                            raise SkipBatch(step)
                        loss.backward()
                    r.mfu, r.elapsed_sec
                elif instrument == "wrapper":
                    with opt.track_step(num_tokens=4):
                        loss = torch.nn.functional.mse_loss(model(x), y)
                        if step == raise_on:
                            raise SkipBatch(step)
                        loss.backward()
                else:
                    opt.zero_grad()
                    loss = torch.nn.functional.mse_loss(model(x), y)
                    if step == raise_on:
                        raise SkipBatch(step)
                    loss.backward()
            except SkipBatch as exc:
                assert exc.args == (step,)
                continue
            opt.step()
            if tracker is not None:
                tracker.step(4)
                tracker.metrics()
            if instrument == "wrapper":
                opt.metrics()
            losses.append(loss.item())
        if tracker is not None:
            tracker.close()
        if instrument == "wrapper":
            opt.close()
    params = {k: v.detach().clone() for k, v in model.state_dict().items()}
    ours = [f"{w.category.__name__}: {w.message}" for w in caught
            if "mfu_tracker" in str(w.message) or "MFU" in str(w.message)]
    return losses, params, ours


def assert_same_run(reference: Tuple[List[float], Dict[str, torch.Tensor], Any],
                    run: Tuple[List[float], Dict[str, torch.Tensor], Any]) -> None:
    losses_ref, params_ref, _ = reference
    losses, params, _ = run
    assert losses == losses_ref  # bit-identical floats
    assert params.keys() == params_ref.keys()
    for name in params:
        assert torch.equal(params[name], params_ref[name]), name


@pytest.fixture(scope="module")
def reference():
    return train(None)


@pytest.fixture(autouse=True)
def fresh_clocks():
    _clock.reset_caches()
    yield
    _clock.reset_caches()


# ---- no fault: the instruments themselves change nothing ----------------------------------


@pytest.mark.parametrize("instrument", ["tracker", "wrapper"])
def test_no_fault_same_results_no_warning(instrument, reference):
    run = train(instrument)
    assert_same_run(reference, run)
    assert run[2] == []


# ---- GPU driver missing ------------------------------------------------------------------

_SUBPROCESS = """
import json, sys
sys.path.insert(0, {tests!r})
import test_fault_matrix as m
reference = m.train(None)
run = m.train({instrument!r}, clock="cuda")
same = reference[0] == run[0] and all(m.torch.equal(reference[1][k], run[1][k]) for k in reference[1])
print(json.dumps({{"same": same, "losses": run[0], "warnings": run[2]}}))
"""


@pytest.mark.parametrize("instrument", ["tracker", "wrapper"])
def test_gpu_driver_missing_one_warning_same_results(instrument, reference, tmp_path):
    env = dict(os.environ)
    env["MFU_TRACKER_CUDA_LIBRARY"] = str(tmp_path / "no-such-libcuda.so.1")
    env.pop("MFU_TRACKER_HIP_LIBRARY", None)
    code = _SUBPROCESS.format(tests=str(ROOT / "tests"), instrument=instrument)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300, cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["same"]
    assert result["losses"] == reference[0]  # and the same as in this process
    assert len(result["warnings"]) == 1, result["warnings"]
    message = result["warnings"][0]
    assert "falls back to the CPU clock" in message and "no-such-libcuda" in message, message


# ---- a driver call failing mid-run (the fake driver) ----------------------------------------


@pytest.mark.parametrize("call", ["cuEventRecord", "cuEventQuery", "cuEventElapsedTime"])
@pytest.mark.parametrize("instrument", ["tracker", "wrapper"])
def test_driver_call_failing_mid_run_one_warning_same_results(instrument, call, fake, reference):
    def arm(step: int) -> None:
        if step == 3:
            fake.fail_next(call, 700)  # CUDA_ERROR_ILLEGAL_ADDRESS

    run = train(instrument, clock="cuda", on_step=arm)
    assert_same_run(reference, run)
    assert fake.calls(call) > 0
    assert len(run[2]) == 1, run[2]  # one warning, even with two timers in the loop
    assert call in run[2][0] and "CPU clock" in run[2][0], run[2][0]


def test_tracker_keeps_counting_steps_after_a_driver_failure(fake):
    """The figures after the fallback: every step() still a boundary."""
    tracker = Tracker(1e4, dtype="fp32", peak_tflops=1.0, clock="cuda", warmup=0)
    with pytest.warns(RuntimeWarning, match="cuEventRecord"):
        for i in range(10):
            if i == 5:
                fake.fail_next("cuEventRecord", 700)
            tracker.step(4)
        s = tracker.summary()
    assert s["clock"] == "cpu" and s["boundaries"] == 10
    # 10 boundaries close 9 intervals: each one a step, dropped (the one the
    # failure cut) or still pending -- none lost, none doubled
    assert s["steps"] + s["steps_dropped"] + s["steps_pending"] == 9
    assert s["steps"] >= 4  # the 4 intervals before the failure at least
    assert tracker.metrics()  # figures from the steps after the fallback


# ---- the FLOP counter failing mid-step ------------------------------------------------------


@pytest.fixture
def raising_formula():
    def formula(*args: Any) -> int:
        raise ZeroDivisionError("a formula bug")

    _double_op()
    register_flop_formula("mfu_fault::double", formula)
    yield
    unregister_flop_formula("mfu_fault::double")


def test_flop_formula_raising_mid_step_one_warning_same_results(raising_formula):
    reference = train(None, custom_op=True)
    run = train("wrapper", custom_op=True)
    assert_same_run(reference, run)
    assert len(run[2]) == 1, run[2]  # not one per counted step
    assert "could not be counted" in run[2][0] and "ZeroDivisionError" in run[2][0], run[2][0]


def test_flop_formula_raising_exception_in_block_still_propagates(raising_formula):
    reference = train(None, custom_op=True, raise_on=2)
    run = train("wrapper", custom_op=True, raise_on=2)
    assert_same_run(reference, run)
    assert len(run[2]) == 1, run[2]


# ---- an exception inside the tracked block ---------------------------------------------------


@pytest.mark.parametrize("instrument", ["tracker", "wrapper"])
@pytest.mark.parametrize("clock", ["cpu", "cuda"])
def test_exception_in_block_propagates_unchanged_same_results(instrument, clock, fake):
    reference = train(None, raise_on=3)
    run = train(instrument, clock=clock, raise_on=3)  # the loop asserts it caught SkipBatch(3)
    assert_same_run(reference, run)
    assert len(run[0]) == STEPS - 1
    assert run[2] == []  # nothing failed in the tracker: no warning


def test_exception_in_block_is_the_same_object_with_its_traceback():
    error = SkipBatch("x")
    m = torch.nn.Linear(2, 2)
    opt = MFUOptimizerWrapper(torch.optim.SGD(m.parameters(), lr=0.1), m, peak_tflops=1.0, device="cpu",
                              clock="cpu")

    def raising_line() -> None:
        raise error

    for block in (lambda: track(1.0, peak_tflops=1.0, device="cpu"), lambda: opt.track_step()):
        with pytest.raises(SkipBatch) as info:
            with block():
                raising_line()
        assert info.value is error
        assert info.value.__context__ is None and info.value.__cause__ is None
        assert info.traceback[-1].name == "raising_line"
        error.__traceback__ = None


# ---- a logging backend failing (transformers.Trainer) ----------------------------------------


transformers = pytest.importorskip("transformers")
pytest.importorskip("accelerate")
from transformers import Trainer, TrainerCallback, TrainingArguments  # noqa: E402


class Regression(torch.utils.data.Dataset):
    def __init__(self) -> None:
        g = torch.Generator().manual_seed(2)
        self.x = torch.randn(32, 8, generator=g)
        self.y = torch.randn(32, 1, generator=g)

    def __len__(self) -> int:
        return 32

    def __getitem__(self, i: int) -> Dict[str, torch.Tensor]:
        return {"x": self.x[i], "labels": self.y[i]}


class LossNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.net = Net(False)

    def forward(self, x: torch.Tensor, labels: torch.Tensor) -> Dict[str, torch.Tensor]:
        return {"loss": torch.nn.functional.mse_loss(self.net(x), labels)}


class Recorder(TrainerCallback):
    """A report_to-style backend: records every log, or raises on the 2nd."""

    def __init__(self, fail: bool = False) -> None:
        self.logs: List[Dict[str, Any]] = []
        self.fail = fail

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
        self.logs.append(dict(logs or {}))
        if self.fail and len(self.logs) == 2:
            raise ConnectionError("backend down")


def trainer_run(tmp_path: Path, callbacks: List[Any]) -> Tuple[List[float], Dict[str, torch.Tensor], List[str]]:
    model = LossNet()
    args = TrainingArguments(output_dir=str(tmp_path / "out"), max_steps=STEPS, per_device_train_batch_size=4,
                             learning_rate=0.05, logging_steps=1, report_to=[], save_strategy="no",
                             use_cpu=True, seed=0, data_seed=0, dataloader_num_workers=0,
                             disable_tqdm=True, lr_scheduler_type="constant")
    trainer = Trainer(model=model, args=args, train_dataset=Regression(), callbacks=callbacks)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer.train()
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    params = {k: v.detach().clone() for k, v in model.state_dict().items()}
    ours = [f"{w.category.__name__}: {w.message}" for w in caught if "mfu_tracker" in str(w.message)]
    return losses, params, ours


def test_mfu_callback_logging_failing_one_warning_same_training(tmp_path, monkeypatch):
    from mfu_tracker.integrations.hf_trainer import MFUCallback

    reference = trainer_run(tmp_path / "ref", [Recorder()])
    recorder = Recorder()
    callback = MFUCallback(peak_tflops=1.0, device="cpu", clock="cpu", warmup=0)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise OSError("the metrics sink is gone")

    monkeypatch.setattr(callback, "_book_steps", broken)
    run = trainer_run(tmp_path / "run", [callback, recorder])
    assert len(reference[0]) == STEPS
    assert_same_run(reference, run)
    assert len(run[2]) == 1 and "OSError" in run[2][0], run[2]
    assert len(recorder.logs) >= STEPS  # the other backend still got every log
    assert not any(k.startswith("throughput/") for log in recorder.logs for k in log)  # left out


def test_a_failing_report_to_backend_fails_the_same_with_or_without_the_callback(tmp_path):
    """A backend after MFUCallback raising in on_log is the Trainer's failure:
    the same exception reaches train()'s caller, unchanged, after the same
    training steps; MFUCallback neither masks it nor warns."""
    from mfu_tracker.integrations.hf_trainer import MFUCallback

    outcomes = []
    for callbacks in ([Recorder(fail=True)],
                      [MFUCallback(peak_tflops=1.0, device="cpu", clock="cpu", warmup=0), Recorder(fail=True)]):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with pytest.raises(ConnectionError, match="backend down") as info:
                trainer_run(tmp_path / str(len(outcomes)), callbacks)
        recorder = callbacks[-1]
        outcomes.append((type(info.value), str(info.value), [log.get("loss") for log in recorder.logs]))
        assert not [w for w in caught if "mfu_tracker" in str(w.message)]
    assert outcomes[0] == outcomes[1]
