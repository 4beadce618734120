"""The `hpn` command line: thin, it only turns flags into configs, calls the app and prints.

Computing commands are generated from the application layer's commands (:mod:`hpn.cli.gen`);
the run store, plots, dashboard and demo commands are small typer functions.
"""

from __future__ import annotations

import sys

import typer
from pydantic import ValidationError

from hpn.cli import dash, demo, gen, plot, runs, sweep
from hpn.config import one_line
from hpn.errors import InputError

app = typer.Typer(
    name="hpn",
    help="Alibaba HPN fabrics and the Aegaeon serving pool: build, route, simulate, size.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
GROUPS = {
    "topo": "Build fabrics: summary, export, import, bill of materials, pictures.",
    "route": "Routing as switches and hosts do it: paths, path selection, polarization.",
    "pool": "Serving pool (Aegaeon): simulate policies, goodput, capacity, replay.",
    "serve": "Real models behind the pool's policies: make models, profile, serve over HTTP.",
    "lab": "The fabric for real in Linux network namespaces: up, traffic, fail, down.",
}
_groups = {name: typer.Typer(help=text, no_args_is_help=True) for name, text in GROUPS.items()}


def _add_app_commands() -> None:
    from hpn.app import COMMANDS

    for name in COMMANDS:
        group, _, word = name.rpartition(" ")
        parent = _groups[group] if group else app
        gen.add(parent, COMMANDS.get(name), COMMANDS.summary(name), word)


_add_app_commands()
for _name, _sub in _groups.items():
    app.add_typer(_sub, name=_name)
app.add_typer(runs.app, name="runs")
_groups["pool"].command("policies")(gen.pool_policies)
app.command("demo")(demo.demo)
app.command("sweep")(sweep.sweep)
app.command("plot")(plot.plot)
app.command("dash")(dash.dash)


def _click():
    """The click typer runs on (typer may vendor its own copy)."""
    try:
        import typer._click as click  # type: ignore[import-not-found]
    except ImportError:
        import click
    return click


def usage_line(e) -> str:
    """A click usage error as one line: the command and what was wrong."""
    click = _click()
    msg = " ".join(e.format_message().split())
    ctx = getattr(e, "ctx", None)
    names = []
    while isinstance(e, click.exceptions.UsageError) and ctx is not None and ctx.parent:
        names.append(ctx.info_name)
        ctx = ctx.parent
    where = " ".join(reversed([n for n in names if n]))
    return f"{where}: {msg}" if where else msg


def main() -> None:
    """Entry point: bad input becomes one line on stderr and exit code 2."""
    click = _click()
    try:
        code = app(standalone_mode=False)
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
    except click.exceptions.NoArgsIsHelpError as e:  # `hpn`, `hpn pool`: the help
        e.show()
        sys.exit(e.exit_code)
    except click.exceptions.ClickException as e:  # a usage error: one line, like every bad input
        print(f"error: {usage_line(e)}", file=sys.stderr)
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    except ValidationError as e:
        print(f"error: {one_line(e)}", file=sys.stderr)
        sys.exit(2)
    except BrokenPipeError:
        sys.exit(0)
    except SystemError as e:  # Ctrl-C inside a compiled kernel surfaces as a SystemError
        if not _interrupted(e):
            raise
        print("interrupted", file=sys.stderr)
        sys.exit(130)


def _interrupted(e: BaseException | None) -> bool:
    """Whether a KeyboardInterrupt is in ``e``'s chain of causes."""
    seen = 0
    while e is not None and seen < 32:
        if isinstance(e, KeyboardInterrupt):
            return True
        e, seen = e.__cause__ or e.__context__, seen + 1
    return False
