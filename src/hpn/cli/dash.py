"""`hpn dash`: the browser dashboard over the run store, on 127.0.0.1 by default."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def dash(
    host: Annotated[
        str, typer.Option(help="Address to bind (others can reach it unless loopback).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8765,
    data: Annotated[
        Path | None,
        typer.Option(
            help="Folder whose files job configs may name (matrices, traces, mixes); "
            "default: none, a job names no file on this machine."
        ),
    ] = None,
    allow_remote: Annotated[
        bool,
        typer.Option(help="Allow a non-loopback --host; every request then needs the token."),
    ] = False,
) -> None:
    """Serve the dashboard: runs, plots, comparisons, the fabric explorer, new runs."""
    import secrets

    from hpn.errors import InputError

    if not 0 < port < 65536:
        raise InputError("--port", f"must be in 1..65535, got {port}")
    remote = host not in LOOPBACK
    if remote and not allow_remote:
        raise InputError("--host", f"{host} is reachable from other machines: add --allow-remote")
    if data is not None and not data.is_dir():
        raise InputError("--data", f"{data} is not a folder")
    try:
        import uvicorn

        from hpn.web import create_app
    except ImportError:
        raise InputError("dash", "needs the web extra: pip install 'hpn[web]'") from None
    from hpn.cli.output import stderr
    from hpn.store import runs_root
    from hpn.store.record import check_folder
    from hpn.store.paths import root_field

    check_folder(runs_root(), root_field())
    sock = _bind(host, port)
    token = secrets.token_urlsafe(24) if remote else None
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/" + (f"?token={token}" if token else "")
    if remote:
        stderr.print(f"warning: serving on {host}: reachable from other machines", markup=False)
    stderr.print(f"hpn dashboard on {url} (runs in {runs_root()})", markup=False)
    app = create_app(data=data, host=host, token=token)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()


def _bind(host: str, port: int):
    """A listening socket on ``host:port``, or one line saying why not (in use, no such
    address)."""
    import errno
    import socket

    from hpn.errors import InputError

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror:
        raise InputError("--host", f"{host} is not an address of this machine") from None
    family, kind, proto, _, addr = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(addr)
        sock.listen(128)
    except OSError as e:
        sock.close()
        if e.errno == errno.EADDRINUSE:
            raise InputError("--port", f"{port} is in use on {host}: give another --port") from None
        if e.errno == errno.EACCES:
            raise InputError("--port", f"{port} needs privileges: give one above 1023") from None
        raise InputError("--host", f"cannot listen on {host}:{port} ({e.strerror})") from None
    return sock
