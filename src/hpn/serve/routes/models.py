"""GET /v1/models: the served models and each one's context limit."""

from __future__ import annotations

from fastapi import APIRouter, Request

from hpn.serve.routes import state

router = APIRouter()


@router.get("/v1/models")
async def list_models(request: Request):
    s = state(request)
    data = [
        {
            "id": m,
            "object": "model",
            "created": 0,
            "owned_by": "hpn",
            "max_model_len": min(s.engine.max_len(m), s.limits.max_model_len or 1 << 62),
        }
        for m in s.models
    ]
    return {"object": "list", "data": data}
