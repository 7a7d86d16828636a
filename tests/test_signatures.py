"""The public constructors show their real signatures, and each argument is
checked once.

``inspect.signature`` (what IDEs, ``help()`` and documentation tools read)
gives each constructor's own parameters, never ``(*args, **kwargs)``:
``Tracker``, ``MFUOptimizerWrapper``, the HF Trainer and Lightning
``MFUCallback`` and ``fabric_tracker``. A Tracker's arguments reach its
configuration by name, one check each: ``window`` and ``warmup`` by the step
engine (the C core's limits), ``profile_steps`` by its one parser.
"""
from __future__ import annotations

import inspect
import pydoc
import warnings

import pytest

from mfu_tracker import Tracker, _C
from mfu_tracker.breakdown import _step_profile
from mfu_tracker.integrations.hf_trainer import MFUCallback as HFCallback
from mfu_tracker.integrations.fabric import fabric_tracker
from mfu_tracker.integrations.lightning import MFUCallback as LightningCallback
from mfu_tracker.integrations.optim import MFUOptimizerWrapper
from mfu_tracker.tracker import _config
from mfu_tracker.tracker._config import TrackerConfig

#: Tracker's parameters as docs/ and its class docstring list them (a sample
#: from each group: work, window, peak, clock, ranks, readings, log, profile).
TRACKER_PARAMETERS = ("flops_per_step", "dtype", "window", "warmup", "param_bytes",
                      "executed_flops_per_step", "peak_tflops", "clock", "distributed",
                      "tensor_parallel", "telemetry", "memory", "log_path", "job",
                      "profile_steps", "model_info")


def _names(obj):
    return list(inspect.signature(obj).parameters)


def test_tracker_shows_its_parameters():
    names = _names(Tracker)
    assert names[0] == "flops_per_step"
    assert set(TRACKER_PARAMETERS) <= set(names)
    assert not {"args", "kwargs"} & set(names)
    assert inspect.signature(Tracker).parameters["dtype"].kind is inspect.Parameter.KEYWORD_ONLY


def test_help_of_tracker_shows_its_parameters():
    text = pydoc.render_doc(Tracker)
    assert "Tracker(flops_per_step" in text and "profile_steps" in text


def test_every_tracker_parameter_reaches_the_configuration_by_name():
    """The one place the arguments go: TrackerConfig.check takes exactly
    Tracker's parameters, with the same defaults where it has any."""
    tracker = inspect.signature(Tracker).parameters
    check = inspect.signature(TrackerConfig.check).parameters
    assert list(check) == list(tracker)
    for name, parameter in check.items():
        if parameter.default is not inspect.Parameter.empty:
            assert parameter.default == tracker[name].default, name


def test_a_profiling_tracker_is_still_a_tracker_with_the_same_signature():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = Tracker(1e9, clock="cpu", profile_steps=3)
    assert isinstance(t, Tracker) and type(t).__name__ == "ProfiledTracker"
    assert _names(type(t)) == _names(Tracker)
    t.close()


def test_the_optimizer_wrapper_and_the_callbacks_show_their_parameters():
    assert _names(MFUOptimizerWrapper)[:3] == ["optimizer", "model", "sample_batch"]
    hf = _names(HFCallback)
    lightning = _names(LightningCallback)
    assert hf[:2] == ["sample_batch", "dtype"] and "profile_steps" in hf
    # Lightning's: every argument the callbacks share, then its own
    assert lightning == [*hf, "log_every_n_steps"]
    assert "log_every_n_steps" in pydoc.render_doc(LightningCallback)


def test_the_lightning_signature_is_what_it_accepts():
    bound = inspect.signature(LightningCallback).bind(None, "bf16", log_every_n_steps=5, window=7)
    cb = LightningCallback(*bound.args, **bound.kwargs)
    assert (cb.dtype, cb.log_every_n_steps, cb.window) == ("bf16", 5, 7)
    with pytest.raises(TypeError):
        inspect.signature(LightningCallback).bind(no_such_option=1)
    with pytest.raises(TypeError, match="no_such_option"):
        LightningCallback(no_such_option=1)


def test_fabric_tracker_shows_the_tracker_parameters():
    names = _names(fabric_tracker)
    assert names[:2] == ["fabric", "flops_per_step"]
    assert names[2:] == _names(Tracker)[1:]
    params = inspect.signature(fabric_tracker).parameters
    assert params["dtype"].default is None and params["device"].default is None  # from the Fabric


def test_window_and_warmup_are_checked_once_by_the_step_engine(monkeypatch):
    checked = []
    real = _config.check_int
    monkeypatch.setattr(_config, "check_int", lambda v, name, *a: checked.append(name) or real(v, name, *a))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        Tracker(1e9, clock="cpu", window=5, warmup=0).close()
    assert "window" not in checked and "warmup" not in checked
    with pytest.raises(ValueError, match=f"window: must be between 1 and {_C.LIMIT_WINDOW_MAX}, got 0"):
        Tracker(1e9, clock="cpu", window=0)
    with pytest.raises(ValueError, match=f"warmup: must be between 0 and {_C.LIMIT_WARMUP_MAX}, got -1"):
        Tracker(1e9, clock="cpu", warmup=-1)
    with pytest.raises(TypeError, match="window must be an int, not float"):
        Tracker(1e9, clock="cpu", window=1.5)


def test_profile_steps_is_parsed_once_per_tracker(monkeypatch):
    made = []
    real_init = _step_profile.ProfileSchedule.__init__
    monkeypatch.setattr(_step_profile.ProfileSchedule, "__init__",
                        lambda self, *a, **k: made.append(1) or real_init(self, *a, **k))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        Tracker(1e9, clock="cpu", profile_steps=5).close()
    assert len(made) == 1
    with pytest.raises(ValueError, match="profile_steps: -1 is negative"):
        Tracker(1e9, clock="cpu", profile_steps=-1)


def test_a_callback_checks_profile_steps_when_built_and_hands_on_the_schedule():
    cb = HFCallback(profile_steps=[3, 5])
    assert isinstance(cb.profile_steps, _step_profile.ProfileSchedule)
    assert cb.profile_steps.steps == frozenset({3, 5})
    assert _step_profile.check_profile_steps(cb.profile_steps) is cb.profile_steps
    with pytest.raises(TypeError, match="profile_steps: step numbers must be ints"):
        HFCallback(profile_steps=[1.5])
