"""The `hpn` command line: thin, it only turns flags into configs, calls the app and prints.

Computing commands are generated from the application layer's commands (:mod:`hpn.cli.gen`);
the run store, plots, dashboard and demo commands are small typer functions.
"""

from __future__ import annotations

import sys
from functools import partial
from typing import Any

import typer

from hpn import startup
from hpn.cli import dash, demo, plot, reproduce, runs, sweep
from hpn.cli.lazy import Entry, HelpCommand, click, group
from hpn.errors import InputError, RunFailure, system_error

GROUPS = {
    "topo": "Build fabrics: summary, export, import, bill of materials, pictures.",
    "route": "Routing as switches and hosts do it: paths, path selection, polarization.",
    "pool": "Serving pool (Aegaeon): simulate policies, goodput, capacity, replay.",
    "serve": "Real models behind the pool's policies: make models, profile, serve over HTTP.",
    "lab": "The fabric for real in Linux network namespaces: up, traffic, fail, down.",
    "runs": runs.app.info.help,
}


def _one(fn: Any, name: str, summary: str = "") -> Any:
    """The click command of one function typer converts (on first use: see :mod:`.lazy`)."""
    one = typer.Typer(add_completion=False)
    one.command(name, help=summary or None, cls=HelpCommand)(fn)
    return typer.main.get_command(one)


def _app_command(name: str) -> Any:
    """The click command of the app command ``name``: from its kept flags while they are current
    (no config model imported), else from its config models (see :mod:`hpn.app.flagcache`)."""
    from hpn.app import flagcache
    from hpn.cli import gen

    one = typer.Typer(add_completion=False)
    gen.add(one, flagcache.get(name))
    return typer.main.get_command(one)


def _summary(fn: Any) -> str:
    return (fn.__doc__ or "").strip().split("\n")[0]


def _plugin_summary(name: str) -> str:
    """A plug-in command's summary (loading it: built-in ones are listed without loading)."""
    from hpn.app import COMMANDS

    try:
        return COMMANDS.get(name).summary
    except InputError as e:
        return f"(not loaded: {e.message})"


def _entries() -> dict[str, dict[str, Entry]]:
    """``{group: {word: Entry}}`` of every command, from summaries alone (nothing built)."""
    from hpn.app import COMMANDS

    out: dict[str, dict[str, Entry]] = {"": {}, **{g: {} for g in GROUPS}}
    for name in COMMANDS:
        parent, _, word = name.rpartition(" ")
        summary = COMMANDS.summary(name) or _plugin_summary(name)
        out.setdefault(parent, {})[word] = Entry(summary, partial(_app_command, name))
    for fn in (demo.demo, sweep.sweep, plot.plot, dash.dash, reproduce.reproduce):
        out[""][fn.__name__] = Entry(_summary(fn), partial(_one, fn, fn.__name__))
    for c in runs.app.registered_commands:  # built on first use too, like every command
        cb: Any = c.callback
        doc = " ".join((cb.__doc__ or "").split("\n\n")[0].split())
        out["runs"][c.name or cb.__name__] = Entry(doc, partial(_one, cb, c.name or cb.__name__))
    return out


_ENTRIES = _entries()
app = typer.Typer(
    name="hpn",
    help="Alibaba HPN fabrics and the Aegaeon serving pool: build, route, simulate, size.",
    cls=group(_ENTRIES[""]),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
for _name in [n for n in _ENTRIES if n]:  # a plug-in's group ("my cmd") is a group too
    _text = GROUPS.get(_name, "Plug-in commands.")
    _sub = typer.Typer(help=_text, no_args_is_help=True, cls=group(_ENTRIES[_name]))
    app.add_typer(_sub, name=_name)


def usage_line(e) -> str:
    """A click usage error as one line: the command and what was wrong."""
    msg = " ".join(e.format_message().split())
    ctx = getattr(e, "ctx", None)
    names = []
    while isinstance(e, click().exceptions.UsageError) and ctx is not None and ctx.parent:
        names.append(ctx.info_name)
        ctx = ctx.parent
    where = " ".join(reversed([n for n in names if n]))
    return f"{where}: {msg}" if where else msg


def main() -> None:
    """Entry point: bad input becomes one line on stderr and exit code 2."""
    with startup.held():  # no collector passes over the start-up's objects
        _main()


def _main() -> None:
    errors = click().exceptions
    try:
        from hpn.cli.labargs import rewrite

        code = app(args=rewrite(sys.argv[1:]), standalone_mode=False)
        if code == 130:  # typer turns Ctrl-C into Exit(130), returned when not standalone
            print("interrupted", file=sys.stderr)
            sys.exit(130)
        if isinstance(code, int) and code:
            sys.exit(code)
    except typer.Abort:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    except typer.Exit as e:  # --help, typer.Exit(code)
        sys.exit(e.exit_code)
    except errors.NoArgsIsHelpError as e:  # `hpn`, `hpn pool`: the help
        e.show()
        sys.exit(e.exit_code)
    except errors.ClickException as e:  # a usage error: one line, like every bad input
        print(f"error: {usage_line(e)}", file=sys.stderr)
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    except (InputError, OSError, MemoryError, RecursionError) as e:  # (the system's too)
        print(f"error: {system_error(e)}", file=sys.stderr)
        sys.exit(2)
    except RunFailure as e:  # a real system under the command failed: one line, exit 1
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
    except SystemError as e:  # Ctrl-C inside a compiled kernel surfaces as a SystemError
        if not _interrupted(e):
            raise
        print("interrupted", file=sys.stderr)
        sys.exit(130)

    except Exception as e:  # pydantic's ValidationError (pydantic imported only if used)
        pydantic = sys.modules.get("pydantic")
        if pydantic is None or not isinstance(e, pydantic.ValidationError):
            raise
        from hpn.config import one_line

        print(f"error: {one_line(e)}", file=sys.stderr)
        sys.exit(2)


def _interrupted(e: BaseException | None) -> bool:
    """Whether a KeyboardInterrupt is in ``e``'s chain of causes."""
    seen = 0
    while e is not None and seen < 32:
        if isinstance(e, KeyboardInterrupt):
            return True
        e, seen = e.__cause__ or e.__context__, seen + 1
    return False
