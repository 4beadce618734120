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


def main() -> None:
    """Entry point: bad input becomes one line on stderr and exit code 2."""
    try:
        app()
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    except ValidationError as e:
        print(f"error: {one_line(e)}", file=sys.stderr)
        sys.exit(2)
    except BrokenPipeError:
        sys.exit(0)
