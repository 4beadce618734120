"""An OpenAI-compatible HTTP server (FastAPI + uvicorn, 127.0.0.1) over an `Engine`.

The routes are `APIRouter`s by purpose in `hpn.serve.routes` (completions and chat,
models, health and metrics); this module builds the app and runs it.

POST /v1/completions, POST /v1/chat/completions, GET /v1/models, GET /metrics (Prometheus
text, vLLM's names), GET /health. Bodies (`hpn.serve.api`): every OpenAI field honoured
or refused with a 400 naming it. ``stream: true`` sends server-sent events as OpenAI
does: chat opens each choice with a ``role`` delta; one chunk per token; ``finish_reason``
in a chunk of its own; with ``stream_options.include_usage`` a last chunk with the usage
and no choices; then ``data: [DONE]``. ``n`` choices (and list prompts) are separate
engine requests; ``stop`` strings are matched on the detokenised text across token
boundaries (a streamed delta holds back what could start one), and a match aborts the
request in the engine. A client that closes its connection aborts its requests (they
leave their batch at the next step). Limits per model: prompt plus output within the
model's context (``max_position_embeddings``, at most one instance's KV pool), lowered by
`Limits`; an unknown model is a 404, an oversized prompt or body a 413.
"""

from __future__ import annotations

import logging
import weakref
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError

from hpn.serve.engine import Engine
from hpn.serve.routes import Limits, State, completions, error, models, ops

HOST = "127.0.0.1"
__all__ = ["HOST", "Limits", "create_app", "serve", "serve_models"]


def create_app(engine: Engine, limits: Limits = Limits()):
    """The FastAPI app serving `engine` (already started)."""
    app = FastAPI(title="hpn serve", version="1")
    app.state.hpn = State(engine, limits, sorted(engine.hosts))

    @app.exception_handler(RequestValidationError)
    async def _bad(_req, exc):
        e = exc.errors()[0] if exc.errors() else {}
        loc = ".".join(str(x) for x in e.get("loc", ()) if x != "body")
        return error(400, f"{loc or 'body'}: {e.get('msg', 'invalid request')}", loc or None)

    @app.middleware("http")
    async def _bounded(request: Request, call_next):
        size = request.headers.get("content-length")
        if size is None and request.method in ("POST", "PUT", "PATCH"):
            # a chunked body would be read whole before its size is known
            return error(411, "Content-Length required", "body")
        if size is not None and (not size.isdigit() or int(size) > limits.max_body_bytes):
            return error(413, f"request body over {limits.max_body_bytes} bytes", "body")
        try:
            return await call_next(request)
        except Exception as e:  # never let one request take the server down
            # the client gets the kind, not the text (it may name the server's files); the
            # server's log keeps the whole traceback
            logging.getLogger("hpn.serve").exception("request %s failed", request.url.path)
            return error(500, f"internal error: {type(e).__name__}", kind="server_error")

    for r in (ops.router, models.router, completions.router):
        app.include_router(r)
    sink: Any = engine.sink  # ServeMetrics: its failure path answers the client
    sink.engine_ref = weakref.ref(engine)
    return app


def serve(engine: Engine, port: int = 8000, limits: Limits = Limits(), ready=None) -> None:
    """Serve `engine` on 127.0.0.1:`port` until SIGINT/SIGTERM; in-flight requests finish
    (up to 30 s) before the engine stops."""
    import uvicorn

    engine.start()
    app = create_app(engine, limits)
    config = uvicorn.Config(
        app,
        host=HOST,
        port=port,
        log_level="warning",
        timeout_graceful_shutdown=30,
        access_log=False,
    )
    server = uvicorn.Server(config)
    if ready is not None:
        ready(server)
    # uvicorn re-raises the SIGTERM it handled once it has shut down; with the default
    # action that kills the process before the engine stops (and before any `finally`)
    import signal
    import threading

    main = threading.current_thread() is threading.main_thread()
    prev = signal.signal(signal.SIGTERM, lambda *_: None) if main else None
    try:
        server.run()
    finally:
        engine.stop()
        if main:
            signal.signal(signal.SIGTERM, prev)


def serve_models(
    models: str,
    policy: str = "aegaeon",
    prefill: int = 1,
    decode: int = 1,
    workers: int = 0,
    port: int = 8000,
    profile: str | None = None,
    device: str | None = None,
    memory: int | None = None,
    link_bps: float | None = None,
    threads: int | None = None,
    slo=None,
    limits: Limits = Limits(),
    timeline: str | None = None,
    kv_blocks: int | None = None,
    startup: float | None = None,
) -> None:
    """The service behind ``hpn serve``: load `models`, build the engine, serve it.
    `timeline`: write the engine's event log (`hpn.serve.timeline`) there at shutdown;
    `startup`: a policy that starts engines (serverless) waits this long per scale-up."""
    from hpn.pool.policies.base import Slo
    from hpn.serve import profile as profiles
    from hpn.serve.device import default_spec
    from hpn.serve.engine import cluster_for
    from hpn.serve.hosts import load_hosts
    from hpn.serve.metrics import ServeMetrics

    if not 1 <= port <= 65535:
        from hpn.errors import InputError

        raise InputError("port", f"must be 1..65535, got {port}")
    cluster = cluster_for(policy, prefill, decode, workers)
    n = sum(k for _, k in cluster.roles())
    spec = default_spec(device, n, memory_bytes=memory, link_bps=link_bps, threads=threads)
    hosts = load_hosts(models, spec)
    prof = profiles.load(profile) if profile else None
    eng = Engine(
        hosts,
        spec,
        policy,
        cluster,
        profile=prof,
        slo=slo or Slo(),
        sink=ServeMetrics(),
        timeline=timeline is not None,
        kv_blocks=kv_blocks,
        options=None if startup is None else {"startup": startup},
    )
    try:
        serve(eng, port, limits)
    finally:
        if timeline is not None:
            from hpn.serve.timeline import Traced

            assert isinstance(eng.backend, Traced)  # built traced when a timeline is asked for
            eng.backend.write(timeline)
