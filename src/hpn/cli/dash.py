"""`hpn dash`: the browser dashboard over the run store, on 127.0.0.1 by default."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def dash(
    host: Annotated[
        str, typer.Option(help="Address to bind (others can reach it unless loopback).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8765,
    data: Annotated[Path | None, typer.Option(help="Folder job configs may name files in.")] = None,
    allow_remote: Annotated[
        bool, typer.Option(help="Allow a non-loopback --host; requests then need a token.")
    ] = False,
) -> None:
    """Serve the dashboard: runs, plots, comparisons, the fabric explorer, new runs."""
    from hpn.web.listen import serve

    serve(host, port, data, allow_remote)
