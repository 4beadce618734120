"""An OpenAI-compatible HTTP server (FastAPI + uvicorn, 127.0.0.1) over an `Engine`.

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

import asyncio
import json
import time
import weakref
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import ValidationError

from hpn.serve.api import ChatBody, CompletionBody, Refused
from hpn.serve.engine import Engine

HOST = "127.0.0.1"


@dataclass(frozen=True)
class Limits:
    """Bounds on what one request may ask for (None: the model's context)."""

    max_body_bytes: int = 1 << 20
    max_prompt_tokens: int | None = None
    max_tokens: int | None = None
    max_model_len: int | None = None  # lowers every model's context
    max_waiting: int = 4096  # engine requests at once; more get a 503


def _error(
    status: int, message: str, param: str | None = None, kind: str = "invalid_request_error"
):
    return JSONResponse(
        {"error": {"message": message, "type": kind, "param": param, "code": status}},
        status_code=status,
    )


class _Failed(Exception):
    pass


class _Text:
    """Detokenised text of one choice, with stop strings matched across tokens."""

    def __init__(self, tokenizer, stops: list[str]):
        self.tok, self.stops = tokenizer, stops
        self.hold = max((len(x) for x in stops), default=1) - 1
        self.ids: list[int] = []
        self.text = ""
        self.sent = 0

    def add(self, token: int) -> tuple[str, bool]:
        """Append `token`; (the text now safe to send, whether a stop string matched)."""
        self.ids.append(token)
        text = self.tok.decode(self.ids, skip_special_tokens=True)
        start = max(0, len(self.text) - self.hold)
        self.text = text
        hits = [i for i in (text.find(x, start) for x in self.stops) if i >= 0]
        if hits:
            self.text = text[: min(hits)]
            return self._take(len(self.text)), True
        safe = len(text) - self.hold if self.stops else len(text)
        while safe > self.sent and text[safe - 1] == "\ufffd":  # incomplete UTF-8
            safe -= 1
        return self._take(safe), False

    def flush(self) -> str:
        return self._take(len(self.text))

    def _take(self, upto: int) -> str:
        if upto <= self.sent:
            return ""
        d, self.sent = self.text[self.sent : upto], upto
        return d


@dataclass(eq=False)
class _Choice:
    index: int
    rid: int
    text: _Text
    ids: list[int] = field(default_factory=list)
    lps: list = field(default_factory=list)  # (token, (logprob, top)) per token
    finish: str | None = None
    offsets: list[int] = field(default_factory=list)


def create_app(engine: Engine, limits: Limits = Limits()):
    """The FastAPI app serving `engine` (already started)."""
    app = FastAPI(title="hpn serve", version="1")
    models = sorted(engine.hosts)
    live = {"n": 0}

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
        data = [
            {
                "id": m,
                "object": "model",
                "created": 0,
                "owned_by": "hpn",
                "max_model_len": min(engine.max_len(m), limits.max_model_len or 1 << 62),
            }
            for m in models
        ]
        return {"object": "list", "data": data}

    @app.get("/metrics")
    async def metrics():
        from prometheus_client import CONTENT_TYPE_LATEST

        sink: Any = engine.sink  # ServeMetrics: the server's sink has a text exposition
        return Response(sink.text(), media_type=CONTENT_TYPE_LATEST)

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
            body = cls.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(x) for x in first["loc"])
            if first["type"] == "extra_forbidden":
                return None, _error(400, f"{loc}: not supported by this server", loc)
            return None, _error(400, f"{loc}: {first['msg']}", loc)
        if body.model not in engine.hosts:
            return None, _error(
                404,
                f"model {body.model!r} does not exist; see GET /v1/models",
                "model",
                "model_not_found",
            )
        try:
            body.check(engine.hosts[body.model].info.vocab)
        except Refused as e:
            return None, _error(400, str(e), e.param)
        return body, None

    @app.post("/v1/completions")
    async def completions(request: Request):
        body, err = await _parse(request, CompletionBody)
        if err is not None:
            return err
        host = engine.hosts[body.model]
        try:
            raw = body.prompts()
        except Refused as e:
            return _error(400, str(e), e.param)
        prompts, echo = [], []
        for p in raw:
            if isinstance(p, str):
                prompts.append(host.tokenizer.encode(p, add_special_tokens=False))
                echo.append(p)
            else:
                vocab = host.info.vocab
                if any(not isinstance(t, int) or not 0 <= t < vocab for t in p):
                    return _error(400, f"prompt: token ids must be in 0..{vocab - 1}", "prompt")
                prompts.append(list(p))
                echo.append(str(host.tokenizer.decode(p, skip_special_tokens=True)))
        return await _generate(
            request, body, prompts, False, body.max_tokens, echo if body.echo else None
        )

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        body, err = await _parse(request, ChatBody)
        if err is not None:
            return err
        tok = engine.hosts[body.model].tokenizer
        try:
            msgs = body.chat()
        except Refused as e:
            return _error(400, str(e), e.param)
        enc: Any = tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=True)
        if not isinstance(enc, list):  # newer transformers return a BatchEncoding
            enc = list(enc["input_ids"])
        return await _generate(request, body, [[int(t) for t in enc]], True, body.output_cap)

    def _budget(model: str, ids: list[int], cap: int | None, chat: bool):
        """Output tokens of one prompt, or an error response."""
        ctx = engine.max_len(model)
        if limits.max_model_len is not None:
            ctx = min(ctx, limits.max_model_len)
        param = "max_completion_tokens" if chat else "max_tokens"
        plimit = ctx - 1 if limits.max_prompt_tokens is None else limits.max_prompt_tokens
        if not ids:
            return None, _error(400, "prompt: empty after tokenization", "prompt")
        if len(ids) > min(plimit, ctx - 1):
            return None, _error(
                413, f"prompt: {len(ids)} tokens, the limit is {min(plimit, ctx - 1)}", "prompt"
            )
        if cap is not None and limits.max_tokens is not None and cap > limits.max_tokens:
            return None, _error(400, f"{param}: at most {limits.max_tokens}", param)
        if cap is None:
            cap = ctx - len(ids)
            if limits.max_tokens is not None:
                cap = min(cap, limits.max_tokens)
        if len(ids) + cap > ctx:
            return None, _error(
                400,
                f"{param}: this model's context is {ctx} tokens; the prompt has {len(ids)} "
                f"and {cap} more were asked",
                param,
            )
        return cap, None

    async def _generate(request, body, prompts, chat: bool, cap, echo=None):
        host = engine.hosts[body.model]
        caps = []
        for ids in prompts:
            c, err = _budget(body.model, ids, cap, chat)
            if err is not None:
                return err
            caps.append(c)
        n_req = len(prompts) * body.n
        if live["n"] + n_req > limits.max_waiting:
            return _error(503, "server busy: too many requests in flight", kind="server_busy")
        k = body.logprobs_k()
        eos = frozenset() if body.ignore_eos else frozenset(_eos_ids(host))
        eos = eos | frozenset(body.stop_token_ids or [])
        stops = body.stops()
        loop = asyncio.get_running_loop()
        q: asyncio.Queue = asyncio.Queue()
        choices: list[_Choice] = []
        live["n"] += n_req
        for p, ids in enumerate(prompts):
            for j in range(body.n):
                idx = p * body.n + j

                def on_token(req, seq, token, t, idx=idx):
                    lp = None
                    if token is not None and seq.sampling.logprobs is not None:
                        lp = seq.lps[req.generated - 1]
                    loop.call_soon_threadsafe(q.put_nowait, (idx, token, lp, req.done_t >= 0))

                rid = engine.submit(
                    dict(
                        model=body.model,
                        prompt=ids,
                        max_new=caps[p],
                        eos=eos,
                        sampling=body.sampling(k, j),
                    ),
                    on_token,
                )
                choices.append(_Choice(idx, rid, _Text(host.tokenizer, stops)))
        created = int(time.time())
        oid = f"{'chatcmpl' if chat else 'cmpl'}-{choices[0].rid}"
        kind = "chat.completion" if chat else "text_completion"
        n_prompt = sum(len(x) for x in prompts)

        def usage():
            done = sum(len(c.ids) for c in choices)
            return {
                "prompt_tokens": n_prompt,
                "completion_tokens": done,
                "total_tokens": n_prompt + done,
            }

        async def watch():
            """Wait for the client to go away (a plain request: the body is read, so the
            next message is the disconnect); a stream's is watched by Starlette."""
            while (await request.receive())["type"] != "http.disconnect":
                pass
            q.put_nowait((-1, None, None, True))

        async def events(watched: bool):
            """(choice, text delta, new tokens' logprobs, finished now) per token."""
            open_ = len(choices)
            released = False
            watcher = asyncio.create_task(watch()) if watched else None
            try:
                while open_:
                    idx, token, lp, last = await q.get()
                    if idx < 0:
                        return  # the client left
                    c = choices[idx]
                    if c.finish is not None:
                        continue  # tokens of a request already stopped
                    if token is None:
                        raise _Failed()
                    c.offsets.append(len(c.text.text))
                    delta, stopped = c.text.add(token)
                    c.ids.append(token)
                    c.lps.append((token, lp))
                    if stopped:
                        c.finish = "stop"
                        engine.abort(c.rid, "stop")
                    elif last:
                        c.finish = "stop" if token in eos else "length"
                        delta += c.text.flush()
                    if c.finish is not None:
                        open_ -= 1
                    yield c, delta, c.finish is not None
                live["n"] -= n_req
                released = True
            finally:
                if watcher is not None:
                    watcher.cancel()
                if not released:
                    live["n"] -= n_req
                    for c in choices:
                        if c.finish is None:
                            engine.abort(c.rid)

        def logprobs_of(c: _Choice, upto: int | None = None, start: int = 0):
            if k is None:
                return None
            items = c.lps[start:upto]
            if chat:
                return {"content": [_chat_lp(host.tokenizer, t, lp) for t, lp in items]}
            base = len(echo[c.index // body.n]) if echo else 0
            return _completion_lp(host.tokenizer, items, [base + o for o in c.offsets[start:upto]])

        if body.stream:
            return StreamingResponse(
                _sse(body, chat, choices, events, logprobs_of, usage, oid, created, kind, echo),
                media_type="text/event-stream",
            )
        try:
            async for _ in events(watched=True):
                pass
        except _Failed:
            return _error(
                503, "the scheduler dropped the request (not started in time)", kind="server_busy"
            )
        out = []
        for c in choices:
            text = c.text.text
            if chat:
                out.append(
                    {
                        "index": c.index,
                        "message": {"role": "assistant", "content": text},
                        "logprobs": logprobs_of(c),
                        "finish_reason": c.finish,
                    }
                )
            else:
                if echo:
                    text = echo[c.index // body.n] + text
                out.append(
                    {
                        "index": c.index,
                        "text": text,
                        "logprobs": logprobs_of(c),
                        "finish_reason": c.finish,
                    }
                )
        return {
            "id": oid,
            "object": kind,
            "created": created,
            "model": body.model,
            "choices": out,
            "usage": usage(),
        }

    sink: Any = engine.sink  # ServeMetrics: its failure path answers the client
    sink.engine_ref = weakref.ref(engine)
    return app


async def _sse(body, chat, choices, events, logprobs_of, usage, oid, created, kind, echo):
    """The server-sent events of a streamed request."""
    obj = f"{kind}.chunk" if chat else kind
    with_usage = body.include_usage
    every = body.stream_options is not None and body.stream_options.continuous_usage_stats

    def chunk(items, use=None):
        d = {"id": oid, "object": obj, "created": created, "model": body.model, "choices": items}
        if with_usage or every:
            d["usage"] = use if use is not None else (usage() if every else None)
        return f"data: {json.dumps(d)}\n\n"

    def item(c, text, lp, finish):
        if chat:
            delta = {} if finish else {"content": text}
            return {"index": c.index, "delta": delta, "logprobs": lp, "finish_reason": finish}
        return {"index": c.index, "text": text, "logprobs": lp, "finish_reason": finish}

    for c in choices:
        if chat:  # OpenAI's first delta of a choice: the role
            first = {"role": "assistant", "content": ""}
            yield chunk(
                [{"index": c.index, "delta": first, "logprobs": None, "finish_reason": None}]
            )
        elif echo:
            yield chunk([item(c, echo[c.index // body.n], None, None)])
    try:
        async for c, delta, finished in events(watched=False):
            n = len(c.lps)
            yield chunk([item(c, delta, logprobs_of(c, n, n - 1), None)])
            if finished:
                yield chunk([item(c, "", None, c.finish)])
        if with_usage:
            yield chunk([], usage())
    except _Failed:
        err = {"error": {"message": "the scheduler dropped the request", "type": "server_error"}}
        yield f"data: {json.dumps(err)}\n\n"
    yield "data: [DONE]\n\n"


def _token_text(tok, t: int) -> str:
    return tok.decode([t], skip_special_tokens=False)


def _chat_lp(tok, t: int, lp) -> dict:
    s = _token_text(tok, t)
    top = [
        {"token": _token_text(tok, a), "logprob": v, "bytes": list(_token_text(tok, a).encode())}
        for a, v in lp[1]
    ]
    return {"token": s, "logprob": lp[0], "bytes": list(s.encode()), "top_logprobs": top}


def _completion_lp(tok, items, offsets) -> dict:
    return {
        "tokens": [_token_text(tok, t) for t, _ in items],
        "token_logprobs": [lp[0] for _, lp in items],
        "top_logprobs": [{_token_text(tok, a): v for a, v in lp[1]} for _, lp in items],
        "text_offset": offsets,
    }


def _eos_ids(host) -> list[int]:
    e = host.eos
    return [e] if isinstance(e, int) else list(e or [])


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
