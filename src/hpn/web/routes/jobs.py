"""``/api/commands``, ``/api/jobs``: what can be run, and runs submitted, listed, cancelled."""

from __future__ import annotations

import json
import tomllib
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse

from hpn.config import dump_toml, files_within
from hpn.errors import InputError
from hpn.web.limits import MAX_BODY, MAX_DEPTH, depth_of, finite, nesting, no_constant
from hpn.web.routes.site import Site


def router(site: Site) -> APIRouter:
    """The commands and jobs API (a job's config bounded in size and nesting)."""
    router = APIRouter()
    jobs, data = site.jobs, site.data

    @router.get("/api/commands")
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

    @router.post("/api/jobs")
    async def api_submit(request: Request) -> JSONResponse:
        if not request.headers.get("content-type", "").startswith("application/json"):
            raise HTTPException(415, "send application/json")
        raw = await request.body()
        if len(raw) > MAX_BODY:
            raise HTTPException(413, f"body over {MAX_BODY} bytes")
        if nesting(raw) > MAX_DEPTH:
            raise InputError("body", f"JSON nested deeper than {MAX_DEPTH} levels")
        try:
            body = json.loads(raw, parse_float=finite, parse_constant=no_constant)
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

    @router.get("/api/jobs")
    def api_jobs() -> dict[str, Any]:
        return {"jobs": [j.view() for j in jobs.list()], "limits": jobs.limits()}

    @router.get("/api/jobs/{job_id}")
    def api_job(job_id: str) -> dict[str, Any]:
        job = jobs.get(job_id)
        if job is None:
            raise HTTPException(404, "no such job")
        return job.view()

    @router.delete("/api/jobs/{job_id}")
    def api_cancel(job_id: str) -> dict[str, Any]:
        job = jobs.cancel(job_id)
        if job is None:
            raise HTTPException(404, "no such job")
        return job.view()

    return router
