"""Check a built wheel against the README (run by `make install-check` and
tests/install/test_wheel.py).

    python tests/install/check_wheel.py WHEEL [WHEEL ...] --readme README.md

For each wheel:
  - no ``_torch`` binary: the C++ observer is compiled at first use against
    the torch the user installed (a binary built for one torch is wrong for
    another); the wheel ships its sources, ``mfu_tracker/_csrc/torch/*.cpp``;
  - the ``_C`` extension is there, and the live page's files
    (``mfu_tracker/cli/view/assets/``: ``mfu-tracker view`` serves them offline);
  - the wheel's distribution name (METADATA ``Name``) is the one every
    ``pip install`` line of the README that names a distribution installs
    (``torch`` itself -- the CPU build's index line -- aside; ``.`` and
    ``".[extra]"`` install the checkout, which builds this wheel), and the
    Install section installs the project: ``pip install .`` (from a checkout)
    or ``pip install <name>``.
Exits non-zero naming each problem.
"""
from __future__ import annotations

import argparse
import re
import sys
import zipfile
from pathlib import Path
from typing import List, Set

# `pip install [options] SPEC ...` as the README writes it (SPEC may be quoted).
PIP_INSTALL = re.compile(r"pip install\s+([^`\n]*)")
OPTIONS_WITH_VALUE = {"-i", "--index-url", "--extra-index-url", "-f", "--find-links", "-c",
                      "--constraint", "-r", "--requirement", "-t", "--target"}
NOT_THIS_PROJECT = {"torch", "."}


def _specs(arguments: str) -> List[str]:
    """The package names of one ``pip install`` command's arguments."""
    names, skip = [], False
    for token in arguments.replace('"', " ").replace("'", " ").split():
        if token in ("&&", ";", "|", "#"):
            break
        if skip:
            skip = False
        elif token.startswith("-"):
            skip = token in OPTIONS_WITH_VALUE
        else:
            names.append(re.split(r"[\[<>=!~ ]", token, maxsplit=1)[0])
    return names


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def wheel_name(wheel: Path) -> str:
    """The distribution name in the wheel's METADATA."""
    with zipfile.ZipFile(wheel) as zf:
        meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        for line in zf.read(meta).decode("utf-8").splitlines():
            if line.startswith("Name:"):
                return line.split(":", 1)[1].strip()
    raise ValueError(f"{wheel}: METADATA has no Name")


def readme_install_names(readme: str) -> Set[str]:
    """Distribution names the README's ``pip install`` lines install (normalized)."""
    return {_normalized(name) for m in PIP_INSTALL.finditer(readme)
            for name in _specs(m.group(1)) if name not in NOT_THIS_PROJECT}


def install_section(readme: str) -> str:
    match = re.search(r"^## Install\n(.*?)(?=^## )", readme, re.MULTILINE | re.DOTALL)
    return match.group(1) if match else ""


def problems(wheel: Path, readme: str) -> List[str]:
    """What is wrong with ``wheel`` (empty when nothing)."""
    found: List[str] = []
    with zipfile.ZipFile(wheel) as zf:
        members = zf.namelist()
    torch_binaries = [m for m in members if re.fullmatch(r"mfu_tracker/_torch[^/]*\.(so|pyd|dylib)", m)]
    if torch_binaries:
        found.append(f"carries a _torch binary, built for one torch: {', '.join(torch_binaries)}")
    if not any(re.fullmatch(r"mfu_tracker/_C[^/]*\.(so|pyd)", m) for m in members):
        found.append("has no _C extension")
    if not any(re.fullmatch(r"mfu_tracker/_csrc/torch/[^/]+\.cpp", m) for m in members):
        found.append("lacks the observer's sources (mfu_tracker/_csrc/torch/*.cpp)")
    page = [f"mfu_tracker/cli/view/assets/{n}" for n in ("index.html", "view.js", "view.css")]
    if not set(page) <= set(members):
        found.append(f"lacks the live page's files (mfu-tracker view): "
                     f"{', '.join(sorted(set(page) - set(members)))}")
    name = _normalized(wheel_name(wheel))
    others = readme_install_names(readme) - {name}
    if others:
        found.append(f"is {name!r}, but README install lines install {sorted(others)}")
    if not re.search(rf"^pip install ({re.escape(name)}|\.)(\s|$)", install_section(readme),
                     re.MULTILINE):
        found.append(f"the README's Install section has no `pip install .` or "
                     f"`pip install {name}` line")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheels", nargs="+", type=Path)
    parser.add_argument("--readme", type=Path, required=True)
    args = parser.parse_args()
    readme = args.readme.read_text(encoding="utf-8")
    failed = False
    for wheel in args.wheels:
        for problem in problems(wheel, readme):
            print(f"check_wheel: FAILED: {wheel.name} {problem}")
            failed = True
        if not failed:
            print(f"check_wheel: ok: {wheel.name} ({wheel_name(wheel)}: no _torch binary, "
                  "_C, the observer's sources and the page's files; the README installs "
                  "this distribution)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
