"""POST /v1/completions and /v1/chat/completions: bodies parsed and checked
(`hpn.serve.api`: every OpenAI field honoured or refused with a 400 naming it), prompts
tokenized, then served by `generate`."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Request
from pydantic import ValidationError

from hpn.serve.api import ChatBody, CompletionBody, Refused
from hpn.serve.routes import error, state
from hpn.serve.routes.generate import generate

router = APIRouter()


async def parse(request: Request, cls):
    """The validated body of `cls` (or None and an error response)."""
    s = state(request)
    engine, limits = s.engine, s.limits
    try:
        raw = await request.body()
        if len(raw) > limits.max_body_bytes:
            return None, error(413, f"request body over {limits.max_body_bytes} bytes", "body")
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        return None, error(400, f"body: not valid JSON ({e.msg if hasattr(e, 'msg') else e})")
    if not isinstance(data, dict):
        return None, error(400, "body: must be a JSON object")
    try:
        body = cls.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(x) for x in first["loc"])
        if first["type"] == "extra_forbidden":
            return None, error(400, f"{loc}: not supported by this server", loc)
        return None, error(400, f"{loc}: {first['msg']}", loc)
    if body.model not in engine.hosts:
        return None, error(
            404,
            f"model {body.model!r} does not exist; see GET /v1/models",
            "model",
            "model_not_found",
        )
    try:
        body.check(engine.hosts[body.model].info.vocab)
    except Refused as e:
        return None, error(400, str(e), e.param)
    return body, None


@router.post("/v1/completions")
async def completions(request: Request):
    body, err = await parse(request, CompletionBody)
    if err is not None:
        return err
    host = state(request).engine.hosts[body.model]
    try:
        raw = body.prompts()
    except Refused as e:
        return error(400, str(e), e.param)
    prompts, echo = [], []
    for p in raw:
        if isinstance(p, str):
            prompts.append(host.tokenizer.encode(p, add_special_tokens=False))
            echo.append(p)
        else:
            vocab = host.info.vocab
            if any(not isinstance(t, int) or not 0 <= t < vocab for t in p):
                return error(400, f"prompt: token ids must be in 0..{vocab - 1}", "prompt")
            prompts.append(list(p))
            echo.append(str(host.tokenizer.decode(p, skip_special_tokens=True)))
    return await generate(
        request, body, prompts, False, body.max_tokens, echo if body.echo else None
    )


@router.post("/v1/chat/completions")
async def chat(request: Request):
    body, err = await parse(request, ChatBody)
    if err is not None:
        return err
    tok = state(request).engine.hosts[body.model].tokenizer
    try:
        msgs = body.chat()
    except Refused as e:
        return error(400, str(e), e.param)
    enc: Any = tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=True)
    if not isinstance(enc, list):  # newer transformers return a BatchEncoding
        enc = list(enc["input_ids"])
    return await generate(request, body, [[int(t) for t in enc]], True, body.output_cap)
