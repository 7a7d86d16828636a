"""The package's shape, checked: layers by concept, no upward import, no
import cycle (imports inside functions included), short functions, and every
documented import path still working.

The layers, in the order the data flows (README, "Architecture")::

    foundation (_native: _C and _torch; _version, _validate, _dtypes, _install, _aliases)
      -> peaks -> flops -> timing -> device -> breakdown -> distributed -> job -> tracker
      -> integrations -> agent -> cli

A module may import the foundation, its own subpackage and the layers below
its own; the foundation imports only itself. The public face (the package
``__init__`` and ``__main__``) re-exports and may import anything, and no
module imports from the package root: not even ``_C`` is reached through it.
The documented compatibility paths (``gpu``, ``counter``, ``utilization``,
``optim``, ``presets``, ``step``) are rows of one table, ``_aliases.ALIASES``.
"""
from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Set, Tuple

import pytest

import mfu_tracker

PACKAGE = Path(mfu_tracker.__file__).resolve().parent
LAYERS = ("peaks", "flops", "timing", "device", "breakdown", "distributed", "job", "tracker",
          "integrations", "agent", "cli")
FOUNDATION = {"_C", "_torch", "_native", "_version", "_validate", "_dtypes", "_install", "_aliases",
              "_checkout"}
FACE = {"", "__main__"}
MAX_FUNCTION_LINES = 80


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> Dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(module: str, is_package: bool, level: int, name: str) -> str:
    base = module.split(".") if module else []
    if not is_package:
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, *([name] if name else [])])


def _imports(modules: Dict[str, Path]) -> Dict[str, Set[str]]:
    """module -> the package modules it imports, anywhere in its body."""
    graph: Dict[str, Set[str]] = {}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        targets: Set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level == 0:
                    if not (node.module or "").startswith("mfu_tracker"):
                        continue
                    base = (node.module or "")[len("mfu_tracker"):].lstrip(".")
                else:
                    base = _resolve(name, is_package, node.level, node.module or "")
                for alias in node.names:
                    sub = f"{base}.{alias.name}" if base else alias.name
                    targets.add(sub if sub in modules or sub in FOUNDATION else base)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("mfu_tracker"):
                        targets.add(alias.name[len("mfu_tracker"):].lstrip("."))
        targets.discard(name)
        graph[name] = targets
    return graph


def _layer(module: str) -> Tuple[str, int]:
    head = module.split(".")[0]
    if module in FACE:
        return "face", len(LAYERS)
    if head in FOUNDATION:
        return "foundation", -1
    return head, LAYERS.index(head)


GRAPH = _imports(_modules())


def test_every_module_sits_in_a_layer():
    heads = {m.split(".")[0] for m in GRAPH if m not in FACE}
    assert heads <= set(LAYERS) | FOUNDATION, heads - set(LAYERS) - FOUNDATION


def test_no_upward_import_between_layers():
    wrong: List[str] = []
    for module, targets in GRAPH.items():
        kind, level = _layer(module)
        if kind == "face":
            continue
        for target in targets:
            t_kind, t_level = _layer(target)
            if t_kind == "face" or t_level > level:
                wrong.append(f"{module} -> {target}")
    assert not wrong, "upward imports:\n" + "\n".join(sorted(wrong))


def _cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in graph:
                continue
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle_even_inside_functions():
    # A package's __init__ re-exporting its modules is not a cycle unless a
    # module imports the __init__ back; such an edge is reported here.
    assert _cycles(GRAPH) == []


def test_the_cycle_finder_finds_a_planted_cycle():
    planted = {name: set(targets) for name, targets in GRAPH.items()}
    planted["_validate"].add("peaks._table")   # a cycle the layers once had
    assert ["_validate", "peaks._table"] in _cycles(planted)


def test_each_subpackage_says_what_it_owns_and_may_import():
    for layer in LAYERS:
        doc = importlib.import_module(f"mfu_tracker.{layer}").__doc__ or ""
        assert "Owns" in doc and ("May import" in doc or "none imports it" in doc), layer


def _layer_doc(layer: str) -> str:
    return " ".join((importlib.import_module(f"mfu_tracker.{layer}").__doc__ or "").split())


@pytest.mark.parametrize("layer", LAYERS)
def test_each_layer_docstring_names_its_place_in_the_order(layer):
    doc = _layer_doc(layer)
    assert f"Layer {LAYERS.index(layer) + 1}" in doc, layer
    assert f"({' -> '.join(LAYERS)})" in doc, layer


@pytest.mark.parametrize("layer", LAYERS)
def test_each_layer_docstring_names_only_its_own_modules(layer):
    named = re.findall(r":mod:`\.([\w.]+)`", _layer_doc(layer))
    assert [n for n in named if f"{layer}.{n}" not in GRAPH] == [], layer


@pytest.mark.parametrize("layer", LAYERS)
def test_each_layer_imports_only_the_layers_its_docstring_allows(layer):
    """A layer that lists what it may import (rather than "every layer
    below") imports nothing else: its docstring is the truth."""
    doc = _layer_doc(layer)
    allowed_text = doc.split("May import", 1)[1]
    if "every layer" in allowed_text.split(".")[0]:
        pytest.skip("may import every layer below it")
    allowed = {name.split(".")[0] for name in re.findall(r"``([\w.]+)``", allowed_text)}
    allowed = (allowed & set(LAYERS)) | {layer, "foundation"}
    reached = {f"{module} -> {target}" for module, targets in GRAPH.items()
               if module.split(".")[0] == layer for target in targets
               if _layer(target)[0] not in allowed}
    assert reached == set(), f"{layer} imports beyond its docstring's 'May import'"


def _long_functions(paths: List[Path], limit: int) -> List[str]:
    out = []
    for path in paths:
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            body = node.body
            if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)):
                body = body[1:]
            if body and node.end_lineno - body[0].lineno + 1 > limit:
                out.append(f"{path}:{node.lineno} {node.name}: {node.end_lineno - body[0].lineno + 1}")
    return out


def test_no_python_function_over_80_lines():
    root = PACKAGE.parent
    paths = [p for d in ("mfu_tracker", "examples", "benchmarks") for p in (root / d).rglob("*.py")]
    assert _long_functions(paths, MAX_FUNCTION_LINES) == []


def test_no_c_function_over_80_lines():
    ctags = subprocess.run(["which", "ctags"], capture_output=True, text=True).stdout.strip()
    if not ctags:
        pytest.skip("needs Universal Ctags")
    root = PACKAGE.parent
    out = subprocess.run([ctags, "--fields=+ne", "--c-kinds=f", "--c++-kinds=f", "-R", "-f", "-",
                          "csrc", "mfu_tracker/cli/doctor/cuda_sync_counter.c"], capture_output=True, text=True, cwd=root)
    long = []
    for row in out.stdout.splitlines():
        fields = row.split("\t")
        extras = dict(f.split(":", 1) for f in fields[3:] if ":" in f)
        if "line" in extras and "end" in extras:
            # the body between the braces: end - line - 1 lines, at most
            lines = int(extras["end"]) - int(extras["line"]) - 1
            if lines > MAX_FUNCTION_LINES:
                long.append(f"{fields[1]}:{extras['line']} {fields[0]}: {lines}")
    assert long == []


DOCUMENTED_PATHS = (
    ("mfu_tracker", "track"), ("mfu_tracker", "Tracker"), ("mfu_tracker", "FlopCounter"),
    ("mfu_tracker.flops", "transformer_flops"), ("mfu_tracker.flops", "flash_attn_flops"),
    ("mfu_tracker.gpu", "lookup_gpu_spec"), ("mfu_tracker.gpu", "GPUSpec"),
    ("mfu_tracker.counter", "FlopCounter"), ("mfu_tracker.counter", "counter_backend"),
    ("mfu_tracker.tracker", "Tracker"), ("mfu_tracker.step", "Tracker"),
    ("mfu_tracker.optim", "MFUOptimizerWrapper"), ("mfu_tracker.utilization", "track"),
    ("mfu_tracker.utilization", "compute_mfu"), ("mfu_tracker.distributed", "RankFigures"),
    ("mfu_tracker.distributed", "DistributedFigures"), ("mfu_tracker.distributed", "combine"),
    ("mfu_tracker.presets", "load_preset"), ("mfu_tracker.cli", "main"),
    ("mfu_tracker.integrations", "MFUCallback"),
    ("mfu_tracker.integrations.hf_trainer", "MFUCallback"),
    ("mfu_tracker.integrations.lightning", "MFUCallback"),
    ("mfu_tracker.integrations.fabric", "fabric_tracker"),
)


@pytest.mark.parametrize("module, name", DOCUMENTED_PATHS)
def test_documented_import_paths_work(module, name):
    """Each documented path gives the very object the package exports."""
    obj = getattr(importlib.import_module(module), name)
    top = getattr(mfu_tracker, name, None)
    if top is not None:
        assert obj is top


def _root_imports(path: Path, module: str) -> List[str]:
    """The lines of ``path`` that import from the package root itself
    (``from .. import x`` reaching ``mfu_tracker/__init__``, ``from mfu_tracker
    import x``, ``import mfu_tracker``), as opposed to one of its modules."""
    is_package = path.name == "__init__.py"
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = (node.module or "") if node.level == 0 else \
                "mfu_tracker." + _resolve(module, is_package, node.level, node.module or "")
            if base.rstrip(".") == "mfu_tracker":
                found.append(f"{module}:{node.lineno}")
        elif isinstance(node, ast.Import):
            found += [f"{module}:{node.lineno}" for a in node.names if a.name == "mfu_tracker"]
    return found


def test_no_module_imports_from_the_package_root():
    """The root is the façade only: importing a layer never runs it first by
    design, and the layers reach the C core through ``_native``."""
    wrong = [line for name, path in _modules().items() if name not in FACE
             for line in _root_imports(path, name)]
    assert wrong == []


def test_root_import_check_sees_a_root_import(tmp_path):
    # the check above is not vacuous: each spelling of a root import is caught
    for text in ("from .. import _C\n", "from mfu_tracker import Tracker\n", "import mfu_tracker\n"):
        path = tmp_path / "m.py"
        path.write_text(text)
        assert _root_imports(path, "timing._m"), text
    path.write_text("from .._native import _C\nimport mfu_tracker._C\n")
    assert _root_imports(path, "timing._m") == []


def test_every_alias_is_the_module_it_names():
    """Each row of the one alias table imports, by both spellings, as the very
    module that owns the code, and its names are that module's objects."""
    from mfu_tracker._aliases import ALIASES

    assert set(ALIASES) == {"gpu", "counter", "utilization", "optim", "presets", "step"}
    for alias, target in ALIASES.items():
        face = importlib.import_module(f"mfu_tracker.{alias}")
        assert face is importlib.import_module(f"mfu_tracker.{target}"), alias
        assert getattr(mfu_tracker, alias) is face
        assert all(getattr(face, n) is getattr(mfu_tracker, n, getattr(face, n)) for n in face.__all__)
    # and none of them is a file of its own any more: the table is the one declaration
    assert not [a for a in ALIASES if (PACKAGE / f"{a}.py").exists()]


def test_aliases_resolve_in_a_fresh_interpreter():
    """``from mfu_tracker.gpu import ...`` as a user's first import, without
    ``import mfu_tracker`` before it; and the package alone imports no torch."""
    code = ("import sys\n"
            "from mfu_tracker.gpu import lookup_gpu_spec\n"
            "from mfu_tracker.step import Tracker\n"
            "import mfu_tracker.utilization as u\n"
            "assert u.track is __import__('mfu_tracker').track\n"
            "assert 'torch' not in sys.modules, 'torch imported'\n"
            "from mfu_tracker.optim import MFUOptimizerWrapper, StepResult\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_compatibility_modules_list_the_same_names():
    for module, source in (("gpu", "peaks"), ("counter", "flops.counter"),
                           ("utilization", "timing"), ("presets", "flops.presets")):
        face = importlib.import_module(f"mfu_tracker.{module}")
        impl = importlib.import_module(f"mfu_tracker.{source}")
        assert face.__all__ == impl.__all__
        assert all(getattr(face, n) is getattr(impl, n) for n in face.__all__)


def test_python_m_mfu_tracker_runs_the_cli():
    done = subprocess.run([sys.executable, "-m", "mfu_tracker", "--help"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and "estimate" in done.stdout


def test_the_counter_and_the_comm_observer_share_the_loader_not_each_other():
    """The C++ observer's loader is the foundation's (``_native._observer``):
    the FLOP counter and the communication observer both use it, neither
    imports the other (nor does the tracker reach the observer through the
    counter)."""
    counter = {m for m in GRAPH if m.startswith("flops.counter")}
    comm = {m for m in GRAPH if m.startswith("distributed._comm")}
    assert all(not (GRAPH[m] & counter) for m in comm), {m: GRAPH[m] & counter for m in comm}
    assert all(not any(t.startswith("distributed") for t in GRAPH[m]) for m in counter)
    assert "_native._observer" in GRAPH["distributed._comm_observer"]
    assert "_native._observer" in GRAPH["flops.counter._backend"]
    assert not (GRAPH["tracker._tracker"] & counter)

