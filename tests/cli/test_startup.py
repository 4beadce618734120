"""Start-up and shape of the CLI: ``hpn --help`` lists every command from its summary alone,
``hpn CMD --help`` builds only that command, and neither imports the engine, numpy or a heavy
extra. (How fast that is, ``bench/bench_startup.py`` measures; no test here times anything.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import typer.main

from hpn.app import COMMANDS
from hpn.cli import GROUPS, app
from hpn.cli.lazy import Entry

SRC = Path(__file__).resolve().parents[2] / "src"
HEAVY = (
    "numpy",
    "scipy",
    "pandas",
    "pyarrow",
    "plotly",
    "matplotlib",
    "networkx",
    "torch",
    "transformers",
    "duckdb",
    "fastapi",
    "uvicorn",
    "dask",
    "hpn.engine.sim",
    "hpn.topology.fabric",
    "hpn.pool.simulate",
    "hpn.store.run",
)
EXTRAS = ["runs list", "runs show", "sweep", "plot", "dash", "demo"]

_PROBE = """
import contextlib, io, json, sys
from hpn.cli import main
out = []
for args in json.loads(sys.argv[1]):
    sys.argv = ["hpn", *args]
    buf = io.StringIO()
    code = 0
    with contextlib.redirect_stdout(buf):
        try:
            main()
        except SystemExit as e:
            code = e.code
    out.append({"args": args, "code": code, "text": buf.getvalue(), "modules": list(sys.modules)})
print(json.dumps(out))
"""


def probe(*argvs: list[str]) -> list[dict]:
    """Run ``hpn ARGS`` for each argv in one fresh interpreter; each step's exit code, output
    and the modules imported so far."""
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "400"}
    p = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(argvs)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=True,
    )
    return json.loads(p.stdout)


def heavy(modules: list[str]) -> list[str]:
    return sorted(m for m in modules if m in HEAVY or m.split(".")[0] in HEAVY)


def _rows(text: str) -> list[str]:
    """The lines of a help page without the panels' borders."""
    return [ln.strip("│ ") for ln in text.splitlines()]


def test_top_help_lists_every_command_without_importing_any():
    top, *groups = probe(["--help"], *[[g, "--help"] for g in GROUPS])
    assert top["code"] == 0
    assert heavy(top["modules"]) == []
    assert "pydantic" not in top["modules"]
    built = [m for m in top["modules"] if m.startswith("hpn.app.") and m != "hpn.app.limits"]
    assert built == [], f"hpn --help imported command modules: {built}"
    pages = {"": top["text"]} | {g: r["text"] for g, r in zip(GROUPS, groups, strict=True)}
    for name in COMMANDS:
        group, _, word = name.rpartition(" ")
        line = next((ln for ln in _rows(pages[group]) if ln.startswith(f"{word} ")), "")
        assert COMMANDS.summary(name) in line, (name, line)
    for name, text in GROUPS.items():
        assert any(ln.startswith(f"{name} ") and text in ln for ln in _rows(top["text"])), name


def test_every_command_help_works_and_imports_no_engine():
    names = [*COMMANDS, *EXTRAS]
    steps = probe(*[[*n.split(), "--help"] for n in names])
    for name, step in zip(names, steps, strict=True):
        assert step["code"] == 0, (name, step["text"][-300:])
        assert "Usage:" in step["text"], name
    assert heavy(steps[-1]["modules"]) == [], "some CMD --help imported heavy modules"


def _groups():
    root = typer.main.get_command(app)
    yield "", root
    for name in root.list_commands(None):
        sub = root.lazy.peek(name)
        if hasattr(sub, "lazy"):
            yield name, sub


def test_listed_summary_is_the_built_commands_help():
    """A summary shown without building the command says what the built command says."""
    seen = set()
    for gname, group in _groups():
        for name in group.list_commands(None):
            entry = group.lazy.peek(name)
            if not isinstance(entry, Entry):
                continue
            built = group.commands[name]
            assert built.name == name
            assert (built.help or "").strip().split("\n")[0] == entry.summary, (gname, name)
            seen.add(f"{gname} {name}".strip())
    assert set(COMMANDS) <= seen


def test_cli_package_stays_thin():
    """``src/hpn/cli/`` (flag plumbing and printing) is at most 1,000 lines (issue 14)."""
    lines = sum(len(p.read_text().splitlines()) for p in (SRC / "hpn" / "cli").glob("*.py"))
    assert lines <= 1000, f"src/hpn/cli/ has {lines} lines"
