"""Starting the dashboard (``hpn dash``): its checks, its socket, its token.

The socket is bound before the server starts, so a port in use is one line; a non-loopback
address needs ``allow_remote`` and then every request a token, printed once in the URL.
"""

from __future__ import annotations

from pathlib import Path

from hpn.errors import InputError

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def serve(host: str, port: int, data: Path | None, allow_remote: bool) -> None:
    """Check the options, bind, print the URL and serve until interrupted."""
    import secrets
    import sys

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
    from hpn.store import runs_root
    from hpn.store.paths import root_field
    from hpn.store.record import check_folder

    check_folder(runs_root(), root_field())
    sock = bind(host, port)
    token = secrets.token_urlsafe(24) if remote else None
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/" + (f"?token={token}" if token else "")
    if remote:
        print(f"warning: serving on {host}: reachable from other machines", file=sys.stderr)
    print(f"hpn dashboard on {url} (runs in {runs_root()})", file=sys.stderr)
    app = create_app(data=data, host=host, token=token)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()


def bind(host: str, port: int):
    """A listening socket on ``host:port``, or one line saying why not (in use, no such
    address)."""
    import errno
    import socket

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
