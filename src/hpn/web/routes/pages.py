"""The HTML pages (runs, one run, a comparison, the fabric, a new job) and static files."""

from __future__ import annotations

from importlib import resources

from fastapi import APIRouter, HTTPException, Response
from fastapi.responses import HTMLResponse

from hpn.web import pages
from hpn.web.routes.site import Site

STATIC = {"dash.js": "text/javascript", "dash.css": "text/css"}


def router(site: Site) -> APIRouter:
    """The pages over ``site``'s store."""
    router = APIRouter()
    index, root, run_of = site.index, site.root, site.run_of

    @router.get("/", response_class=HTMLResponse)
    def page_index() -> str:
        return pages.runs_page(index.rows(limit=500), str(root))

    @router.get("/runs/{run_id}", response_class=HTMLResponse)
    def page_run(run_id: str) -> str:
        from hpn.plots import available

        r = run_of(run_id)
        return pages.run_page(r, available(r))

    @router.get("/compare", response_class=HTMLResponse)
    def page_compare(a: str, b: str) -> str:
        from hpn.plots import available
        from hpn.store.compare import compare

        ra, rb = run_of(a), run_of(b)
        return pages.compare_page(ra, rb, compare([ra, rb]), available(ra), available(rb))

    @router.get("/fabric", response_class=HTMLResponse)
    def page_fabric(preset: str = "hpn", run: str | None = None, view: str = "segment") -> str:
        from hpn.topology.presets import PRESETS

        if run:
            run_of(run)
        return pages.fabric_page(list(PRESETS), preset, run, "pod" if view == "pod" else "segment")

    @router.get("/new", response_class=HTMLResponse)
    def page_new() -> str:
        return pages.new_page()

    @router.get("/static/{name}")
    def static(name: str) -> Response:
        if name == "plotly.min.js":
            from hpn.plots.html import plotly_js

            return Response(
                plotly_js(),
                media_type="text/javascript",
                headers={"Cache-Control": "max-age=86400"},
            )
        if name not in STATIC:
            raise HTTPException(404, "no such file")
        text = resources.files("hpn.web").joinpath("static", name).read_text()
        return Response(text, media_type=STATIC[name])

    return router
