"""The command line's user error: one line on stderr, exit status 2."""
from __future__ import annotations

from mfu_tracker.cli import main
from mfu_tracker.cli._errors import CliError


def test_a_user_error_is_one_line_and_status_two(capsys):
    assert issubclass(CliError, Exception) and not issubclass(CliError, ValueError)
    # estimate raises CliError when neither --model nor --params is given
    assert main(["estimate", "--gpu", "B200", "--tokens-per-sec", "1"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == ("mfu-tracker estimate: error: give exactly one of --model (preset, "
                   "config.json or org/name) and --params\n")


def test_the_launcher_raises_it_for_a_missing_command():
    from mfu_tracker.cli._launch import command_line

    try:
        command_line(["--"])
    except CliError as error:
        assert "no command: give it after --" in str(error)
    else:
        raise AssertionError("no CliError for an empty command")
