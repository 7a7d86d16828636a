"""The repository explains itself: nothing in it cites a design file, a folder
outside the tree or an issue tracker's number.

A reader has the tree and its docs/ pages, nothing else. A comment, docstring,
doc, test name or message that points at a design file kept elsewhere, at
``../shared/``, or at "issue 12" / "#12" sends them to something they cannot
open. Such a comment cites the docs/ page that states the rule instead
(docs/conventions.md for the conventions behind every number).

References to another project's tracker stay: they name it
("pytorch/pytorch#12345", "pytorch#75807", "verl #1208").
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator, List, Tuple

ROOT = Path(__file__).resolve().parents[1]

#: What is scanned: every text file under these folders, and these files.
TREES = ("mfu_tracker", "csrc", "tests", "benchmarks", "examples", "docs", ".ci")
FILES = ("README.md", "Makefile", "setup.py", "pyproject.toml", "MANIFEST.in")
TEXT_SUFFIXES = {".py", ".pyi", ".c", ".h", ".cpp", ".md", ".txt", ".toml", ".in",
                 ".cfg", ".sh", ".json", ".yml", ".yaml"}
#: Extensionless text files (the CI entry point, makefiles).
TEXT_NAMES = {"Makefile", "run"}
#: Build outputs, caches and binary fuzz inputs are not the repository's prose.
SKIP_DIRS = {"__pycache__", ".venv", "build", "corpus", ".pytest_cache"}

#: A design file kept outside the tree: "DESIGN.md", "DESIGN §3", "DESIGN's".
#: A quoted "DESIGN" (a test that checks the docs never say it) is not a citation.
DESIGN = re.compile(r"""(?<!["'])\bDESIGN\b(?!["'])""")
#: A folder outside the tree: "../shared/", "shared/seeds/". A path that merely
#: ends in a folder called shared ("/shared/mfu_tracker_cache") is not one.
SHARED = re.compile(r"(?:\.\./|(?<![\w/.-]))shared/")
#: "issue 12", "Issue #12", "issues 22-28", "test_issue12_values", and "issue"
#: at a line's end with its number on the next.
ISSUE = re.compile(r"(?<![A-Za-z])issues?(?:[ \t_#-]|\n[ \t*#/]*)*\d+", re.IGNORECASE)
#: A bare "#12" (not "pytorch#12": a project's name joined to it) ...
HASH_NUMBER = re.compile(r"(?<![\w/)}])#\d+\b")
#: ... counts as ours unless the word before it names a project ("verl #1208").
NOT_A_PROJECT = {"", "pr", "prs", "pull", "see", "in", "and", "or", "of", "by", "from",
                 "the", "to", "for", "fix", "fixes", "fixed", "closes", "ticket", "bug",
                 "item", "also", "per", "after", "before", "since", "until"}


def _files() -> Iterator[Path]:
    for name in FILES:
        if (ROOT / name).is_file():
            yield ROOT / name
    for tree in TREES:
        for path in sorted((ROOT / tree).rglob("*")):
            if any(part in SKIP_DIRS for part in path.relative_to(ROOT).parts):
                continue
            if path.is_file() and (path.suffix in TEXT_SUFFIXES or path.name in TEXT_NAMES):
                yield path


def _hash_is_ours(line: str, match: re.Match) -> bool:
    before = line[:match.start()].rstrip()
    word = re.search(r"[\w.-]*$", before).group(0)  # type: ignore[union-attr]
    return before.endswith(("(", "[", ",", ";", ":")) or word.lower() in NOT_A_PROJECT


def citations(text: str) -> List[Tuple[int, str]]:
    """(line number, what it cites) for every outside citation in ``text``."""
    found = [(text.count("\n", 0, m.start()) + 1, " ".join(m.group(0).split()))
             for pattern in (DESIGN, SHARED, ISSUE) for m in pattern.finditer(text)]
    for number, line in enumerate(text.splitlines(), 1):
        found += [(number, m.group(0)) for m in HASH_NUMBER.finditer(line)
                  if _hash_is_ours(line, m)]
    return sorted(found)


def test_the_patterns_catch_citations_and_leave_upstream_references():
    cited = ("DESIGN.md §3", "(DESIGN §4: bad input)", "see ../shared/DESIGN.md",
             "documents in shared/seeds/", "(issue 28)", "Issue #12 item 1",
             "issues 22-28", "def test_issue12_values():", "fixed in #31", "(#28)",
             "PR #7", "Then (since issue\n22) a step", " * the rows of issue\n * 12")
    for line in cited:
        assert citations(line), line
    upstream = ("pytorch/pytorch#12345", "[pytorch#75807](https://github.com/...)",
                "verl #1208", "{lambda()#2}", "ProfilerStep#3", "MFU_TRACKER_CACHE_DIR=/shared/cache",
                'for word in ("issue", "DESIGN"):', "the tissue 3", "arXiv:2405.21060 §6",
                "an issue the docs name", "color #ff0000")
    for line in upstream:
        assert not citations(line), line


def test_no_file_cites_a_design_file_an_outside_folder_or_an_issue_number():
    offenders = []
    for path in _files():
        if path == Path(__file__).resolve():
            continue  # the patterns' own examples
        text = path.read_text(encoding="utf-8", errors="replace")
        offenders += [f"{path.relative_to(ROOT)}:{number}: {cited!r}"
                      for number, cited in citations(text)]
    assert not offenders, (
        "these lines cite something a reader of the repository cannot open "
        "(a design file, ../shared/, an issue number); cite the docs/ page "
        "that states the rule instead:\n" + "\n".join(offenders))
