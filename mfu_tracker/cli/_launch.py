"""The launcher's side of ``mfu-tracker run``: the child process, its
environment, its signals and its exit status (docs/run.md).

The command runs as a child of this process, in the same process group and
session, with two changes to its environment (:func:`child_env`): the agent's
startup hook first on ``PYTHONPATH`` and the run's configuration in
``MFU_TRACKER_RUN`` (:mod:`mfu_tracker.agent._config`). Everything else --
stdin, stdout, stderr, the working directory, the rest of the environment --
is the command's as if it ran bare.

**Signals.** SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 sent to the launcher are
passed to the child. SIGINT and SIGQUIT typed at a terminal (Ctrl-C,
Ctrl-\\) reach the child directly, as the terminal signals its whole
foreground process group: the launcher then only waits; sent to the launcher
alone (``kill -INT``), they are passed on too. **Exit status.** The child's:
its exit code, or, when a signal ended it, the launcher ends itself with the
same signal (so a shell sees what it would have seen), else 128 + the signal.

What the launcher does beside the child -- the live page while it runs, the
passport when it has ended -- is :mod:`._beside`'s.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import Any, Dict, List, Mapping, Optional

from ..agent._config import BOOT_DIR, ENV_VAR, RunConfig
from ._errors import CliError

__all__: List[str] = []

#: Signals passed on to the child whenever the launcher receives them.
FORWARDED = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGUSR1", "SIGUSR2")
                  if hasattr(signal, name))
#: Signals a terminal sends to its foreground process group (the child has them already).
FROM_TERMINAL = tuple(getattr(signal, name) for name in ("SIGINT", "SIGQUIT")
                      if hasattr(signal, name))


def note(message: str) -> None:
    """One line of the launcher's on stderr (stdout is the command's)."""
    print(f"mfu-tracker run: {message}", file=sys.stderr, flush=True)


def child_env(config: RunConfig, environ: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    """The child's environment: ``environ`` (default ``os.environ``) with the
    startup hook's directory first on ``PYTHONPATH`` and the run's config."""
    env = dict(os.environ if environ is None else environ)
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = BOOT_DIR + (os.pathsep + path if path else "")
    env[ENV_VAR] = config.to_env()
    return env


def command_line(words: List[str]) -> List[str]:
    """The command to run: ``words`` without a leading ``--``; a Python file
    (``train.py ...``) runs under this interpreter."""
    if words and words[0] == "--":
        words = words[1:]
    if not words:
        raise CliError("no command: give it after --, e.g. mfu-tracker run -- python train.py")
    if words[0].endswith(".py") and os.path.isfile(words[0]):
        return [sys.executable, *words]
    return list(words)


def _terminal_sent_it() -> bool:
    """Whether this process is in its terminal's foreground process group
    (then a SIGINT / SIGQUIT typed there reached the child too)."""
    for stream in (sys.stdin, sys.stderr, sys.stdout):
        try:
            fd = stream.fileno()
            if os.isatty(fd):
                return os.tcgetpgrp(fd) == os.getpgrp()
        except (AttributeError, OSError, ValueError):
            continue
    return False


class _Forwarder:
    """The launcher's signal handlers while the child runs."""

    def __init__(self) -> None:
        self.child: Optional[subprocess.Popen] = None
        self.pending: List[int] = []     # received before the child existed
        self._saved: Dict[int, Any] = {}

    def __enter__(self) -> "_Forwarder":
        for sig in FORWARDED + FROM_TERMINAL:
            self._saved[sig] = signal.signal(sig, self._received)
        return self

    def __exit__(self, *exc: Any) -> None:
        for sig, handler in self._saved.items():
            signal.signal(sig, handler)

    def _received(self, sig: int, frame: Any) -> None:
        if sig in FROM_TERMINAL and _terminal_sent_it():
            return
        if self.child is None:
            self.pending.append(sig)
        else:
            self._send(sig)

    def _send(self, sig: int) -> None:
        try:
            self.child.send_signal(sig)  # type: ignore[union-attr]
        except ProcessLookupError:
            pass

    def started(self, child: subprocess.Popen) -> None:
        self.child = child
        for sig in self.pending:
            self._send(sig)
        self.pending.clear()


def child_started(config: RunConfig, child: subprocess.Popen) -> None:
    """The child runs: where its log is (the page reading it is
    :class:`mfu_tracker.cli._beside.Page`, started before the child)."""
    note(f"measuring pid {child.pid}; the log is {config.log_path}")


def child_ended(config: RunConfig, returncode: int) -> bool:
    """The child ended with ``returncode``: the commands that read its log,
    or why there is no log. Whether the log exists."""
    if os.path.exists(config.log_path):
        note(f"log {config.log_path}: read it with `mfu-tracker report {config.log_path} "
             f"--out report.png`, `mfu-tracker goodput ...`, `mfu-tracker advise ...`")
        return True
    else:
        note(f"no log was written to {config.log_path}: no process of the command imported "
             "torch and trained a module (a Python started with -E, -I or -S skips the "
             "agent's startup hook; see docs/run.md)")
    return False


def run_child(config: RunConfig, command: List[str]) -> int:
    """Run ``command`` measured by the agent; its exit status (a signal that
    ended it as ``-signal``, as ``subprocess`` reports it)."""
    env = child_env(config)
    with _Forwarder() as forwarder:
        try:
            child = subprocess.Popen(command, env=env)
        except (FileNotFoundError, PermissionError) as error:
            # what a shell answers: 127 not found, 126 not executable
            found = isinstance(error, PermissionError)
            note(f"{command[0]}: {'not executable' if found else 'command not found'}")
            return 126 if found else 127
        forwarder.started(child)
        child_started(config, child)
        returncode = child.wait()
    return returncode


def exit_status(returncode: int, *, die: bool = True) -> int:
    """The launcher's exit status for the child's ``returncode``: the code
    itself; for a signal, the launcher ends itself by it (``die``), else
    128 + the signal."""
    if returncode >= 0:
        return returncode
    sig = -returncode
    if die:
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError):   # SIGKILL, SIGSTOP: no handler to reset
            pass
        os.kill(os.getpid(), sig)
    return 128 + sig
