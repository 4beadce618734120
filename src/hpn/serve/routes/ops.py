"""GET /health (policy, instances, the scheduler's clock) and GET /metrics (Prometheus
text, vLLM's names: `hpn.serve.metrics`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from hpn.serve.routes import state

router = APIRouter()


@router.get("/health")
async def health(request: Request):
    engine = state(request).engine
    return {
        "status": "ok",
        "policy": engine.policy.name,
        "instances": len(engine.backend.instances),
        "clock_s": engine.backend.now(),  # the scheduler's clock (policies' timers)
    }


@router.get("/metrics")
async def metrics(request: Request):
    from prometheus_client import CONTENT_TYPE_LATEST

    sink: Any = state(request).engine.sink  # ServeMetrics (the server builds it)
    return Response(sink.text(), media_type=CONTENT_TYPE_LATEST)
