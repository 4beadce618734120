"""The HTTP routes of the OpenAI-compatible server (`hpn.serve.server`), one `APIRouter`
per purpose: `completions` (POST /v1/completions, /v1/chat/completions, with `generate`
running the engine requests and their answers), `models` (GET /v1/models) and `ops`
(GET /health, /metrics). Each handler reads the engine and limits from the app's state
(`State`, set by `server.create_app`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fastapi import Request
from fastapi.responses import JSONResponse

from hpn.serve.engine import Engine


@dataclass(frozen=True)
class Limits:
    """Bounds on what one request may ask for (None: the model's context)."""

    max_body_bytes: int = 1 << 20
    max_prompt_tokens: int | None = None
    max_tokens: int | None = None
    max_model_len: int | None = None  # lowers every model's context
    max_waiting: int = 4096  # engine requests at once; more get a 503


@dataclass
class State:
    """What every route of one app shares: the engine, the limits, engine requests live."""

    engine: Engine
    limits: Limits
    models: list[str] = field(default_factory=list)
    live: int = 0


def state(request: Request) -> State:
    """The app's `State` (`server.create_app` sets it)."""
    return request.app.state.hpn


def error(status: int, message: str, param: str | None = None, kind: str = "invalid_request_error"):
    return JSONResponse(
        {"error": {"message": message, "type": kind, "param": param, "code": status}},
        status_code=status,
    )
