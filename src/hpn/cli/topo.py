"""`hpn topo ...`: build, summarize, export, import and price fabrics."""

import typer

app = typer.Typer(
    help="Build fabrics: summary, export, import, bill of materials.", no_args_is_help=True
)
