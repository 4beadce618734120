"""The `hpn` command line: thin, it only parses and calls the layers.

Each command family lives in its own module and is registered here.
"""

from __future__ import annotations

import sys

import typer
from pydantic import ValidationError

from hpn.cli import collective, dash, demo, plot, pool, route, runs, sweep, topo, traffic, train
from hpn.cli import fail as fail_cli
from hpn.config import one_line
from hpn.errors import InputError

app = typer.Typer(
    name="hpn",
    help="Alibaba HPN fabrics and the Aegaeon serving pool: build, route, simulate, size.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(topo.app, name="topo")
app.add_typer(pool.app, name="pool")
app.add_typer(route.app, name="route")
app.add_typer(runs.app, name="runs")
app.command("demo")(demo.demo)
app.command("traffic")(traffic.traffic)
app.command("collective")(collective.collective)
app.command("train")(train.train)
app.command("fail")(fail_cli.fail)
app.command("reliability")(fail_cli.reliability)
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
