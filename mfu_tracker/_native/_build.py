"""Build of the C++ op observer ``mfu_tracker._torch`` at first use.

A plain ``pip install torch-mfu`` builds in an isolated environment with no
torch, so the wheel carries only ``_C`` plus the observer's sources
(``mfu_tracker/_csrc``; a checkout reads ``csrc/``). The first
:class:`~mfu_tracker.FlopCounter` then compiles them against the installed
torch, once, into a per-user cache:

    $MFU_TRACKER_CACHE_DIR                   (default: $XDG_CACHE_HOME/mfu_tracker,
                                              else ~/.cache/mfu_tracker)
      torch-ext/<base key>/<compiler key>/_torch<EXT_SUFFIX>

* base key: our version, torch's version (and git hash), the C++ ABI flag,
  the Python ABI tag and a hash of the sources. A build for another torch is
  never found (and ``_observer.py`` checks the loaded module's versions again).
* compiler key: the compiler's path and ``--version`` line. A machine with no
  compiler (a compute node) loads any finished build of its base key, such as
  one ``mfu-tracker build-ext`` made on a login node.

The sources are compiled as a few *units* (:func:`compile_units`): each a
generated file that ``#include``-s several ``.cpp`` sources, so torch's
headers -- most of the compile time -- are parsed once per unit rather than
once per source; the units compile in parallel, one per usable CPU (at most
:data:`MAX_UNITS`). While it builds, a line on stderr says what is being
built and how long it has taken (:class:`_Progress`). docs/install.md gives
the build's measured time and the command that measured it.

Builds run under an exclusive ``flock`` on ``<compiler key>.lock``: under
torchrun one process per node builds and the others wait, then load. Objects
are compiled in a temporary directory renamed into place when complete, so no
reader ever sees half a build. A failed build leaves
``<compiler key>.failed`` (the compiler's output) that first-use builds
honour for ``FAILED_RETRY_S`` seconds, so the other ranks do not each fail
again; ``mfu-tracker build-ext`` always retries.

This module imports neither torch nor the package at import time: setup.py
loads it by path for the compile flags and the list of shipped sources.
"""
from __future__ import annotations

import concurrent.futures
import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any, Optional

__all__ = [
    "CACHE_ENV",
    "SOURCE_PATTERNS",
    "BuildError",
    "cache_root",
    "compile_args",
    "core_include_dirs",
    "define_macros",
    "ensure_built",
    "first_error_line",
    "load",
    "source_root",
]

CACHE_ENV = "MFU_TRACKER_CACHE_DIR"
MODULE_NAME = "mfu_tracker._torch"

# What the observer needs, relative to csrc/: its C++ sources and the C
# headers it includes (csrc/torch/mfu_torch.h). setup.py ships exactly these
# in the wheel, under mfu_tracker/_csrc, in the same layout (the core's
# headers sit in its concept folders, core/<folder>/).
SOURCE_PATTERNS = ("torch/*.cpp", "torch/*.h", "core/*.h", "core/*/*.h", "python/mfu_capsules.h")

# How long (s) a recorded failure stops first-use builds from trying again.
FAILED_RETRY_S = 600.0
# The longest one compiler call may take (s) before the build counts as failed.
COMPILE_TIMEOUT_S = 900.0
#: The most units the sources are compiled in (each parses torch's headers once).
MAX_UNITS = 4
#: A build that runs longer than this (s) says so, and again every PROGRESS_EVERY_S.
PROGRESS_FIRST_S = 5.0
PROGRESS_EVERY_S = 15.0
#: What the build takes, as measured (docs/install.md: the figures, the machine, the command).
BUILD_TIME = "about 25 s of CPU time"

FIX_HINT = ("Install a C++20 compiler (g++ >= 10 or clang >= 14; or point CXX at one) and the "
            "Python headers (e.g. python3-dev), then run `mfu-tracker build-ext`")


CACHE_FIX = (f"Set {CACHE_ENV} to a writable directory, or run `mfu-tracker build-ext` "
             "where the cache is writable")


class BuildError(RuntimeError):
    """The observer could not be built: ``str()`` says why, ``fix`` what to do."""

    def __init__(self, why: str, fix: str = FIX_HINT) -> None:
        super().__init__(why)
        self.fix = fix


def compile_args(werror: bool = False) -> list[str]:
    """The C++ flags of the observer, for setup.py and the first-use build
    (torch 2.13's headers need C++20). ``NDEBUG`` as in torch's own build:
    without it ``at::RecordFunction`` has another layout (record_function.h).
    ``-O1``: a counted step costs the same instructions as at ``-O2`` (+0.141%
    against +0.137% of the step, ``benchmarks/counter_instructions.py``) and
    compiles in about 12% less CPU time; ``-O0`` doubles the counter's cost
    (+0.283%) to save little more (docs/install.md has the figures)."""
    args = ["-std=c++20", "-Wall", "-Wextra", "-O1", "-fvisibility=hidden", "-DNDEBUG"]
    if werror:
        args.append("-Werror")
    return args


def core_include_dirs(csrc: Path) -> list[Path]:
    """The C core's include directories under ``csrc``: ``core`` (its
    ``mfu_core.h``) and each concept folder ``core/<folder>``, so that
    ``#include "x.h"`` names a core header by its file name alone."""
    core = csrc / "core"
    return [core, *sorted(p for p in core.iterdir() if p.is_dir())]


def define_macros(version: str, torch_version: str, cxx11_abi: int) -> list[tuple[str, str]]:
    """The observer's macros: the versions ``_observer.py`` checks at load."""
    return [
        ("MFU_TRACKER_VERSION", f'"{version}"'),
        ("MFU_TORCH_VERSION", f'"{torch_version}"'),
        ("_GLIBCXX_USE_CXX11_ABI", str(cxx11_abi)),
    ]


def source_root() -> Optional[Path]:
    """The directory holding ``SOURCE_PATTERNS``: the installed package's
    ``_csrc``, else a checkout's ``csrc``; None when neither has the sources."""
    package = Path(__file__).resolve().parents[1]  # mfu_tracker/_native/_build.py
    for root in (package / "_csrc", package.parent / "csrc"):
        if any((root / "torch").glob("*.cpp")):
            return root
    return None


def cache_root() -> Path:
    """The per-user cache directory (``$MFU_TRACKER_CACHE_DIR`` moves it)."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "mfu_tracker"


def _sources(root: Path) -> list[Path]:
    return sorted({p for pattern in SOURCE_PATTERNS for p in root.glob(pattern)})


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def compile_units(sources: list[Path], cpus: Optional[int] = None) -> list[list[Path]]:
    """The ``.cpp`` files of ``sources`` in ``min(files, cpus, MAX_UNITS)``
    units of about equal size (bytes; the largest file first into the
    smallest unit), each in source order. ``cpus``: the usable CPUs."""
    files = sorted(p for p in sources if p.suffix == ".cpp")
    count = max(1, min(len(files), cpus or _usable_cpus(), MAX_UNITS))
    units: list[list[Path]] = [[] for _ in range(count)]
    sizes = [0] * count
    for path in sorted(files, key=lambda p: -p.stat().st_size):
        smallest = sizes.index(min(sizes))
        units[smallest].append(path)
        sizes[smallest] += path.stat().st_size
    return [sorted(unit) for unit in units if unit]


class _Progress:
    """What the build says on stderr (nothing when ``quiet``): a line when it
    starts, one after :data:`PROGRESS_FIRST_S` and every
    :data:`PROGRESS_EVERY_S` after that (how long so far, what runs), and
    one when it is done (wall and CPU seconds)."""

    def __init__(self, quiet: bool) -> None:
        import resource
        import threading

        self.quiet = quiet
        self.doing = "starting"
        self.started = time.perf_counter()
        self._cpu = lambda: sum(resource.getrusage(resource.RUSAGE_CHILDREN)[:2])
        self.cpu_started = self._cpu()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._tick, name="mfu-build-progress", daemon=True)

    def say(self, line: str) -> None:
        if not self.quiet:
            print(f"mfu_tracker: {line}", file=sys.stderr, flush=True)

    def _tick(self) -> None:
        wait = PROGRESS_FIRST_S
        while not self._done.wait(wait):
            self.say(f"still building the C++ FLOP counter: "
                     f"{time.perf_counter() - self.started:.0f} s so far ({self.doing})")
            wait = PROGRESS_EVERY_S

    def __enter__(self) -> "_Progress":
        self._thread.start()
        return self

    def __exit__(self, kind: Any, *rest: Any) -> None:
        self._done.set()
        self._thread.join()
        if kind is None:
            self.say(f"built the C++ FLOP counter in {time.perf_counter() - self.started:.0f} s "
                     f"({self._cpu() - self.cpu_started:.0f} s of CPU)")


def _compiler() -> tuple[Optional[str], str]:
    """(path of the C++ compiler, its identity for the cache key); path None
    when there is none."""
    name = os.environ.get("CXX") or "c++"
    path = shutil.which(name)
    if path is None:
        return None, ""
    try:
        proc = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
        first = (proc.stdout or proc.stderr).strip().splitlines()
        version = first[0] if first else ""
    except (OSError, subprocess.SubprocessError) as exc:
        version = f"unrunnable: {exc}"
    return path, f"{os.path.realpath(path)} {version}"


def _digest(*parts: Any) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part if isinstance(part, bytes) else str(part).encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


class _Plan:
    """Where the build for this torch + package + compiler lives, and how to make it."""

    def __init__(self, version: str) -> None:
        import torch

        root = source_root()
        if root is None:
            raise BuildError("the observer's C++ sources are not installed (no mfu_tracker/_csrc)",
                             "Reinstall mfu-tracker from its sdist or wheel")
        self.root = root
        self.sources = _sources(root)
        self.version = version
        self.torch = torch
        self.torch_version = torch.__version__
        self.cxx11_abi = int(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True))
        self.suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
        base = _digest(version, self.torch_version, getattr(torch.version, "git_version", ""),
                       self.cxx11_abi, sys.implementation.cache_tag, self.suffix,
                       *[(p.relative_to(root).as_posix(), p.read_bytes()) for p in self.sources])
        self.base = cache_root() / "torch-ext" / f"torch-{self.torch_version}-{base}"
        self.cxx, ident = _compiler()
        self.final = self.base / _digest(ident) if self.cxx else None

    def finished(self) -> Optional[Path]:
        """The built module: this compiler's, or with no compiler any complete one."""
        if self.final is not None:
            candidate = self.final / f"_torch{self.suffix}"
            return candidate if candidate.is_file() else None
        for candidate in sorted(self.base.glob(f"*/_torch{self.suffix}")):
            if not candidate.parent.name.startswith("."):
                return candidate
        return None

    # -- building ------------------------------------------------------------

    def build(self, quiet: bool) -> Path:
        assert self.final is not None
        units = compile_units(self.sources)
        progress = _Progress(quiet)
        progress.say(f"building the C++ FLOP counter for torch {self.torch_version} (once per "
                     f"torch version: {sum(map(len, units))} C++ files in {len(units)} "
                     f"unit(s), {BUILD_TIME}) into {self.final}")
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=self.base))
        try:
            out = tmp / f"_torch{self.suffix}"
            (tmp / "obj").mkdir()
            with progress:
                self._compile_and_link(tmp / "obj", out, units, progress)
            shutil.rmtree(tmp / "obj")
            os.rename(tmp, self.final)  # atomic: a reader sees all of it or nothing
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return self.final / out.name

    def _commands(self, tmp: Path, out: Path,
                  units: list[list[Path]]) -> tuple[list[list[str]], list[str]]:
        """The compiler calls, one per unit (its source generated in ``tmp``), and the link."""
        from torch.utils.cpp_extension import include_paths

        assert self.cxx is not None
        py_include = sysconfig.get_paths()["include"]
        includes = [*map(str, core_include_dirs(self.root)), str(self.root / "torch"),
                    *include_paths(), py_include]
        macros = [f"-D{k}={v}" for k, v in define_macros(self.version, self.torch_version,
                                                          self.cxx11_abi)]
        flags = [*compile_args(), "-fPIC", *macros, *[f"-I{i}" for i in includes]]
        objects, compiles = [], []
        for number, unit in enumerate(units):
            src = tmp / f"unit{number}.cpp"
            src.write_text("".join(f'#include "{path}"\n' for path in unit))
            obj = tmp / f"unit{number}.o"
            objects.append(str(obj))
            compiles.append([self.cxx, *flags, "-c", str(src), "-o", str(obj)])
        torch_lib = str(Path(self.torch.__file__).parent / "lib")
        link = [self.cxx, "-shared", *objects, f"-L{torch_lib}", f"-Wl,-rpath,{torch_lib}",
                "-lc10", "-ltorch", "-ltorch_cpu", "-ltorch_python", "-o", str(out)]
        return compiles, link

    def _compile_and_link(self, tmp: Path, out: Path, units: list[list[Path]],
                          progress: _Progress) -> None:
        if not Path(sysconfig.get_paths()["include"], "Python.h").is_file():
            raise BuildError(f"the Python headers are missing (no Python.h in "
                             f"{sysconfig.get_paths()['include']})")
        compiles, link = self._commands(tmp, out, units)
        progress.doing = f"compiling {len(compiles)} unit(s) in parallel"
        with concurrent.futures.ThreadPoolExecutor(len(compiles)) as pool:
            results = list(pool.map(_run, compiles))
        for problem in results:
            if problem is not None:
                raise BuildError(problem)
        progress.doing = "linking"
        problem = _run(link)
        if problem is not None:
            raise BuildError(problem)


def _run(cmd: list[str]) -> Optional[str]:
    """Run one compiler call; None on success, else the full log (first error line first)."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"`{Path(cmd[0]).name}` took longer than {COMPILE_TIMEOUT_S:.0f} s"
    except OSError as exc:
        return f"`{cmd[0]}` could not run ({exc})"
    if proc.returncode == 0:
        return None
    log = (proc.stderr + proc.stdout).strip()
    return f"{first_error_line(log) or f'exit status {proc.returncode}'}\n{log}"


def first_error_line(log: str) -> str:
    """The compiler's first error line (the first line naming an error, else the first line)."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    for line in lines:
        if "error" in line.lower():
            return line
    return lines[0] if lines else ""


def _record_failure(marker: Path, text: str) -> None:
    try:
        partial = marker.with_name(f"{marker.name}.{os.getpid()}")
        partial.write_text(text)
        partial.replace(marker)
    except OSError:
        pass


def _recent_failure(marker: Path) -> Optional[str]:
    try:
        if time.time() - marker.stat().st_mtime < FAILED_RETRY_S:
            return marker.read_text()
    except OSError:
        pass
    return None


def ensure_built(version: str, *, force: bool = False, retry: bool = False,
                 quiet: bool = False) -> Path:
    """The path of a built observer for the installed torch, building it if
    needed (``force``: build again even if cached; ``retry``: ignore a
    recently recorded failure).

    Raises:
        BuildError: no compiler, the build failed (the compiler's first error
            line, then where the full log is), or the cache is not writable.
    """
    plan = _Plan(version)
    found = None if force else plan.finished()
    if found is not None:
        return found
    if plan.final is None:
        raise BuildError(f"no C++ compiler: `{os.environ.get('CXX') or 'c++'}` is not on PATH "
                         "(set CXX)")
    try:
        plan.base.mkdir(parents=True, exist_ok=True)
        lock = open(plan.final.with_name(plan.final.name + ".lock"), "a+b")  # noqa: SIM115
    except OSError as exc:
        raise BuildError(f"the cache directory {plan.base} is not writable ({exc})",
                         CACHE_FIX) from None
    marker = plan.final.with_name(plan.final.name + ".failed")
    import fcntl  # POSIX; imported here so that this module loads anywhere

    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one builder; the others wait here, then load
        found = None if force else plan.finished()
        if found is not None:
            return found
        failed = None if (force or retry) else _recent_failure(marker)
        if failed is not None:
            raise BuildError(f"{failed.splitlines()[0]} (a build failed less than "
                             f"{FAILED_RETRY_S:.0f} s ago; log: {marker})")
        if force and plan.final.exists():
            shutil.rmtree(plan.final, ignore_errors=True)
        try:
            path = plan.build(quiet)
        except BuildError as exc:
            _record_failure(marker, str(exc))
            raise BuildError(f"{str(exc).splitlines()[0]} (full log: {marker})") from None
        except OSError as exc:
            raise BuildError(f"the cache directory {plan.base} is not writable ({exc})",
                             CACHE_FIX) from None
        try:
            marker.unlink()
        except OSError:
            pass
        return path


def load(path: Path) -> ModuleType:
    """Import the built observer at ``path`` as ``mfu_tracker._torch``."""
    loader = importlib.machinery.ExtensionFileLoader(MODULE_NAME, str(path))
    spec = importlib.util.spec_from_file_location(MODULE_NAME, str(path), loader=loader)
    if spec is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    sys.modules[MODULE_NAME] = module
    return module
