"""The type stubs in mfu_tracker/_C.pyi describe the compiled module exactly."""
from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import List, Optional, Tuple

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


#: (name, kind, default) of one parameter; default None = none, "..." = any.
Param = Tuple[str, str, Optional[str]]
_KINDS = {inspect.Parameter.POSITIONAL_ONLY: "positional-only",
          inspect.Parameter.POSITIONAL_OR_KEYWORD: "positional or keyword",
          inspect.Parameter.KEYWORD_ONLY: "keyword-only",
          inspect.Parameter.VAR_POSITIONAL: "*args", inspect.Parameter.VAR_KEYWORD: "**kwargs"}


def _stub_params(node: ast.FunctionDef) -> List[Param]:
    """The stub's parameters, in order, each with its kind and default's source."""
    args = node.args
    positional = ([(a, "positional-only") for a in args.posonlyargs]
                  + [(a, "positional or keyword") for a in args.args])
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    params = [(a.arg, kind, None if d is None else ast.unparse(d))
              for (a, kind), d in zip(positional, defaults)]
    if args.vararg:
        params.append((args.vararg.arg, "*args", None))
    params += [(a.arg, "keyword-only", None if d is None else ast.unparse(d))
               for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    if args.kwarg:
        params.append((args.kwarg.arg, "**kwargs", None))
    return params


def _real_params(signature: inspect.Signature) -> List[Param]:
    return [(p.name, _KINDS[p.kind], None if p.default is p.empty else repr(p.default))
            for p in signature.parameters.values()]


def _mismatch(stub: List[Param], real: List[Param]) -> Optional[str]:
    """Why the stub's parameters are not the extension's (None: they are)."""
    if [(n, k) for n, k, _ in stub] != [(n, k) for n, k, _ in real]:
        return f"stub {stub} != extension {real}"
    for (name, _, stub_default), (_, _, real_default) in zip(stub, real):
        if (stub_default is None) != (real_default is None):
            return f"{name}: stub default {stub_default}, extension {real_default}"
        if stub_default not in (None, "...", real_default):
            return f"{name}: stub default {stub_default}, extension {real_default}"
    return None


def test_the_comparison_sees_names_kinds_and_defaults():
    real = [("a", "positional-only", None), ("b", "keyword-only", "0")]
    assert _mismatch([("a", "positional-only", None), ("b", "keyword-only", "...")], real) is None
    assert _mismatch([("a", "positional-only", None), ("b", "keyword-only", "0")], real) is None
    assert _mismatch([("a", "positional or keyword", None), ("b", "keyword-only", "0")], real)
    assert _mismatch([("a", "positional-only", None), ("c", "keyword-only", "0")], real)
    assert _mismatch([("a", "positional-only", None), ("b", "keyword-only", None)], real)
    assert _mismatch([("a", "positional-only", None), ("b", "keyword-only", "1")], real)


def test_function_parameters_match_text_signatures():
    """Names, kinds and defaults: every module function has a text signature."""
    wrong = []
    for name, node in _stub_functions().items():
        real = _real_params(inspect.signature(getattr(_C, name)))
        why = _mismatch(_stub_params(node), real)
        if why:
            wrong.append(f"{name}: {why}")
    assert not wrong, "\n".join(wrong)


def test_method_parameters_match_text_signatures():
    """Each method's stub against its text signature (``$self`` first, as the
    extension must declare it for ``help()`` and ``inspect``); a class's
    ``__init__`` against the type's own text signature."""
    wrong, compared = [], 0
    for class_name, class_node in _stub_classes().items():
        cls = getattr(_C, class_name)
        for node in class_node.body:
            if not isinstance(node, ast.FunctionDef) or node.decorator_list:
                continue
            stub = _stub_params(node)
            where = f"{class_name}.{node.name}"
            if node.name == "__init__":
                if cls.__text_signature__ is None:
                    wrong.append(f"{where}: the type has no text signature")
                    continue
                real = _real_params(inspect.signature(cls))
            else:
                try:
                    real = _real_params(inspect.signature(getattr(cls, node.name)))
                except ValueError:  # a slot wrapper (__enter__, __exit__): no text signature
                    continue
                if not real or real[0][0] != "self":
                    wrong.append(f"{where}: its text signature does not start with $self")
                    continue
                real = real[1:]
            if not stub or stub[0][0] != "self":
                wrong.append(f"{where}: the stub does not start with self")
                continue
            why = _mismatch(stub[1:], real)
            if why:
                wrong.append(f"{where}: {why}")
            compared += 1
    assert compared >= 30, compared
    assert not wrong, "\n".join(wrong)


def test_properties_are_data_descriptors_and_methods_are_not():
    wrong = []
    for class_name, class_node in _stub_classes().items():
        cls = getattr(_C, class_name)
        for node in class_node.body:
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("__"):
                attr = inspect.getattr_static(cls, node.name, None)
                is_property = any(isinstance(d, ast.Name) and d.id == "property"
                                  for d in node.decorator_list)
                if attr is None:
                    wrong.append(f"{class_name}.{node.name}: not in the extension")
                elif is_property != inspect.isdatadescriptor(attr):
                    wrong.append(f"{class_name}.{node.name}: stub property={is_property}, "
                                 f"extension {type(attr).__name__}")
    assert not wrong, "\n".join(wrong)


def test_private_names_the_stub_declares_exist():
    """The stub's private names (the integrations' hooks) are the extension's
    too; its private module attributes are capsules for the C++ extension."""
    missing = [name for name in _stub_functions() if not hasattr(_C, name)]
    for class_name, class_node in _stub_classes().items():
        missing += [f"{class_name}.{n.name}" for n in class_node.body
                    if isinstance(n, ast.FunctionDef) and not hasattr(getattr(_C, class_name), n.name)]
    assert not missing
    undeclared = {n for n in dir(_C) if n.startswith("_") and not n.startswith("__")}
    assert {type(getattr(_C, n)).__name__ for n in undeclared} <= {"PyCapsule"}, undeclared


def test_constants_have_the_declared_types():
    declared = {n.target.id: ast.unparse(n.annotation) for n in _stub_tree().body
                if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
    assert len(declared) > 20
    # a generic annotation (tuple[StepField, ...]) names its container's type first
    wrong = {name: (kind, type(getattr(_C, name)).__name__) for name, kind in declared.items()
             if type(getattr(_C, name)).__name__ != kind.split("[", 1)[0]}
    assert not wrong, wrong


def test_class_attributes_match():
    for name, node in _stub_classes().items():
        cls = getattr(_C, name)
        stubbed = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
        stubbed |= {n.target.id for n in node.body if isinstance(n, ast.AnnAssign)}
        assert _public(stubbed) == _public(vars(cls)), name
