"""`hpn dash`: the browser dashboard over the run store, on 127.0.0.1 by default."""

from __future__ import annotations

from typing import Annotated

import typer


def dash(
    host: Annotated[
        str, typer.Option(help="Address to bind (others can reach it unless local).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8765,
) -> None:
    """Serve the dashboard: runs, plots, comparisons, the fabric explorer, new runs."""
    from hpn.errors import InputError

    if not 0 < port < 65536:
        raise InputError("--port", f"must be in 1..65535, got {port}")
    try:
        import uvicorn

        from hpn.web import create_app
    except ImportError:
        raise InputError("dash", "needs the web extra: pip install 'hpn[web]'") from None
    from hpn.cli.output import stderr
    from hpn.store import runs_root

    if host not in ("127.0.0.1", "localhost", "::1"):
        stderr.print(f"warning: serving on {host}: reachable from other machines", markup=False)
    stderr.print(f"hpn dashboard on http://{host}:{port}/ (runs in {runs_root()})", markup=False)
    uvicorn.run(create_app(), host=host, port=port, log_level="warning")
