"""The layer order, checked over the whole import graph (every import, also inside functions).

units/errors < config < topology < routing < engine < workload < failures; pool beside them
(it needs only config); serve and lab above the domain; store < app (one service per command)
< plots < report, sweep < web, demo (they run commands through app); cli on top. A package
may import only packages of a lower layer (the base layer's modules may import each other); no
module may take part in an import cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

LAYERS: dict[str, float] = {
    "hpn": 0,
    "hpn.errors": 0,
    "hpn.units": 0,
    "hpn.registry": 0,
    "hpn.lazy": 0,
    "hpn.startup": 0,
    "hpn.jit": 0,
    "hpn.jitnotice": 0,
    "hpn.result": 0,
    "hpn.gpus": 0,
    "hpn.config": 1,
    "hpn.topology": 2,
    "hpn.pool": 2,
    "hpn.routing": 3,
    "hpn.engine": 4,
    "hpn.workload": 5,
    "hpn.failures": 6,
    "hpn.serve": 7,
    "hpn.lab": 7,
    "hpn.store": 8,
    "hpn.reproduce": 8.25,
    "hpn.app": 8.5,
    "hpn.plots": 9,
    "hpn.report": 10,
    "hpn.sweep": 10,
    "hpn.web": 11,
    "hpn.demo": 12,
    "hpn.cli": 13,
    "hpn.reference": 14,
    "hpn.__main__": 14,
}
BASE = 0


def _module(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path, module: str, modules: set[str]) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "hpn"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            if name.split(".")[0] != "hpn":
                continue
            # ``from hpn.store import record`` imports the module hpn.store.record
            subs = {f"{name}.{a.name}" for a in node.names} & modules
            out |= subs
            if len(subs) < len(node.names):
                out.add(name)
    return out


def _graph() -> dict[str, set[str]]:
    files = {_module(p): p for p in (SRC / "hpn").rglob("*.py")}
    graph = {}
    for mod, path in files.items():
        deps = _imports(path, mod, set(files))
        graph[mod] = {m for m in deps if m in files and m != mod}
    return graph


def _layer(module: str) -> tuple[str, float]:
    parts = module.split(".")
    for n in (2, 1):
        key = ".".join(parts[:n])
        if key in LAYERS:
            return key, LAYERS[key]
    raise AssertionError(f"{module} is in no layer: add its package to LAYERS")


def test_every_package_has_a_layer():
    for mod in _graph():
        _layer(mod)


def test_no_upward_or_sideways_import():
    bad = []
    for mod, deps in _graph().items():
        pkg, rank = _layer(mod)
        for dep in deps:
            dpkg, drank = _layer(dep)
            if dpkg == pkg or (rank == drank == BASE) or drank < rank:
                continue
            bad.append(f"{mod} -> {dep}")
    assert not bad, "imports against the layer order:\n" + "\n".join(sorted(bad))


def test_no_import_cycles():
    graph = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_nothing_outside_cli_names_the_cli():
    hits = []
    for path in (SRC / "hpn").rglob("*.py"):
        mod = _module(path)
        if mod.startswith(("hpn.cli", "hpn.__main__", "hpn.reference")):
            continue
        if "hpn.cli" in path.read_text():
            hits.append(mod)
    assert not hits, f"modules naming hpn.cli: {hits}"
