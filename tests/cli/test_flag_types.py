"""The flags' value checks: a bad value is argparse's error naming the flag."""
from __future__ import annotations

import argparse
import math

import pytest

from mfu_tracker.cli._flag_types import int_at_least, port, positive_float, seq_lens


def test_int_at_least_takes_the_bound_and_refuses_below_it():
    at_least_one = int_at_least(1)
    assert at_least_one("1") == 1 and at_least_one("4096") == 4096
    assert at_least_one.__name__ == "int >= 1"
    with pytest.raises(argparse.ArgumentTypeError, match=r"must be an integer >= 1, got 0"):
        at_least_one("0")
    with pytest.raises(argparse.ArgumentTypeError, match=r"integer >= 1, got '1.5'"):
        at_least_one("1.5")
    assert int_at_least(0)("0") == 0


def test_positive_float_is_finite_and_above_zero():
    assert positive_float("7e9") == 7e9
    assert positive_float("1.2") == 1.2
    for bad in ("0", "-1", "inf", "nan"):
        with pytest.raises(argparse.ArgumentTypeError, match="finite number > 0"):
            positive_float(bad)
    with pytest.raises(argparse.ArgumentTypeError, match="got 'x'"):
        positive_float("x")
    assert not math.isnan(positive_float("1e-300"))


def test_a_port_is_0_to_65535():
    """One check for every command's --port (view, run): 0 asks for a free
    port, 65535 is the last; 65536 would only fail later, at the bind."""
    assert port("0") == 0 and port("8080") == 8080 and port("65535") == 65535
    for bad in ("65536", "-1", "http", "80.5"):
        with pytest.raises(argparse.ArgumentTypeError, match=rf"0 to 65535 .*got '{bad}'"):
            port(bad)


def test_seq_lens_are_comma_separated_and_at_least_one():
    assert seq_lens("1500,700,2048") == [1500, 700, 2048]
    assert seq_lens("8") == [8]
    for bad in ("", "1500,0", "a,b", "1500,,2"):
        with pytest.raises(argparse.ArgumentTypeError, match="comma-separated lengths >= 1"):
            seq_lens(bad)


def test_a_parser_names_the_flag_in_its_error(capsys):
    parser = argparse.ArgumentParser(prog="p")
    parser.add_argument("--seq-len", type=int_at_least(1))
    with pytest.raises(SystemExit):
        parser.parse_args(["--seq-len", "0"])
    assert "argument --seq-len: must be an integer >= 1, got 0" in capsys.readouterr().err
