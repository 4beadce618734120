"""An OpenAI-compatible HTTP server (FastAPI + uvicorn, 127.0.0.1) over an `Engine`.

POST /v1/completions, POST /v1/chat/completions (``stream: true`` sends server-sent
events, one chunk per token, then ``data: [DONE]``), GET /v1/models, GET /metrics
(Prometheus text), GET /health. Limits: request body, prompt tokens and ``max_tokens``
are bounded (`Limits`); an unknown model is a 404, an oversized prompt or body a 413, bad
JSON or a bad field a 400, each with an OpenAI-style error body naming the field. Nothing
a client sends stops the server. ``ignore_eos`` (as in vLLM) makes a request generate
exactly ``max_tokens`` tokens, which the replay client uses.
"""

from __future__ import annotations

import asyncio
import json
import time
import weakref
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hpn.serve.engine import Engine

HOST = "127.0.0.1"


@dataclass(frozen=True)
class Limits:
    """Bounds on what one request may ask for."""

    max_body_bytes: int = 1 << 20
    max_prompt_tokens: int = 1536
    max_tokens: int = 512
    max_waiting: int = 4096  # requests in the engine at once; more get a 503


def _error(
    status: int, message: str, param: str | None = None, kind: str = "invalid_request_error"
):
    return JSONResponse(
        {"error": {"message": message, "type": kind, "param": param, "code": status}},
        status_code=status,
    )


def create_app(engine: Engine, limits: Limits = Limits()):
    """The FastAPI app serving `engine` (already started)."""
    app = FastAPI(title="hpn serve", version="1")
    models = sorted(engine.hosts)
    live = {"n": 0}

    class _Common(BaseModel):
        model_config = ConfigDict(extra="ignore")
        model: str
        max_tokens: int = Field(16, ge=1, le=limits.max_tokens)
        temperature: float = Field(1.0, ge=0.0, le=10.0)
        seed: int | None = Field(None, ge=0, le=2**63 - 1)
        stream: bool = False
        ignore_eos: bool = False

    class CompletionBody(_Common):
        prompt: str | list[int] = Field(..., max_length=limits.max_body_bytes)

    class Message(BaseModel):
        role: str = Field(..., pattern="^(system|user|assistant)$")
        content: str

    class ChatBody(_Common):
        messages: list[Message] = Field(..., min_length=1, max_length=256)

    @app.exception_handler(RequestValidationError)
    async def _bad(_req, exc):
        e = exc.errors()[0] if exc.errors() else {}
        loc = ".".join(str(x) for x in e.get("loc", ()) if x != "body")
        return _error(400, f"{loc or 'body'}: {e.get('msg', 'invalid request')}", loc or None)

    @app.middleware("http")
    async def _bounded(request: Request, call_next):
        size = request.headers.get("content-length")
        if size is not None and (not size.isdigit() or int(size) > limits.max_body_bytes):
            return _error(413, f"request body over {limits.max_body_bytes} bytes", "body")
        try:
            return await call_next(request)
        except Exception as e:  # never let one request take the server down
            return _error(500, f"internal error: {type(e).__name__}: {e}", kind="server_error")

    @app.get("/health")
    async def health():
        return {
            "status": "ok",
            "policy": engine.policy.name,
            "instances": len(engine.backend.instances),
            "clock_s": engine.backend.now(),  # the scheduler's clock (policies' timers)
        }

    @app.get("/v1/models")
    async def list_models():
        return {
            "object": "list",
            "data": [{"id": m, "object": "model", "created": 0, "owned_by": "hpn"} for m in models],
        }

    @app.get("/metrics")
    async def metrics():
        from prometheus_client import CONTENT_TYPE_LATEST

        return Response(engine.sink.text(), media_type=CONTENT_TYPE_LATEST)

    async def _parse(request: Request, cls):
        try:
            raw = await request.body()
            if len(raw) > limits.max_body_bytes:
                return None, _error(413, f"request body over {limits.max_body_bytes} bytes", "body")
            data = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            return None, _error(400, f"body: not valid JSON ({e.msg if hasattr(e, 'msg') else e})")
        if not isinstance(data, dict):
            return None, _error(400, "body: must be a JSON object")
        try:
            return cls.model_validate(data), None
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(x) for x in first["loc"])
            return None, _error(400, f"{loc}: {first['msg']}", loc)

    def _unknown_model(name: str):
        return _error(
            404, f"model {name!r} does not exist; see GET /v1/models", "model", "model_not_found"
        )

    @app.post("/v1/completions")
    async def completions(request: Request):
        body, err = await _parse(request, CompletionBody)
        if err is not None:
            return err
        if body.model not in engine.hosts:
            return _unknown_model(body.model)
        tok = engine.hosts[body.model].tokenizer
        if isinstance(body.prompt, str):
            ids = tok.encode(body.prompt, add_special_tokens=False)
        else:
            vocab = engine.hosts[body.model].info.vocab
            if any(not 0 <= t < vocab for t in body.prompt):
                return _error(400, f"prompt: token ids must be in 0..{vocab - 1}", "prompt")
            ids = list(body.prompt)
        return await _generate(body, ids, "text_completion")

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        body, err = await _parse(request, ChatBody)
        if err is not None:
            return err
        if body.model not in engine.hosts:
            return _unknown_model(body.model)
        tok = engine.hosts[body.model].tokenizer
        enc: Any = tok.apply_chat_template(
            [m.model_dump() for m in body.messages], add_generation_prompt=True, tokenize=True
        )
        if not isinstance(enc, list):  # newer transformers return a BatchEncoding
            enc = list(enc["input_ids"])
        ids: list[int] = [int(t) for t in enc]
        return await _generate(body, ids, "chat.completion")

    async def _generate(body, ids: list[int], kind: str):
        host = engine.hosts[body.model]
        if not ids:
            return _error(400, "prompt: empty after tokenization", "prompt")
        if len(ids) > limits.max_prompt_tokens:
            return _error(
                413, f"prompt: {len(ids)} tokens, the limit is {limits.max_prompt_tokens}", "prompt"
            )
        if len(ids) + body.max_tokens > host.info.max_len:
            return _error(
                400,
                f"max_tokens: prompt + max_tokens exceeds the model's {host.info.max_len}",
                "max_tokens",
            )
        if live["n"] >= limits.max_waiting:
            return _error(503, "server busy: too many requests in flight", kind="server_busy")
        loop = asyncio.get_running_loop()
        q: asyncio.Queue = asyncio.Queue()

        def on_token(req, seq, token, t):
            # req is the scheduler's view: done once this very token was its last
            loop.call_soon_threadsafe(q.put_nowait, (token, t, req.done_t >= 0))

        eos = frozenset() if body.ignore_eos else frozenset(_eos_ids(host))
        live["n"] += 1
        rid = engine.submit(
            dict(
                model=body.model,
                prompt=ids,
                max_new=body.max_tokens,
                eos=eos,
                temperature=body.temperature,
                seed=body.seed,
            ),
            on_token,
        )
        created = int(time.time())
        oid = f"{'chatcmpl' if kind.startswith('chat') else 'cmpl'}-{rid}"
        chat = kind.startswith("chat")

        async def tokens():
            try:
                while True:
                    token, t, last = await q.get()
                    if token is None:
                        raise _Failed()
                    yield token, last
                    if last:
                        return
            finally:
                live["n"] -= 1

        def choice(text, finish):
            if chat:
                return {"index": 0, "delta": {"content": text}, "finish_reason": finish}
            return {"index": 0, "text": text, "finish_reason": finish}

        if body.stream:

            async def sse():
                out: list[int] = []
                sent = ""
                try:
                    async for token, last in tokens():
                        out.append(token)
                        text = host.tokenizer.decode(out, skip_special_tokens=True)
                        delta, sent = text[len(sent) :], text
                        finish = _finish(out, body.max_tokens, eos) if last else None
                        chunk = {
                            "id": oid,
                            "object": f"{kind}.chunk" if chat else kind,
                            "created": created,
                            "model": body.model,
                            "choices": [choice(delta, finish)],
                        }
                        yield f"data: {json.dumps(chunk)}\n\n"
                except _Failed:
                    err = {
                        "error": {
                            "message": "the scheduler dropped the request",
                            "type": "server_error",
                        }
                    }
                    yield f"data: {json.dumps(err)}\n\n"
                yield "data: [DONE]\n\n"

            return StreamingResponse(sse(), media_type="text/event-stream")

        out = []
        try:
            async for token, _ in tokens():
                out.append(token)
        except _Failed:
            return _error(
                503, "the scheduler dropped the request (not started in time)", kind="server_busy"
            )
        text = host.tokenizer.decode(out, skip_special_tokens=True)
        finish = _finish(out, body.max_tokens, eos)
        msg = {
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "finish_reason": finish,
        }
        return {
            "id": oid,
            "object": kind,
            "created": created,
            "model": body.model,
            "choices": [msg if chat else {"index": 0, "text": text, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": len(ids),
                "completion_tokens": len(out),
                "total_tokens": len(ids) + len(out),
            },
        }

    sink: Any = engine.sink  # ServeMetrics: its failure path answers the client
    sink.engine_ref = weakref.ref(engine)
    return app


class _Failed(Exception):
    pass


def _eos_ids(host) -> list[int]:
    e = host.eos
    return [e] if isinstance(e, int) else list(e or [])


def _finish(out: list[int], max_tokens: int, eos) -> str:
    return "stop" if out and out[-1] in eos else "length"


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
) -> None:
    """The service behind ``hpn serve``: load `models`, build the engine, serve it.
    `timeline`: write the engine's event log (`hpn.serve.timeline`) there at shutdown."""
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
    )
    try:
        serve(eng, port, limits)
    finally:
        if timeline is not None:
            from hpn.serve.timeline import Traced

            assert isinstance(eng.backend, Traced)  # built traced when a timeline is asked for
            eng.backend.write(timeline)
