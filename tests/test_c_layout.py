"""The C core's shape, checked: concept folders in one order, no upward
``#include``, no upward call, no call cycle between folders, and a cycle
inside a folder only among the files of one partition (files sharing a
private ``*_internal.h`` header, one concept split over files).

The folders of ``csrc/core``, lowest first (docs/architecture.md, "The C
core")::

    base -> peaks -> ops -> model -> device -> comm -> steps -> breakdown

with ``mfu_core.h`` on top, including every public header. A file may
include and call its own folder and the folders before it. Each folder is
an include directory of every build, so ``#include "x.h"`` names a header by
its file name: the scan below maps each name to its folder.

Calls are read by a plain scan: the functions each ``.c`` file defines (a
name and its parameter list at the start of a line, then a brace) and the
names it calls (a name followed by ``(``), comments and strings removed.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Dict, List, Set

import pytest
from test_layout import _cycles  # Tarjan's components, any sortable nodes

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "csrc" / "core"
FOLDERS = ("base", "peaks", "ops", "model", "device", "comm", "steps", "breakdown")
TOP = "mfu_core.h"

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
STRING = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'')
DEFINITION = re.compile(r"^[A-Za-z_][\w \t*]*?\b([A-Za-z_]\w*)\s*\([^;{}]*\)\s*\{", re.M)
CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")


def _files() -> List[Path]:
    return sorted(p for p in CORE.glob("*/*") if p.suffix in (".c", ".h"))


def _folder(path: Path) -> str:
    return path.relative_to(CORE).parts[0]


def _rank(path: Path) -> int:
    return FOLDERS.index(_folder(path))


def _code(path: Path) -> str:
    return STRING.sub('""', COMMENT.sub(" ", path.read_text()))


def _by_name() -> Dict[str, Path]:
    return {p.name: p for p in _files()}


def _calls() -> Dict[Path, Set[Path]]:
    """.c file -> the other .c files whose functions it calls."""
    sources = [p for p in _files() if p.suffix == ".c"]
    defined = {p: set(DEFINITION.findall(_code(p))) for p in sources}
    owner: Dict[str, Path] = {}
    for path, names in defined.items():
        for name in names:
            owner.setdefault(name, path)  # a static helper's name may repeat; the first wins
    graph: Dict[Path, Set[Path]] = {}
    for path in sources:
        called = set(CALL.findall(_code(path))) - defined[path]
        graph[path] = {owner[n] for n in called if n in owner and owner[n] != path}
    return graph


def _partition(path: Path) -> Set[str]:
    """The private ``*_internal.h`` headers a file includes."""
    return {n for n in INCLUDE.findall(path.read_text()) if n.endswith("_internal.h")}


def _rel(path: Path) -> str:
    return str(path.relative_to(CORE))


def test_every_core_file_sits_in_a_declared_folder():
    loose = sorted(p.name for p in CORE.iterdir() if p.is_file() and p.name != TOP)
    assert loose == [], f"files outside a concept folder: {loose}"
    folders = sorted(p.name for p in CORE.iterdir() if p.is_dir())
    assert folders == sorted(FOLDERS)
    assert not [p for p in CORE.glob("*/*/*")], "one level of folders"


def test_header_names_are_unique_across_folders():
    names = [p.name for p in _files()]
    assert len(names) == len(set(names)), sorted({n for n in names if names.count(n) > 1})


def test_no_include_of_a_higher_folder():
    headers = _by_name()
    wrong, unknown = [], []
    for path in _files():
        for name in INCLUDE.findall(path.read_text()):
            target = headers.get(Path(name).name)
            if target is None:
                unknown.append(f"{_rel(path)} -> {name}")
            elif _rank(target) > _rank(path):
                wrong.append(f"{_rel(path)} -> {_rel(target)}")
    assert not unknown, "includes of no core header:\n" + "\n".join(unknown)
    assert not wrong, "upward includes:\n" + "\n".join(sorted(wrong))


def test_the_top_header_lists_each_header_under_its_folder():
    """mfu_core.h's topics come under a heading per folder, in FOLDERS'
    order, and each header named under a heading lives in that folder (the
    list itself is test_core_header.py's)."""
    headers = _by_name()
    text = (CORE / TOP).read_text()
    topics = text[text.index("Topics"):text.index("Private to csrc/core")]
    headings = re.findall(r"^ \* ([a-z]+)/ ", topics, re.M)
    assert tuple(headings) == FOLDERS
    misplaced = []
    for folder, block in zip(headings, re.split(r"^ \* [a-z]+/ .*$", topics, flags=re.M)[1:]):
        for name in re.findall(r"^ \*\s+([a-z_]+\.h)\b", block, re.M):
            if _folder(headers[name]) != folder:
                misplaced.append(f"{name} listed under {folder}/, lives in {_folder(headers[name])}/")
    assert not misplaced, misplaced
    included = [headers[Path(n).name] for n in INCLUDE.findall(text)]
    assert [_rank(p) for p in included] == sorted(_rank(p) for p in included)


def test_no_call_into_a_higher_folder():
    wrong = [f"{_rel(a)} -> {_rel(b)}" for a, callees in _calls().items() for b in callees
             if _rank(b) > _rank(a)]
    assert not wrong, "upward calls:\n" + "\n".join(sorted(wrong))


def test_no_call_cycle_between_folders():
    graph = _calls()
    wrong = [sorted(map(_rel, c)) for c in _cycles(graph) if len({_folder(p) for p in c}) > 1]
    assert not wrong, f"call cycles across folders: {wrong}"


def test_a_cycle_inside_a_folder_is_one_partition():
    """Files that call each other share one private header (steps*.c over
    steps_internal.h); any other pair calling both ways is a lower piece
    to move down."""
    wrong = []
    for component in _cycles(_calls()):
        shared = set.intersection(*(_partition(p) for p in component))
        if not shared:
            wrong.append(sorted(map(_rel, component)))
    assert not wrong, f"call cycles outside a partition: {wrong}"


def test_the_scan_sees_the_core():
    """The regex scan reads real definitions and calls: a known edge of each
    kind is found (a scan that found nothing would pass every test above)."""
    graph = _calls()
    assert CORE / "peaks" / "gpu_lookup.c" in graph
    assert CORE / "peaks" / "gpu_table.c" in graph[CORE / "peaks" / "gpu_lookup.c"]
    assert CORE / "device" / "timing.c" in graph[CORE / "steps" / "steps.c"]
    assert sum(len(v) for v in graph.values()) > 40
    assert "timing.h" in INCLUDE.findall((CORE / "device" / "nvml.c").read_text())


def _fake_core(tmp_path: Path, files: Dict[str, str]) -> Path:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


def test_the_checks_fail_on_an_upward_include_and_a_cross_folder_cycle(tmp_path, monkeypatch):
    """The tests above, run on a made-up core with one wrong edge each."""
    fake = _fake_core(tmp_path, {
        "base/low.h": "int low(void);\n",
        "base/low.c": '#include "high.h"\nint low(void) { return high(); }\n',
        "steps/high.h": '#include "low.h"\nint high(void);\n',
        "steps/high.c": '#include "high.h"\nint high(void) { return low(); }\n',
    })
    monkeypatch.setattr(sys.modules[__name__], "CORE", fake)
    with pytest.raises(AssertionError, match="upward includes:\n.*base/low.c -> steps/high.h"):
        test_no_include_of_a_higher_folder()
    with pytest.raises(AssertionError, match="base/low.c -> steps/high.c"):
        test_no_call_into_a_higher_folder()
    with pytest.raises(AssertionError, match="across folders"):
        test_no_call_cycle_between_folders()
    with pytest.raises(AssertionError, match="outside a partition"):
        test_a_cycle_inside_a_folder_is_one_partition()


# ---- csrc/python: one table of registrations --------------------------------

PYTHON = ROOT / "csrc" / "python"
EXEC = re.compile(r"\b(mfu_py_\w+_exec)\s*\(")
EXEC_DEFINITION = re.compile(r"^int (mfu_py_\w+_exec)\(PyObject \*module\)\s*\{", re.M)


def _topic_table() -> List[str]:
    code = _code(PYTHON / "module.c")
    body = code[code.index("topic_execs[])"):]
    return re.findall(r"\b(\w+)\s*[,}]", body[body.index("{") + 1:body.index("};") + 1])


def test_every_exec_function_is_a_row_of_module_c_table_once():
    defined = {name: path.name for path in sorted(PYTHON.glob("*.c"))
               for name in EXEC_DEFINITION.findall(path.read_text())}
    rows = [r for r in _topic_table() if r.startswith("mfu_py_")]
    assert len(rows) == len(set(rows)), rows
    assert sorted(rows) == sorted(defined), set(rows) ^ set(defined)
    assert len(rows) > 15


def test_no_binding_file_registers_another_ones_functions():
    """Only module.c calls an exec function: none hides a registration of
    another file in a chain."""
    chained = []
    for path in sorted(PYTHON.glob("*.c")):
        if path.name != "module.c":
            code = _code(path)
            others = set(EXEC.findall(code)) - set(EXEC_DEFINITION.findall(code))
            chained += [f"{path.name} calls {name}" for name in sorted(others)]
    assert not chained, chained


def test_module_c_defines_only_the_module():
    """The helpers every file calls live in py_helpers.c: module.c's
    functions are static, except the module's init."""
    code = _code(PYTHON / "module.c")
    public = [n for n in DEFINITION.findall(code)
              if not re.search(rf"^static\b[^;{{]*\b{n}\s*\(", code, re.M)]
    assert public == ["PyInit__C"]
