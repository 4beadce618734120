"""Serving one completion request on the engine: one engine request per prompt and
choice, tokens detokenised with stop strings matched across token boundaries (a streamed
delta holds back what could start one; a match aborts the request in the engine), a
closed connection aborting its requests, and the answer as OpenAI's body or its
server-sent events (chat opens each choice with a ``role`` delta; one chunk per token;
``finish_reason`` in a chunk of its own; with ``stream_options.include_usage`` a last
chunk with the usage and no choices; then ``data: [DONE]``)."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field

from fastapi.responses import StreamingResponse

from hpn.serve.routes import State, error, state


class Failed(Exception):
    """The scheduler dropped a request."""


class Text:
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
class Choice:
    """One choice of a request: its engine request, text, tokens and logprobs."""

    index: int
    rid: int
    text: Text
    ids: list[int] = field(default_factory=list)
    lps: list = field(default_factory=list)  # (token, (logprob, top)) per token
    finish: str | None = None
    offsets: list[int] = field(default_factory=list)


def budget(s: State, model: str, ids: list[int], cap: int | None, chat: bool):
    """Output tokens of one prompt, or an error response."""
    engine, limits = s.engine, s.limits
    ctx = engine.max_len(model)
    if limits.max_model_len is not None:
        ctx = min(ctx, limits.max_model_len)
    param = "max_completion_tokens" if chat else "max_tokens"
    plimit = ctx - 1 if limits.max_prompt_tokens is None else limits.max_prompt_tokens
    if not ids:
        return None, error(400, "prompt: empty after tokenization", "prompt")
    if len(ids) > min(plimit, ctx - 1):
        return None, error(
            413, f"prompt: {len(ids)} tokens, the limit is {min(plimit, ctx - 1)}", "prompt"
        )
    if cap is not None and limits.max_tokens is not None and cap > limits.max_tokens:
        return None, error(400, f"{param}: at most {limits.max_tokens}", param)
    if cap is None:
        cap = ctx - len(ids)
        if limits.max_tokens is not None:
            cap = min(cap, limits.max_tokens)
    if len(ids) + cap > ctx:
        return None, error(
            400,
            f"{param}: this model's context is {ctx} tokens; the prompt has {len(ids)} "
            f"and {cap} more were asked",
            param,
        )
    return cap, None


async def generate(request, body, prompts, chat: bool, cap, echo=None):
    """Submit one engine request per prompt and choice; answer as OpenAI does (a body,
    or server-sent events with ``stream``)."""
    s = state(request)
    engine, limits = s.engine, s.limits
    host = engine.hosts[body.model]
    caps = []
    for ids in prompts:
        c, err = budget(s, body.model, ids, cap, chat)
        if err is not None:
            return err
        caps.append(c)
    n_req = len(prompts) * body.n
    if s.live + n_req > limits.max_waiting:
        return error(503, "server busy: too many requests in flight", kind="server_busy")
    k = body.logprobs_k()
    eos = frozenset() if body.ignore_eos else frozenset(_eos_ids(host))
    eos = eos | frozenset(body.stop_token_ids or [])
    stops = body.stops()
    loop = asyncio.get_running_loop()
    q: asyncio.Queue = asyncio.Queue()
    choices: list[Choice] = []
    s.live += n_req
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
            choices.append(Choice(idx, rid, Text(host.tokenizer, stops)))
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
                    raise Failed()
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
            s.live -= n_req
            released = True
        finally:
            if watcher is not None:
                watcher.cancel()
            if not released:
                s.live -= n_req
                for c in choices:
                    if c.finish is None:
                        engine.abort(c.rid)

    def logprobs_of(c: Choice, upto: int | None = None, start: int = 0):
        if k is None:
            return None
        items = c.lps[start:upto]
        if chat:
            return {"content": [_chat_lp(host.tokenizer, t, lp) for t, lp in items]}
        base = len(echo[c.index // body.n]) if echo else 0
        return _completion_lp(host.tokenizer, items, [base + o for o in c.offsets[start:upto]])

    if body.stream:
        return StreamingResponse(
            sse(body, chat, choices, events, logprobs_of, usage, oid, created, kind, echo),
            media_type="text/event-stream",
        )
    try:
        async for _ in events(watched=True):
            pass
    except Failed:
        return error(
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


async def sse(body, chat, choices, events, logprobs_of, usage, oid, created, kind, echo):
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
    except Failed:
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
