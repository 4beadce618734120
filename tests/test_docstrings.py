"""Docstrings of the domain packages: present, numpydoc sections true to the signature, and
their examples run; public signatures annotated in full where the package is.

Public means a module-level function or class (and its methods and properties) whose name,
module path included, has no leading underscore. A method's docstring may be inherited from
the method it overrides (``inspect.getdoc``). Examples (``>>>``) run as doctests here, so a
wrong example fails the suite.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import pkgutil
import re
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

PACKAGES = ("hpn.topology", "hpn.routing", "hpn.engine", "hpn.pool")
# module-level public functions taking arguments must have a Parameters section
PARAMETERS_REQUIRED = PACKAGES
DOCTEST_MODULES = ("hpn.registry", "hpn.lazy", "hpn.jit")  # outside the packages, with examples
# public functions and methods annotated in full (every argument and the return)
FULLY_TYPED = PACKAGES

_SECTION = re.compile(r"^(\w[\w ]*)\n-{3,}$", re.M)


def _modules(pkg: str) -> list[str]:
    root = importlib.import_module(pkg)
    names = [pkg] + [m.name for m in pkgutil.walk_packages(root.__path__, pkg + ".")]
    return [n for n in names if not any(p.startswith("_") for p in n.split("."))]


def _public(mod: ModuleType) -> Iterator[tuple[str, Any, bool]]:
    """(qualified name, object, module-level) of the public functions, classes, methods."""
    for name, obj in vars(mod).items():
        if name.startswith("_") or getattr(obj, "__module__", None) != mod.__name__:
            continue
        if inspect.isfunction(obj):
            yield f"{mod.__name__}.{name}", obj, True
        elif inspect.isclass(obj):
            yield f"{mod.__name__}.{name}", obj, True
            for attr, raw in vars(obj).items():
                if attr.startswith("_"):
                    continue
                func = raw.fget if isinstance(raw, property) else getattr(raw, "__func__", raw)
                if inspect.isfunction(func):
                    member = raw if isinstance(raw, property) else getattr(obj, attr)
                    yield f"{mod.__name__}.{name}.{attr}", member, False


def _parameters(doc: str) -> list[str] | None:
    """Names in the docstring's Parameters section (None: no such section)."""
    heads = list(_SECTION.finditer(doc))
    for i, h in enumerate(heads):
        if h.group(1) == "Parameters":
            end = heads[i + 1].start() if i + 1 < len(heads) else len(doc)
            names = []
            for line in doc[h.end() : end].splitlines():
                if line and not line[0].isspace():
                    entry = line.split(" : ")[0]
                    names += [n.strip().lstrip("*") for n in entry.split(",")]
            return names
    return None


def _signature_names(obj: Any) -> list[str] | None:
    try:
        sig = inspect.signature(obj.fget if isinstance(obj, property) else obj)
    except (TypeError, ValueError):
        return None
    names = list(sig.parameters)
    return names[1:] if names[:1] == ["self"] else names  # classmethods come bound


_ALL = [(pkg, m) for pkg in PACKAGES for m in _modules(pkg)]


@pytest.mark.parametrize("pkg", PACKAGES)
def test_every_public_function_and_class_has_a_docstring(pkg):
    missing = [
        q
        for m in _modules(pkg)
        for q, obj, _ in _public(importlib.import_module(m))
        if not inspect.getdoc(obj)
    ]
    assert missing == [], f"{len(missing)} without a docstring"


@pytest.mark.parametrize("pkg", PARAMETERS_REQUIRED)
def test_functions_with_arguments_document_them(pkg):
    lacking = []
    for m in _modules(pkg):
        for q, obj, top in _public(importlib.import_module(m)):
            takes_arguments = top and inspect.isfunction(obj) and _signature_names(obj)
            if takes_arguments and _parameters(inspect.getdoc(obj) or "") is None:
                lacking.append(q)
    assert lacking == [], f"{len(lacking)} functions without a Parameters section"


@pytest.mark.parametrize("pkg", PACKAGES)
def test_parameters_sections_name_the_signature(pkg):
    """A Parameters section lists every argument, in order, and nothing else."""
    wrong = []
    for m in _modules(pkg):
        for q, obj, _ in _public(importlib.import_module(m)):
            documented = _parameters(inspect.getdoc(obj) or "")
            if documented is None:
                continue
            actual = _signature_names(obj)
            if actual is not None and documented != actual:
                wrong.append(f"{q}: documents {documented}, takes {actual}")
    assert wrong == []


@pytest.mark.parametrize("pkg", FULLY_TYPED)
def test_public_signatures_are_annotated(pkg):
    untyped = []
    for m in _modules(pkg):
        for q, obj, _ in _public(importlib.import_module(m)):
            func = obj.fget if isinstance(obj, property) else obj
            if not inspect.isfunction(func) or func.__name__ == "__init__":
                continue
            sig = inspect.signature(func)
            params = list(sig.parameters.values())
            if params and params[0].name == "self":
                params = params[1:]
            missing = [p.name for p in params if p.annotation is inspect.Parameter.empty]
            if sig.return_annotation is inspect.Signature.empty:
                missing.append("return")
            if missing:
                untyped.append(f"{q}: {missing}")
    assert untyped == []


def test_the_section_parser():
    doc = "Sum.\n\nParameters\n----------\na, b\n    Terms.\n*rest : float\n    More.\n\n"
    doc += "Returns\n-------\nfloat\n    The sum."
    assert _parameters(doc) == ["a", "b", "rest"]
    assert _parameters("No sections.") is None


@pytest.mark.parametrize(
    "module", [m for _, m in _ALL] + list(DOCTEST_MODULES), ids=lambda m: m.removeprefix("hpn.")
)
def test_examples_run(module):
    mod = importlib.import_module(module)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in doctest.DocTestFinder().find(mod, module):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed"
