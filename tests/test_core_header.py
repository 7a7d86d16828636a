"""The core's header, csrc/core/mfu_core.h, stays true: it names and includes
every public header of csrc/core, lists the private ones apart, compiles on its
own, and the CPython layer includes it (every file of csrc/python reaches it)."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "csrc" / "core"
PYTHON = ROOT / "csrc" / "python"
INCLUDE = re.compile(r'^#include "([^"]+)"', re.M)


def _sections() -> tuple[list[str], list[str], list[str]]:
    """(topics, private, included) as mfu_core.h lists them."""
    text = (CORE / "mfu_core.h").read_text()
    comment = text[:text.index("*/")]
    topics_part = comment[comment.index("Topics"):comment.index("Private to csrc/core")]
    private_part = comment[comment.index("Private to csrc/core"):]
    name = re.compile(r"^ \*\s+([a-z_]+\.h)\b", re.M)
    return name.findall(topics_part), name.findall(private_part), INCLUDE.findall(text)


def test_every_core_header_is_listed_once_and_the_public_ones_included():
    topics, private, included = _sections()
    headers = sorted(p.name for p in CORE.glob("*/*.h"))
    assert len(topics) == len(set(topics)) and len(private) == len(set(private))
    assert not set(topics) & set(private)
    assert sorted(topics + private) == headers       # a new header must be listed
    assert included == topics                        # included in the listed order


def test_private_core_headers_stay_in_the_core():
    _, private, _ = _sections()
    for path in [*PYTHON.glob("*.[ch]"), *(ROOT / "csrc" / "torch").glob("*")]:
        names = {Path(n).name for n in INCLUDE.findall(path.read_text())}
        assert not names & set(private), path


def test_the_cpython_layer_includes_the_core_header():
    module_h = (PYTHON / "mfu_module.h").read_text()
    assert '#include "../core/mfu_core.h"' in module_h
    headers = {p.name: set(INCLUDE.findall(p.read_text())) for p in PYTHON.glob("*.h")}

    def reaches(includes: set, seen: frozenset = frozenset()) -> bool:
        if "mfu_module.h" in includes:
            return True
        return any(reaches(headers[h], seen | {h}) for h in includes
                   if h in headers and h not in seen)

    for source in PYTHON.glob("*.c"):
        assert reaches(set(INCLUDE.findall(source.read_text()))), source


def test_the_core_header_compiles_alone():
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    done = subprocess.run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-fsyntax-only",
                           "-x", "c", "-", f"-I{CORE}",
                           *(f"-I{d}" for d in sorted(CORE.iterdir()) if d.is_dir())], input='#include "mfu_core.h"\n',
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
