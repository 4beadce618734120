"""The dashboard's FastAPI app: JSON API, HTML pages, static files.

Safety: files are served only from run folders the store indexes (resolved paths must stay
inside the run folder); a job's config names no file on the server unless the app has a
``data`` folder, and then only inside it (symlinks resolved; :func:`hpn.config.files_within`);
error messages quote nothing the client did not send (:func:`withhold`); the ``Host`` header
must name the bound address or loopback (against DNS rebinding) and a state-changing request
must come from the dashboard's own origin; with a ``token`` every request must carry it; request
bodies are bounded in size and nesting; POSTs must be JSON, so another web page cannot post a
form to it; runs go through :func:`hpn.app.run` in worker processes with a memory and time
cap each (:mod:`hpn.web.jobs`), never through a shell.
"""

from __future__ import annotations

import secrets
import socket
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from hpn.errors import InputError
from hpn.store import Index, runs_root
from hpn.store.atomic import json_text
from hpn.web.jobs import Jobs, withhold
from hpn.web.limits import MAX_BODY, MAX_DEPTH, depth_of, nesting
from hpn.web.routes import fabric, pages, runs
from hpn.web.routes import jobs as jobs_routes
from hpn.web.routes.site import Site

__all__ = ["MAX_BODY", "MAX_DEPTH", "StrictJSON", "create_app", "depth_of", "host_name", "nesting"]

LOOPBACK = ("localhost", "127.0.0.1", "::1")
WILDCARD = ("0.0.0.0", "::", "")
STATE_CHANGING = ("POST", "PUT", "PATCH", "DELETE")
TOKEN_COOKIE = "hpn_token"


def allowed_hosts(host: str) -> set[str]:
    """Names a request's ``Host`` may give: the bound address, loopback, and (bound to every
    address) this machine's names."""
    names = {*LOOPBACK, host.strip("[]").lower()}
    if host in WILDCARD:
        names |= {socket.gethostname().lower(), socket.getfqdn().lower()}
    return names


def host_name(header: str) -> str:
    """The name part of a ``Host`` header (``[::1]:8765`` -> ``::1``)."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class StrictJSON(JSONResponse):
    """JSON without NaN or Infinity (null instead), so every response parses as JSON."""

    def render(self, content: Any) -> bytes:
        return json_text(content, indent=None).encode()


def create_app(
    root: Path | None = None,
    *,
    data: Path | None = None,
    host: str = "127.0.0.1",
    token: str | None = None,
) -> FastAPI:
    """The dashboard over the store at ``root``.

    ``data``: the folder job configs may name files in (None: no files); ``host``: the address
    it is bound to (for the ``Host`` check); ``token``: a secret every request must carry
    (``Authorization: Bearer``, the ``hpn_token`` cookie, or ``?token=`` once, which sets it).
    """
    root = Path(root or runs_root()).absolute()
    data = Path(data).resolve() if data is not None else None
    jobs = Jobs(root, data=data)
    site = Site(root, Index(root), jobs, data)
    hosts = allowed_hosts(host)
    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def lifespan(_: FastAPI):
        yield
        jobs.shutdown()

    app = FastAPI(
        title="hpn dashboard",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        lifespan=lifespan,
        default_response_class=StrictJSON,
    )
    app.state.jobs = jobs

    def refuse(status: int, why: str) -> JSONResponse:
        return JSONResponse({"error": why}, status)

    @app.middleware("http")
    async def bound_body(request: Request, call_next):
        if request.method in ("POST", "PUT", "PATCH"):
            length = request.headers.get("content-length")
            if length is None or not length.isdigit():
                return JSONResponse({"error": "Content-Length required"}, 411)
            if int(length) > MAX_BODY:
                return JSONResponse({"error": f"body over {MAX_BODY} bytes"}, 413)
        return await call_next(request)

    @app.middleware("http")
    async def same_origin(request: Request, call_next):
        # added last, so it runs first: Host, token, Origin before anything else
        if host_name(request.headers.get("host", "")) not in hosts:
            return refuse(403, "Host header not allowed: open the dashboard by its own address")
        given = None
        if token is not None:
            auth = request.headers.get("authorization", "")
            given = request.query_params.get("token")
            for cand in (auth.removeprefix("Bearer ").strip(), request.cookies.get(TOKEN_COOKIE)):
                given = given or cand or None
            if given is None or not secrets.compare_digest(given, token):
                return refuse(401, "token required: open the URL hpn dash printed")
        if request.method in STATE_CHANGING:
            origin = request.headers.get("origin")
            site = request.headers.get("sec-fetch-site", "")
            if origin is not None:
                netloc = origin.split("://", 1)[-1].lower()
                if netloc != request.headers.get("host", "").lower():
                    return refuse(403, "cross-origin request refused")
            elif site in ("cross-site", "same-site"):
                return refuse(403, "cross-origin request refused")
        response = await call_next(request)
        if token is not None and request.query_params.get("token") == token:
            response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="strict")
        return response

    @app.exception_handler(InputError)
    async def input_error(request: Request, e: InputError):
        sent = getattr(request.state, "sent", "")
        return JSONResponse({"error": withhold(str(e), sent), "field": e.field}, 400)

    for routes in (runs, fabric, jobs_routes, pages):  # by purpose: hpn.web.routes
        app.include_router(routes.router(site))
    return app
