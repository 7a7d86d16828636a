"""``--quick-geglu`` and the ``convention=`` it makes."""
from __future__ import annotations

import argparse

import pytest

from mfu_tracker.cli._convention_flags import add_quick_geglu, convention_spec


def test_quick_geglu_becomes_megatrons_option():
    assert convention_spec("megatron", "on") == {"name": "megatron", "quick_geglu": True}
    assert convention_spec("Megatron", "off") == {"name": "megatron", "quick_geglu": False}


def test_without_the_flag_or_for_another_framework_the_name_stays():
    assert convention_spec("megatron", None) == "megatron"
    assert convention_spec("verl", "on") == "verl"
    assert convention_spec(None, "on") is None


def test_the_flag_takes_on_or_off(capsys):
    parser = argparse.ArgumentParser(prog="p")
    add_quick_geglu(parser)
    assert parser.parse_args(["--quick-geglu", "on"]).quick_geglu == "on"
    assert parser.parse_args([]).quick_geglu is None
    with pytest.raises(SystemExit):
        parser.parse_args(["--quick-geglu", "yes"])
    assert "invalid choice: 'yes'" in capsys.readouterr().err
