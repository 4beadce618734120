"""Results match their declared types, nested parts included; readers name declared fields.

Each command below runs through the CLI with ``--json``; its output must equal the golden
file under ``tests/golden/`` (made by the code before its nested parts were typed; timing
fields aside) and must fit the command's result class: every key of a ``TypedDict`` part
declared, every required one present, every value of its declared type. So a key renamed in
the code that builds a result fails here even where no type checker sees the builder. The
headline figures the run lists show (:data:`hpn.store.headline.HEADLINE`) must be dotted
paths the command's result declares, so a renamed field cannot silently drop out of them.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import json
import re
import sys
import types
import typing
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli

GOLDEN = Path(__file__).parent / "golden"
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
VOLATILE = re.compile(r'"(wall_s|build_s|peak_rss_mb)": [0-9.eE+-]+')

CASES = {  # golden file: (command line, result class)
    "route-paths": ("route paths --preset hpn --segments 2", "hpn.app.route:PathsResult"),
    "route-select": (
        "route select --preset hpn --segments 2 --src 0:0 --dst 200:3 --connections 4",
        "hpn.app.route:SelectResult",
    ),
    "train-four-jobs": (
        f"train {EXAMPLES}/train/four-allreduce-jobs.toml --segments 1",
        "hpn.app.train:TrainResult",
    ),
    "fail-crash": (
        f"fail {EXAMPLES}/failures/dp-step.toml --segments 1"
        " --fault link:host=1,nic=3,port=0,at=2s,repair=100s"
        " --fault link:host=1,nic=3,port=1,at=2s,repair=100s",
        "hpn.app.fail:FailResult",
    ),
    "reliability": (
        "reliability --trials 200 --months 2 --gpus 512 --price 2.5",
        "hpn.app.fail:ReliabilityResult",
    ),
    "pool-capacity": (
        f"pool capacity --mix {EXAMPLES}/pool/mix.toml --duration 2min",
        "hpn.app.pool:CapacityResult",
    ),
    "pool-policies": ("pool policies", "hpn.app.pool:PoliciesResult"),
}


def _namespace(module: types.ModuleType) -> dict[str, Any]:
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
        ns = _namespace(sys.modules[cls.__module__])
        return typing.get_type_hints(cls, globalns=ns, include_extras=True)
    out: dict[str, Any] = {}
    for klass in reversed(cls.__mro__[:-1]):  # not object
        ns = _namespace(sys.modules[klass.__module__])
        for name, ann in vars(klass).get("__annotations__", {}).items():
            out[name] = eval(ann, ns) if isinstance(ann, str) else ann
    return out


def _fields(cls: type) -> dict[str, tuple[Any, bool]]:
    """JSON key -> (type, required) of a result dataclass or a TypedDict."""
    hints = _hints(cls)
    if typing.is_typeddict(cls):
        out = {}
        for k, tp in hints.items():
            optional = typing.get_origin(tp) is typing.NotRequired
            out[k] = (typing.get_args(tp)[0] if optional else tp, not optional)
        return out
    return {
        f.metadata.get("key", f.name): (hints[f.name], not f.metadata.get("omit_if_none"))
        for f in dataclasses.fields(cls)
        if not f.metadata.get("detail")
    }


def _check(value: Any, tp: Any, path: str) -> None:
    """Fail unless ``value`` (a JSON value) fits the type ``tp``."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return
    if origin in (typing.Union, types.UnionType):
        errors = []
        for alt in args:
            try:
                _check(value, alt, path)
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
                _check(value[k], sub, f"{path}.{k}")
            else:
                assert not required, f"{path}: {tp.__name__} requires {k!r}"
    elif origin is list:
        assert isinstance(value, list), f"{path}: expected a list, got {value!r}"
        for i, v in enumerate(value):
            _check(v, args[0], f"{path}[{i}]")
    elif origin is dict:
        assert isinstance(value, dict), f"{path}: expected an object, got {value!r}"
        for k, v in value.items():
            _check(v, args[1], f"{path}.{k}")
    elif tp is float:
        assert isinstance(value, int | float) and not isinstance(value, bool), (path, value)
    elif tp in (int, str, bool):
        assert type(value) is tp, f"{path}: expected {tp.__name__}, got {value!r}"
    else:
        raise AssertionError(f"{path}: no check for type {tp}")


def _cls(target: str) -> type:
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_json_is_unchanged_and_fits_its_types(name):
    line, target = CASES[name]
    r = run_cli(*line.split(), "--json")
    assert r.code == 0, r.err
    assert VOLATILE.sub(r'"\1": 0', r.out) == (GOLDEN / f"{name}.json").read_text()
    _check(json.loads(r.out), _cls(target), name)


def test_the_check_catches_a_renamed_nested_key():
    from hpn.app.route import PathsResult

    good = json.loads((GOLDEN / "route-paths.json").read_text())
    _check(good, PathsResult, "ok")
    bad = json.loads(json.dumps(good).replace('"per_plane"', '"planes"'))
    with pytest.raises(AssertionError, match="not declared in PairPaths"):
        _check(bad, PathsResult, "renamed")


def _result_class(command: str) -> type:
    from hpn.app import COMMANDS

    service = COMMANDS.get(command).service
    ns = _namespace(sys.modules[service.__module__])
    outcome = typing.get_type_hints(service, globalns=ns)["return"]
    return typing.get_args(outcome)[0]


def _resolves(cls: Any, dotted: str) -> bool:
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
    return _resolves(sub, rest) if rest else True


def test_headline_figures_are_declared_result_fields():
    from hpn.store.headline import HEADLINE

    missing = [
        f"{command}: {key}"
        for command, keys in HEADLINE.items()
        for key in keys
        if not _resolves(_result_class(command), key)
    ]
    assert not missing, f"headline figures no result declares: {missing}"
