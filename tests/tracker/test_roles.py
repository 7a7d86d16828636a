"""mfu_tracker/tracker/_roles.py: a step's roles booked as the step record's
fields (each role's four, the wait, the model FLOPs), by hand."""
from __future__ import annotations

import warnings

import pytest

from mfu_tracker import Tracker
from mfu_tracker.tracker._roles import RoleRun, Roles
from mfu_tracker.timing._roles import ROLES


def _roles() -> Roles:
    return Roles(Tracker(None, peak_tflops=1.0, clock="cpu", warmup=0))


def test_a_step_s_fields_by_hand():
    roles = _roles()
    roles.add("rollout", flops=6e9, bytes=2e9, tokens=64, seconds=2.0)
    roles.add("learner", flops=3e9, tokens=256, seconds=1.0)
    fields = roles.fields(wall_s=4.0)
    assert fields["rollout_flops"] == 6e9 and fields["rollout_bytes"] == 2e9
    assert fields["learner_s"] == 1.0 and "learner_bytes" not in fields   # unknown: left out
    assert fields["reference_s"] == 0.0 and fields["reward_flops"] == 0.0  # did not run
    assert fields["wait_s"] == 4.0 - 2.0 - 1.0                             # no role ran
    assert fields["model_flops"] == 6e9 + 3e9                              # every role's


def test_an_unknown_role_flops_leaves_the_model_flops_unknown():
    roles = _roles()
    roles.add("rollout", tokens=8, seconds=1.0)      # no FLOPs given
    assert "model_flops" not in roles.fields(wall_s=1.0)


def test_weight_sync_does_no_model_flops_unless_given():
    assert RoleRun("weight_sync").flops == 0.0 and RoleRun("learner").flops is None


def test_a_bad_value_warns_and_is_unknown_for_the_step():
    run = RoleRun("learner")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run.add(flops=-1.0, tokens=3)
    assert len(caught) == 1 and "learner flops" in str(caught[0].message)
    assert run.flops != run.flops and run.tokens == 3                      # NaN, and kept


def test_roles_are_the_record_s_table():
    assert ROLES == ("rollout", "reference", "reward", "learner", "weight_sync")
    with pytest.raises(ValueError, match="role must be one of"):
        _roles().run("critic")
