"""``/api/fabric``: segment and pod views of a fabric (a preset's or a run's), switch ports."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from hpn.errors import InputError
from hpn.web.routes.site import Site


def router(site: Site) -> APIRouter:
    """The fabric API (a run's link utilization where it has one)."""
    router = APIRouter()
    run_of = site.run_of

    def fabric_fields(preset: str | None, run: str | None) -> dict[str, Any]:
        if run:
            fields = run_of(run).config.get("fabric")
            if not isinstance(fields, dict):
                raise InputError("run", f"run {run} has no [fabric] in its config")
            return fields
        return {"preset": preset or "hpn"}

    @router.get("/api/fabric")
    def api_fabric(
        preset: str | None = None, run: str | None = None, pod: int = 0, segment: int = 0
    ) -> dict[str, Any]:
        from hpn.web.fabric import fabric_of, segment_view

        view = segment_view(fabric_of(fabric_fields(preset, run)), pod, segment)
        view["has_utilization"] = run is not None and "links" in run_of(run).tables
        return view

    @router.get("/api/fabric/pod")
    def api_fabric_pod(
        preset: str | None = None, run: str | None = None, pod: int = 0
    ) -> dict[str, Any]:
        from hpn.web.fabric import fabric_of, pod_view

        view = pod_view(fabric_of(fabric_fields(preset, run)), pod)
        view["has_utilization"] = run is not None and "links" in run_of(run).tables
        return view

    @router.get("/api/fabric/switch/{node}")
    def api_switch(node: int, preset: str | None = None, run: str | None = None):
        from hpn.web.fabric import fabric_of, switch_ports

        util = None
        if run and "links" in run_of(run).tables:
            util = run_of(run).table("links")
        return switch_ports(fabric_of(fabric_fields(preset, run)), node, util)

    return router
