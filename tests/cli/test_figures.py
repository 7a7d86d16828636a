"""A figure as a command prints it: rounded by its unit in the key table."""
from __future__ import annotations

from mfu_tracker.cli._figures import seconds, share, shown, signed_share, significant


def test_shares_have_three_places_and_differences_a_sign():
    assert share(0.123456) == "0.123"
    assert share(1.0) == "1.000"
    assert signed_share(0.0126) == "+0.013"
    assert signed_share(-0.25) == "-0.250"


def test_four_significant_digits_whole_from_ten_thousand():
    assert significant(1.23456) == "1.235"
    assert significant(0.000123456) == "0.0001235"
    assert significant(9999.4) == "9999"
    assert significant(18797.3) == "18797"       # not 1.88e+04
    assert significant(-12345.6) == "-12346"
    assert seconds(2.5e-3) == "0.0025"


def test_each_key_is_rounded_by_its_unit():
    assert shown("mfu", 0.41236) == "0.412"                     # ratio
    assert shown("mfu_lost/data", 0.07049) == "0.070"           # a family: fraction of step time
    assert shown("badput/startup", 0.2) == "0.200"              # fraction of job wall time
    assert shown("mfu_lost_rank/data", 2.6) == "3"              # rank: whole
    assert shown("memory/ooms", 1.0) == "1"                     # count: whole
    assert shown("throttled", 1.0) == "1"                       # flag: whole
    assert shown("step_time_s", 0.123456) == "0.1235"           # seconds: 4 significant
    assert shown("tokens_per_sec", 123456.7) == "123457"
    assert shown("not_a_key", 3.14159) == "3.142"               # unknown: 4 significant
