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

import json
import math
import secrets
import socket
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, Response

from hpn.config import dump_toml, files_within
from hpn.errors import InputError
from hpn.store import Index, Run, runs_root
from hpn.store.atomic import json_text
from hpn.store.run import META
from hpn.web import pages
from hpn.web.jobs import Jobs, withhold

MAX_BODY = 64 * 1024
MAX_DEPTH = 32  # nesting of a request's JSON (or TOML) config


def nesting(body: bytes) -> int:
    """How deep ``[``/``{`` nest in a JSON text (outside strings), without parsing it."""
    depth = deepest = 0
    in_str = esc = False
    for ch in body.decode("utf-8", "replace"):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def depth_of(x: Any) -> int:
    """Nesting depth of parsed JSON/TOML (a scalar is 0), bounded by ``MAX_DEPTH`` + 1."""
    stack, deepest = [(x, 0)], 0
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict | list):
            deepest = max(deepest, d + 1)
            if deepest > MAX_DEPTH:
                return deepest
            stack.extend((c, d + 1) for c in (v.values() if isinstance(v, dict) else v))
    return deepest


STATIC = {"dash.js": "text/javascript", "dash.css": "text/css"}
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


def _finite(text: str) -> float:
    x = float(text)
    if not math.isfinite(x):
        raise InputError("body", f"number {text} is out of range (finite numbers only)")
    return x


def _no_constant(text: str) -> Any:
    raise InputError("body", f"{text} is not a number JSON allows")


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
    index = Index(root)
    jobs = Jobs(root, data=data)
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

    def run_of(run_id: str) -> Run:
        row = index.get(run_id)
        if row is None or not (Path(row["path"]) / META).exists():
            raise HTTPException(404, f"no run {run_id!r}")
        return Run(Path(row["path"]))

    # --- API -------------------------------------------------------------------------------
    @app.get("/api/runs")
    def api_runs(command: str | None = None, limit: int = 200) -> dict[str, Any]:
        where, params = ("command = ?", (command,)) if command else ("1", ())
        rows = index.rows(where, params, limit=min(max(limit, 1), 1000))
        return {"runs": [{k: v for k, v in r.items() if k != "path"} for r in rows]}

    @app.get("/api/runs/{run_id}")
    def api_run(run_id: str) -> dict[str, Any]:
        from hpn.plots import available

        r = run_of(run_id)
        return {
            "id": r.id,
            "command": r.command,
            "label": r.label,
            "meta": r.meta,
            "config": r.config,
            "result": r.result,
            "tables": sorted(r.tables),
            "charts": available(r),
            "files": [p.name for p in r.plots],
        }

    @app.get("/api/runs/{run_id}/charts/{kind}")
    def api_chart(run_id: str, kind: str) -> Response:
        from hpn.plots import draw
        from hpn.plots.html import figure

        fig = figure(draw(kind, [run_of(run_id)]))
        return Response(fig.to_json(), media_type="application/json")

    @app.get("/api/runs/{run_id}/files/{name:path}")
    def api_file(run_id: str, name: str) -> FileResponse:
        base = run_of(run_id).path.resolve()
        target = (base / name).resolve()
        if not target.is_relative_to(base) or not target.is_file() or target.name[0] == ".":
            raise HTTPException(404, "no such file in this run")
        return FileResponse(target)

    @app.get("/api/compare")
    def api_compare(a: str, b: str) -> dict[str, Any]:
        from hpn.store.compare import compare

        return compare([run_of(a), run_of(b)])

    def fabric_fields(preset: str | None, run: str | None) -> dict[str, Any]:
        if run:
            fields = run_of(run).config.get("fabric")
            if not isinstance(fields, dict):
                raise InputError("run", f"run {run} has no [fabric] in its config")
            return fields
        return {"preset": preset or "hpn"}

    @app.get("/api/fabric")
    def api_fabric(
        preset: str | None = None, run: str | None = None, pod: int = 0, segment: int = 0
    ) -> dict[str, Any]:
        from hpn.web.fabric import fabric_of, segment_view

        view = segment_view(fabric_of(fabric_fields(preset, run)), pod, segment)
        view["has_utilization"] = run is not None and "links" in run_of(run).tables
        return view

    @app.get("/api/fabric/pod")
    def api_fabric_pod(
        preset: str | None = None, run: str | None = None, pod: int = 0
    ) -> dict[str, Any]:
        from hpn.web.fabric import fabric_of, pod_view

        view = pod_view(fabric_of(fabric_fields(preset, run)), pod)
        view["has_utilization"] = run is not None and "links" in run_of(run).tables
        return view

    @app.get("/api/fabric/switch/{node}")
    def api_switch(node: int, preset: str | None = None, run: str | None = None):
        from hpn.web.fabric import fabric_of, switch_ports

        util = None
        if run and "links" in run_of(run).tables:
            util = run_of(run).table("links")
        return switch_ports(fabric_of(fabric_fields(preset, run)), node, util)

    @app.get("/api/commands")
    def api_commands() -> dict[str, Any]:
        from hpn.app import COMMANDS, example, limits_text, runnables

        return {
            "commands": [
                {
                    "name": name,
                    "summary": COMMANDS.summary(name) or COMMANDS.get(name).summary,
                    "example": example(name),
                    "example_toml": dump_toml(example(name) or {}),
                    "limits": list(limits_text(name)),
                }
                for name in runnables()
            ],
            "jobs": jobs.limits(),
            "request": {"max_body_bytes": MAX_BODY, "max_depth": MAX_DEPTH},
        }

    @app.post("/api/jobs")
    async def api_submit(request: Request) -> JSONResponse:
        if not request.headers.get("content-type", "").startswith("application/json"):
            raise HTTPException(415, "send application/json")
        raw = await request.body()
        if len(raw) > MAX_BODY:
            raise HTTPException(413, f"body over {MAX_BODY} bytes")
        if nesting(raw) > MAX_DEPTH:
            raise InputError("body", f"JSON nested deeper than {MAX_DEPTH} levels")
        try:
            body = json.loads(raw, parse_float=_finite, parse_constant=_no_constant)
        except InputError:
            raise
        except (ValueError, RecursionError):
            raise HTTPException(400, "malformed JSON") from None
        request.state.sent = raw.decode("utf-8", "replace")
        if not isinstance(body, dict) or not isinstance(body.get("command"), str):
            raise InputError("command", "give {command, config | config_toml}")
        config = body.get("config")
        if isinstance(body.get("config_toml"), str):
            try:
                config = tomllib.loads(body["config_toml"])
            except tomllib.TOMLDecodeError as e:
                raise InputError("config", f"malformed TOML: {e}") from None
            except RecursionError:
                raise InputError("config", f"TOML nested deeper than {MAX_DEPTH} levels") from None
        if not isinstance(config, dict):
            raise InputError("config", "must be a table")
        if depth_of(config) > MAX_DEPTH:
            raise InputError("config", f"nested deeper than {MAX_DEPTH} levels")
        try:
            with files_within(data):
                job = jobs.submit(body["command"], config)
        except InputError:
            raise
        except (ArithmeticError, LookupError, TypeError, ValueError, RecursionError) as e:
            # a value no check caught: still the client's input, refused and nothing queued
            raise InputError("config", f"cannot be run ({type(e).__name__})") from None
        return JSONResponse(job.view(), 202)

    @app.get("/api/jobs")
    def api_jobs() -> dict[str, Any]:
        return {"jobs": [j.view() for j in jobs.list()], "limits": jobs.limits()}

    @app.get("/api/jobs/{job_id}")
    def api_job(job_id: str) -> dict[str, Any]:
        job = jobs.get(job_id)
        if job is None:
            raise HTTPException(404, "no such job")
        return job.view()

    @app.delete("/api/jobs/{job_id}")
    def api_cancel(job_id: str) -> dict[str, Any]:
        job = jobs.cancel(job_id)
        if job is None:
            raise HTTPException(404, "no such job")
        return job.view()

    # --- pages and static files -----------------------------------------------------------
    @app.get("/", response_class=HTMLResponse)
    def page_index() -> str:
        return pages.runs_page(index.rows(limit=500), str(root))

    @app.get("/runs/{run_id}", response_class=HTMLResponse)
    def page_run(run_id: str) -> str:
        from hpn.plots import available

        r = run_of(run_id)
        return pages.run_page(r, available(r))

    @app.get("/compare", response_class=HTMLResponse)
    def page_compare(a: str, b: str) -> str:
        from hpn.plots import available
        from hpn.store.compare import compare

        ra, rb = run_of(a), run_of(b)
        return pages.compare_page(ra, rb, compare([ra, rb]), available(ra), available(rb))

    @app.get("/fabric", response_class=HTMLResponse)
    def page_fabric(preset: str = "hpn", run: str | None = None, view: str = "segment") -> str:
        from hpn.topology.presets import PRESETS

        if run:
            run_of(run)
        return pages.fabric_page(list(PRESETS), preset, run, "pod" if view == "pod" else "segment")

    @app.get("/new", response_class=HTMLResponse)
    def page_new() -> str:
        return pages.new_page()

    @app.get("/static/{name}")
    def static(name: str) -> Response:
        if name == "plotly.min.js":
            from hpn.plots.html import plotly_js

            return Response(
                plotly_js(),
                media_type="text/javascript",
                headers={"Cache-Control": "max-age=86400"},
            )
        if name not in STATIC:
            raise HTTPException(404, "no such file")
        text = resources.files("hpn.web").joinpath("static", name).read_text()
        return Response(text, media_type=STATIC[name])

    return app
