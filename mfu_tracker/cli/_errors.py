"""The command line's user error."""


class CliError(Exception):
    """A user error on the command line: printed as one line, exit status 2."""
