"""Whether a result's JSON fits its declared types (result dataclasses, nested TypedDicts).

``fits(value, cls, path)`` fails an assertion naming the first key or value that does not fit;
``declares(cls, "a.b")`` tells whether a dotted path is a declared field. Used by
``tests/test_result_types.py`` and the lab tests (whose results need a lab).
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import sys
import types
import typing
from pathlib import Path
from typing import Any


def namespace(module: types.ModuleType) -> dict[str, Any]:
    """The module's globals plus the names it imports only under ``if TYPE_CHECKING:``."""
    ns = dict(vars(module))
    tree = ast.parse(Path(module.__file__ or "").read_text())
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for imp in node.body:
                if isinstance(imp, ast.ImportFrom) and imp.module:
                    mod = importlib.import_module(imp.module)
                    ns |= {a.asname or a.name: getattr(mod, a.name) for a in imp.names}
    return ns


def _hints(cls: type) -> dict[str, Any]:
    """Annotations of ``cls`` evaluated (``NotRequired`` kept), each in its class's module."""
    if typing.is_typeddict(cls):
        ns = namespace(sys.modules[cls.__module__])
        return typing.get_type_hints(cls, globalns=ns, include_extras=True)
    out: dict[str, Any] = {}
    for klass in reversed(cls.__mro__[:-1]):  # not object
        ns = namespace(sys.modules[klass.__module__])
        for name, ann in vars(klass).get("__annotations__", {}).items():
            out[name] = eval(ann, ns) if isinstance(ann, str) else ann
    return out


def _fields(cls: type) -> dict[str, tuple[Any, bool]]:
    """JSON key -> (type, required) of a result dataclass or a TypedDict."""
    hints = _hints(cls)
    if typing.is_typeddict(cls):
        out = {}
        for k, tp in hints.items():
            marked = typing.get_origin(tp) is typing.NotRequired  # (3.11 keeps it required)
            required = k in cls.__required_keys__ and not marked  # type: ignore[attr-defined]
            out[k] = (typing.get_args(tp)[0] if marked else tp, required)
        return out
    return {
        f.metadata.get("key", f.name): (hints[f.name], not f.metadata.get("omit_if_none"))
        for f in dataclasses.fields(cls)
        if not f.metadata.get("detail")
    }


def fits(value: Any, tp: Any, path: str) -> None:
    """Fail unless ``value`` (a JSON value) fits the type ``tp``."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return
    if origin in (typing.Union, types.UnionType):
        errors = []
        for alt in args:
            try:
                fits(value, alt, path)
                return
            except AssertionError as e:
                errors.append(str(e))
        raise AssertionError(f"{path}: {value!r} fits none of {tp}: {errors}")
    if tp is type(None):
        assert value is None, f"{path}: expected None, got {value!r}"
    elif typing.is_typeddict(tp) or dataclasses.is_dataclass(tp):
        assert isinstance(value, dict), f"{path}: expected an object, got {value!r}"
        fields = _fields(tp)
        extra = set(value) - set(fields)
        assert not extra, f"{path}: keys {sorted(extra)} are not declared in {tp.__name__}"
        for k, (sub, required) in fields.items():
            if k in value:
                fits(value[k], sub, f"{path}.{k}")
            else:
                assert not required, f"{path}: {tp.__name__} requires {k!r}"
    elif origin is list:
        assert isinstance(value, list), f"{path}: expected a list, got {value!r}"
        for i, v in enumerate(value):
            fits(v, args[0], f"{path}[{i}]")
    elif origin is dict:
        assert isinstance(value, dict), f"{path}: expected an object, got {value!r}"
        for k, v in value.items():
            fits(v, args[1], f"{path}.{k}")
    elif tp is float:
        assert isinstance(value, int | float) and not isinstance(value, bool), (path, value)
    elif tp in (int, str, bool):
        assert type(value) is tp, f"{path}: expected {tp.__name__}, got {value!r}"
    else:
        raise AssertionError(f"{path}: no check for type {tp}")


def declares(cls: Any, dotted: str) -> bool:
    if typing.get_origin(cls) in (typing.Union, types.UnionType):  # a command with two results
        return any(declares(c, dotted) for c in typing.get_args(cls) if c is not type(None))
    head, _, rest = dotted.partition(".")
    if typing.get_origin(cls) is dict:  # any key (``fct_s.p99``)
        sub = typing.get_args(cls)[1]
    elif typing.is_typeddict(cls) or dataclasses.is_dataclass(cls):
        declared = _fields(cls)
        if head not in declared:
            return False
        sub = declared[head][0]
    else:
        return False
    if typing.get_origin(sub) in (typing.Union, types.UnionType):
        sub = next(a for a in typing.get_args(sub) if a is not type(None))
    return declares(sub, rest) if rest else True
