"""Start-up and shape of the CLI: ``hpn --help`` lists every command from its summary alone,
``hpn CMD --help`` builds only that command, and neither imports the engine, numpy or a heavy
extra. (How fast that is, ``bench/bench_startup.py`` measures; no test here times anything.)
"""

from __future__ import annotations

import atexit
import gc
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
LIGHT = ("hpn.app.limits", "hpn.app.flags", "hpn.app.flagcache")
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


def probe(*argvs: list[str], warm: bool = True) -> list[dict]:
    """Run ``hpn ARGS`` for each argv in one fresh interpreter; each step's exit code, output
    and the modules imported so far. ``warm``: in a user cache that a first interpreter filled
    (the flags it derived), as every run after a user's first finds it."""
    import tempfile

    cache = tempfile.mkdtemp(prefix="hpn-cache-")
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "400", "XDG_CACHE_HOME": cache}
    for _ in range(2 if warm else 1):
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
    built = [m for m in top["modules"] if m.startswith("hpn.app.") and m not in LIGHT]
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
    assert "pydantic" not in steps[-1]["modules"], "a help page derived flags from the models"
    built = [m for m in steps[-1]["modules"] if m.startswith("hpn.app.") and m not in LIGHT]
    assert built == [], f"help pages imported command modules: {built}"


def test_help_of_commands_without_a_config_imports_no_pydantic():
    """typer builds a pydantic adapter for a group's ``--help`` left unset unless it defaults to
    False: ``hpn runs list --help`` and the like must not import pydantic for that."""
    steps = probe(*[[*n.split(), "--help"] for n in EXTRAS])
    assert all(step["code"] == 0 for step in steps)
    assert "pydantic" not in steps[-1]["modules"]


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
    """``src/hpn/cli/`` (flag plumbing and printing) is at most 1,140 lines (issue 14: 1,000;
    +50 for ``hpn reproduce``, hand-written as its optional positional argument is not a flag;
    +49 for ``labargs``, the ``lab exec NODE -- CMD`` argv form typer cannot declare; +11 for
    reproduce's executors and the one-line report of a failing real system; +6 for the parser
    that refuses an empty ``--out``, which typer would take as the working folder; +9 for building
    typer's pydantic adapter only for a value it cannot take directly, a start-up cost; +15 for
    drawing help text as written, which typer's renderer read as markup and emoji codes, and
    stating a default as written, which typer put in parentheses)."""
    lines = sum(len(p.read_text().splitlines()) for p in (SRC / "hpn" / "cli").glob("*.py"))
    assert lines <= 1140, f"src/hpn/cli/ has {lines} lines"


_FILES = """
import json, sys
from hpn.app.flagcache import _sources, flags_of
flags_of(sys.argv[1])
print(json.dumps(_sources()))
"""


def test_kept_flags_record_every_file_deriving_them_loads(tmp_path):
    """What deriving a command's flags loads (fresh interpreter) is among what its copy checks."""
    env = {**os.environ, "PYTHONPATH": str(SRC), "XDG_CACHE_HOME": str(tmp_path)}
    for name in ("train", "traffic", "pool simulate"):
        p = subprocess.run(
            [sys.executable, "-c", _FILES, name], capture_output=True, text=True, env=env
        )
        loaded = json.loads(p.stdout)
        assert "hpn:app/flags.py" in loaded and "pydantic:version.py" in loaded
        subprocess.run(
            [sys.executable, "-m", "hpn", *name.split(), "--help"],
            capture_output=True, env=env, check=True,
        )  # fmt: skip
        kept = next((tmp_path / "hpn" / "flags").glob(f"*/{name.replace(' ', '-')}.json"))
        files = json.loads(kept.read_text())["files"]
        assert loaded.items() <= files.items(), name


def test_stale_kept_flags_are_not_used(tmp_path, monkeypatch):
    """A changed source file or a missing copy: the flags come from the models again."""
    from hpn.app import flagcache

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    flagcache.get("traffic")
    flagcache.get("train")
    path = Path(flagcache.path_of("traffic"))
    data = json.loads(path.read_text())
    files = data["files"]
    files["hpn:app/traffic.py"] = files["hpn:app/traffic.py"].replace(":", ":1", 1)
    path.write_text(json.dumps(data))
    assert flagcache.cached("traffic") is None
    assert flagcache.cached("train") is not None
    Path(flagcache.path_of("train")).unlink()
    assert flagcache.cached("train") is None
    assert flagcache.get("traffic") == flagcache.flags_of("traffic")  # rewritten
    assert flagcache.cached("traffic") is not None


_RENDERER = """
import sys
import hpn.cli
assert "typer.rich_utils" not in sys.modules  # a command that runs draws no help
from hpn.cli.lazy import help_renderer
help_renderer()  # what hpn does before drawing help
assert "typer.rich_utils" in sys.modules
print("ok")
"""


def test_help_renderer_is_imported_only_to_draw_help():
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    p = subprocess.run(
        [sys.executable, "-c", _RENDERER], capture_output=True, text=True, env=env, check=True
    )
    assert p.stdout.strip() == "ok"


_EXIT = """
import atexit, gc, sys
# registered before main(), so it runs after main()'s exit handler (atexit runs last-in first)
atexit.register(lambda: print("frozen at exit:", gc.get_freeze_count() > 0, flush=True))
sys.argv = ["hpn", *sys.argv[1:]]
from hpn.cli import main
main()
"""


def test_exit_skips_the_collectors_passes_over_live_objects(tmp_path: Path):
    """``hpn`` freezes the collector's objects at exit (once), after its output is written."""
    env = {**os.environ, "PYTHONPATH": str(SRC), "HPN_RUNS_DIR": str(tmp_path / "runs")}
    for args in (["runs", "list", "--json"], ["traffic", "--preset", "nope"]):
        p = subprocess.run(
            [sys.executable, "-c", _EXIT, *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
        )
        assert p.stdout.rstrip().endswith("frozen at exit: True"), (p.stdout, p.stderr)
    from hpn import startup

    before = atexit._ncallbacks()
    with startup.held():
        pass
    with startup.held():
        pass
    assert atexit._ncallbacks() - before in (0, 1)  # once per process


def test_young_generation_threshold_is_raised_while_a_command_runs(monkeypatch):
    from hpn import cli, startup

    seen = []
    monkeypatch.setattr(cli, "_main", lambda: seen.append(gc.get_threshold()))
    before = gc.get_threshold()
    cli.main()
    assert seen == [(startup.YOUNG_OBJECTS, *before[1:])] and gc.get_threshold() == before


def test_the_collector_is_off_until_the_start_up_is_over_then_on_and_restored(monkeypatch):
    """Off while the command starts, frozen start-up objects and on once it runs (issue 26);
    in-process callers get the collector back as it was, nothing left frozen."""
    from hpn import cli, startup

    seen = []

    def command():
        seen.append((gc.isenabled(), gc.get_freeze_count()))
        garbage = []
        garbage.append(garbage)  # a cycle made during the start-up: frozen, not lost
        startup.over()
        seen.append((gc.isenabled(), gc.get_freeze_count() > 0))
        startup.over()  # a second call changes nothing
        seen.append((gc.isenabled(), gc.get_freeze_count() > 0))

    monkeypatch.setattr(cli, "_main", command)
    assert gc.isenabled() and gc.get_freeze_count() == 0
    cli.main()
    assert seen == [(False, 0), (True, True), (True, True)]
    assert gc.isenabled() and gc.get_freeze_count() == 0
    monkeypatch.setattr(cli, "_main", lambda: seen.append(gc.isenabled()))
    gc.disable()  # a caller that keeps the collector off keeps it off
    try:
        cli.main()
        assert seen[-1] is False and not gc.isenabled()
    finally:
        gc.enable()
