"""``/api/runs``, ``/api/compare``: the store's runs, their charts and files, a comparison."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Response
from fastapi.responses import FileResponse

from hpn.web.routes.site import Site


def router(site: Site) -> APIRouter:
    """The runs API over ``site``'s store."""
    router = APIRouter()
    index, run_of = site.index, site.run_of

    @router.get("/api/runs")
    def api_runs(command: str | None = None, limit: int = 200) -> dict[str, Any]:
        where, params = ("command = ?", (command,)) if command else ("1", ())
        rows = index.rows(where, params, limit=min(max(limit, 1), 1000))
        return {"runs": [{k: v for k, v in r.items() if k != "path"} for r in rows]}

    @router.get("/api/runs/{run_id}")
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

    @router.get("/api/runs/{run_id}/charts/{kind}")
    def api_chart(run_id: str, kind: str) -> Response:
        from hpn.plots import draw
        from hpn.plots.html import figure

        fig = figure(draw(kind, [run_of(run_id)]))
        return Response(fig.to_json(), media_type="application/json")

    @router.get("/api/runs/{run_id}/files/{name:path}")
    def api_file(run_id: str, name: str) -> FileResponse:
        base = run_of(run_id).path.resolve()
        target = (base / name).resolve()
        if not target.is_relative_to(base) or not target.is_file() or target.name[0] == ".":
            raise HTTPException(404, "no such file in this run")
        return FileResponse(target)

    @router.get("/api/compare")
    def api_compare(a: str, b: str) -> dict[str, Any]:
        from hpn.store.compare import compare

        return compare([run_of(a), run_of(b)])

    return router
