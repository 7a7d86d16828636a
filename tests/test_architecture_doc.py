"""Every name docs/architecture.md cites is in the tree.

The page is a newcomer's map: a file, module, function or method it names
that was renamed or removed sends them looking for something that is not
there. Each backquoted name is resolved by what it looks like:

* a path (``timing/_metrics.py``, ``csrc/torch/``, ``conventions*.c``): a file
  or folder of the repository whose path ends so (bare C file names may live
  in any folder of ``csrc/``);
* ``file`` followed by ``name`` (``mixed.c`` ``mfu_mixed_ideal_s``): the name
  is defined in that file;
* ``Class.attr`` / ``module.attr`` (``Tracker.metrics``, ``_aliases.ALIASES``,
  ``StepTracker.comm()``): the class or module is the package's (or
  ``mfu_tracker._C``'s) and has the attribute;
* ``mfu_tracker.x`` / ``.x`` (a documented import path): it imports;
* ``make target``: the Makefile has the target;
* any other identifier: it occurs as a word in the code (mfu_tracker/, csrc/).

The diagrams' folders, files and ``_modules`` are resolved the same way.
"""
from __future__ import annotations

import importlib
import math
import re
from fnmatch import fnmatch
from functools import lru_cache
from pathlib import Path
from typing import List, Optional

import pytest
import torch.distributed

import mfu_tracker
from mfu_tracker import _C

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "architecture.md"
SKIP_DIRS = {".git", ".venv", "build", "__pycache__", "corpus", ".pytest_cache"}
CODE_SUFFIXES = {".py", ".pyi", ".c", ".h", ".cpp"}
FILE_SUFFIXES = CODE_SUFFIXES | {".md", ".png", ".json", ".sh", ".txt", ".toml"}
#: Outputs the page names that a build writes (not in the tree).
GENERATED = {"build/run/"}
#: Names from outside the package the page cites, resolved where they live.
EXTERNAL = {"math": math, "Work": torch.distributed.Work}


@lru_cache(maxsize=None)
def _paths() -> List[str]:
    found = []
    for path in ROOT.rglob("*"):
        rel = path.relative_to(ROOT)
        if any(part in SKIP_DIRS for part in rel.parts):
            continue
        found.append(rel.as_posix() + ("/" if path.is_dir() else ""))
    return found


@lru_cache(maxsize=None)
def _code_words() -> frozenset:
    words = set()
    for rel in _paths():
        if rel.startswith(("mfu_tracker/", "csrc/")) and Path(rel).suffix in CODE_SUFFIXES:
            words.update(re.findall(r"\w+", (ROOT / rel).read_text(errors="replace")))
    return frozenset(words)


def _find_path(token: str) -> List[str]:
    """The repository paths ``token`` (a path, a file name, a glob) names."""
    if "*" in token:
        return [p for p in _paths() if fnmatch(p.rsplit("/", 1)[-1], token)]
    return [p for p in _paths() if p == token or p.endswith("/" + token)]


def _defined_in(name: str, rel: str) -> bool:
    text = (ROOT / rel).read_text(errors="replace")
    return re.search(rf"(def|class)\s+{name}\b|\b{name}\s*(=|:|\()", text) is not None


@lru_cache(maxsize=None)
def _package_object(name: str) -> Optional[object]:
    """The package's class or module called ``name``, or one of _C's."""
    if hasattr(_C, name):
        return getattr(_C, name)
    if hasattr(mfu_tracker, name):
        return getattr(mfu_tracker, name)
    for rel in _paths():
        if not rel.startswith("mfu_tracker/") or not rel.endswith(".py"):
            continue
        module = rel[:-3].replace("/", ".").removesuffix(".__init__")
        if module.rsplit(".", 1)[-1] == name:
            return importlib.import_module(module)
        if re.search(rf"^class {name}\b", (ROOT / rel).read_text(), re.M):
            return getattr(importlib.import_module(module), name)
    return None


def _resolves(token: str) -> bool:
    token = re.sub(r"\(.*\)$", "", token).rstrip("=")  # a call or a keyword
    if token in GENERATED:
        return True
    if token.startswith("make "):
        target = token.split()[1]
        return re.search(rf"^{re.escape(target)}\s*:", (ROOT / "Makefile").read_text(),
                         re.M) is not None
    if "/" in token or Path(token.replace("*", "x")).suffix in FILE_SUFFIXES:
        return bool(_find_path(token))
    if token.startswith("."):  # a compatibility import path, relative to the package
        token = "mfu_tracker" + token
    if token.startswith("mfu_tracker."):
        try:
            importlib.import_module(token)
            return True
        except ImportError:
            parent, _, attr = token.rpartition(".")
            return hasattr(importlib.import_module(parent), attr)
    if "." in token:
        owner_name, _, attr = token.partition(".")
        owner = EXTERNAL.get(owner_name) or _package_object(owner_name)
        if owner is None:
            return False
        if attr.endswith("*"):
            return any(n.startswith(attr[:-1]) for n in dir(owner))
        return hasattr(owner, attr)
    return token in _code_words()


def _cited() -> List[str]:
    """Every name the page cites, in order, once."""
    text = PAGE.read_text(encoding="utf-8")
    names = re.findall(r"`([^`\s][^`]*)`", text.replace("```", "\n"))
    for block in re.findall(r"```(.*?)```", text, flags=re.S):
        names += re.findall(r"(?<![\w/.-])((?:[\w.*-]+/)+[\w.*-]*|[\w*-]+\.(?:py|c|h|cpp|md|png|json|sh)"
                            r"|_[a-z]\w*)(?![\w/])", block)
    keep = [n for n in names if n != "None" and "<" not in n and "..." not in n.split("(")[0]]
    return list(dict.fromkeys(keep))


def test_the_page_cites_names_at_all():
    cited = _cited()
    assert len(cited) > 150, len(cited)  # the parser still reads the page
    for name in ("Tracker.metrics(model_flops=..., ...)", "gpu_table.c", "flops/counter/",
                 "_validate", "conventions*.c", "_C.LIMIT_*", "make run"):
        assert name in cited, name


@pytest.mark.parametrize("token", ["Tracker._no_such_method", "no_such_file.c",
                                   "timing/_no_such.py", "mfu_tracker.no_such",
                                   "make no-such-target", "no_such_identifier_anywhere",
                                   "NoSuchClass.comm", "_C.NO_SUCH_*"])
def test_a_name_that_is_gone_does_not_resolve(token):
    assert not _resolves(token)


def test_every_name_the_page_cites_exists():
    missing = [name for name in _cited() if not _resolves(name)]
    assert not missing, f"docs/architecture.md names what the tree does not have: {missing}"


def test_a_function_named_beside_its_file_is_defined_there():
    text = re.sub(r"```.*?```", "", PAGE.read_text(encoding="utf-8"), flags=re.S)
    pairs = re.findall(r"`([\w/]+\.(?:c|py|cpp))`\s+`(\w+)(?:\(\))?`", text)
    assert len(pairs) >= 8, pairs
    wrong = []
    for file_name, name in pairs:
        files = _find_path(file_name)
        if not any(_defined_in(name, rel) for rel in files):
            wrong.append(f"{file_name} {name}")
    assert not wrong, f"docs/architecture.md names these beside a file that lacks them: {wrong}"
