"""The type stubs in mfu_tracker/_C.pyi describe the compiled module exactly."""
from __future__ import annotations

import ast
import inspect
from pathlib import Path

import mfu_tracker
from mfu_tracker import _C

STUB = Path(mfu_tracker.__file__).with_name("_C.pyi")


def _stub_tree() -> ast.Module:
    return ast.parse(STUB.read_text())


def _stub_functions() -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in _stub_tree().body if isinstance(n, ast.FunctionDef)}


def _stub_classes() -> dict[str, ast.ClassDef]:
    return {n.name: n for n in _stub_tree().body if isinstance(n, ast.ClassDef)}


def _public(names) -> set[str]:
    return {n for n in names if not n.startswith("_")}


def test_every_public_name_has_a_stub_and_back():
    stubbed = set(_stub_functions()) | set(_stub_classes())
    stubbed |= {t.id for n in _stub_tree().body if isinstance(n, ast.AnnAssign)
                for t in [n.target] if isinstance(t, ast.Name)}
    assert _public(dir(_C)) == _public(stubbed)


def test_function_parameters_match_text_signatures():
    for name, node in _stub_functions().items():
        func = getattr(_C, name)
        try:
            signature = inspect.signature(func)
        except ValueError:  # no __text_signature__: nothing to compare
            continue
        stub_params = [a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
        assert stub_params == list(signature.parameters), name


def test_class_attributes_match():
    for name, node in _stub_classes().items():
        cls = getattr(_C, name)
        stubbed = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
        stubbed |= {n.target.id for n in node.body if isinstance(n, ast.AnnAssign)}
        assert _public(stubbed) == _public(vars(cls)), name
