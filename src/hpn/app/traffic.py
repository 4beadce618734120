"""``hpn traffic``: a synthetic traffic pattern on a fabric, simulated at flow level."""

from __future__ import annotations

import resource
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

from hpn.app.base import Command, Outcome, Result
from hpn.app.common import FabricSpec, Progress, RoutingTable, fabric_field, routing_field
from hpn.config import Bytes, FilePath, Model
from hpn.units import format_duration, format_size

MIN_FLOW = 64.0
"""Bytes per flow at least: the flow model is a fluid of packets, and one frame is 64 bytes."""


class TrafficOptions(Model):
    """The ``[traffic]`` table."""

    pattern: str = Field("permutation", description="permutation, all-to-all, incast or rail-ring")
    size: Bytes = Field("2MB", description="bytes per flow, e.g. 2MB")
    matrix: FilePath | None = Field(
        None,
        description="run a traffic matrix file instead of a pattern: htsim connection matrix "
        "(.cm) or CSV src,dst,bytes[,start] (.csv); host i = the fabric's i-th endpoint",
    )
    write_matrix: FilePath | None = Field(
        None, description="write the flows run as a matrix file (.csv: CSV, else htsim)"
    )
    routing: str | None = Field(
        None, description="routing policy (default: the fabric's: hpn on HPN presets, else ecmp)"
    )
    seed: int = Field(1, ge=0, le=2**63 - 1, description="seed for the pattern and the routing")
    endpoints: int | None = Field(
        None, description="use only the first N endpoints (GPUs or hosts)"
    )

    @field_validator("size")
    @classmethod
    def _frame(cls, value: float) -> float:
        if not value >= MIN_FLOW:  # (a flow of a few bytes: the engine's batches crawl)
            raise ValueError(f"must be >= {MIN_FLOW:g} bytes (one Ethernet frame)")
        return value


class TrafficConfig(Model):
    """``hpn traffic``: ``[fabric]`` and ``[traffic]``."""

    fabric: FabricSpec = fabric_field()
    routing: RoutingTable = routing_field()
    traffic: TrafficOptions = Field(default_factory=TrafficOptions)


@dataclass
class TrafficResult(Result):
    preset: str | None
    pattern: str
    routing: str
    routing_detail: str
    seed: int
    size_bytes: float
    flows: int
    ideal_fct_s: float
    fct_s: dict[str, float]
    fct_over_ideal: dict[str, float]
    makespan_s: float
    links_used: int
    link_peak_util_max: float
    link_mean_util_of_used: float
    rate_computations: int
    wall_s: float
    peak_rss_mb: float

    title = "hpn traffic"

    def _pattern(self) -> str:
        if self.pattern.startswith("matrix"):
            return self.pattern
        return f"{self.pattern} ({format_size(self.size_bytes)} per flow)"

    def rows(self) -> list[tuple[str, Any]]:
        d, f, r = format_duration, self.fct_s, self.fct_over_ideal
        return [
            ("fabric", self.preset),
            ("pattern", self._pattern()),
            ("routing", f"{self.routing_detail} (seed {self.seed})"),
            ("flows", self.flows),
            ("ideal FCT", d(self.ideal_fct_s)),
            ("FCT min / p50", f"{d(f['min'])} / {d(f['p50'])}"),
            ("FCT p99 / max", f"{d(f['p99'])} / {d(f['max'])}"),
            ("FCT / ideal p50, p99", f"{r['p50']:.2f}, {r['p99']:.2f}"),
            ("makespan", d(self.makespan_s)),
            ("links used", self.links_used),
            ("mean utilization of used links", f"{self.link_mean_util_of_used:.1%}"),
            ("wall time", f"{self.wall_s:.2f} s"),
            ("peak memory", f"{self.peak_rss_mb:.0f} MB"),
        ]


def run(cfg: TrafficConfig, progress: Progress | None = None) -> Outcome[TrafficResult]:
    """Build the pattern, simulate it and summarize FCTs and link use."""
    import time

    import numpy as np

    from hpn.engine import simulate
    from hpn.routing import describe
    from hpn.routing.config import command_router
    from hpn.store.engine_tables import result_tables, sample_interval
    from hpn.topology import build
    from hpn.workload import make_pattern
    from hpn.workload.matrix import dag_matrix, matrix_dag, read_matrix, write_matrix

    t = cfg.traffic
    fabric = build(cfg.fabric)
    size = float(t.size)
    router = command_router(fabric, t.routing, t.seed, cfg.routing)
    t0 = time.perf_counter()
    if t.matrix is not None:
        dag = matrix_dag(read_matrix(t.matrix), fabric)
        pattern = f"matrix {Path(t.matrix).name} ({dag.num_flows:,} flows)"
    else:
        dag = make_pattern(t.pattern, fabric, size, seed=t.seed, limit=t.endpoints)
        pattern = t.pattern
    if t.write_matrix is not None:
        note = f"hpn traffic: {pattern} on {getattr(fabric.spec, 'preset', 'imported')}"
        write_matrix(dag_matrix(dag, fabric), t.write_matrix, note=note)
    interval = sample_interval(fabric, dag)
    res = simulate(fabric, dag, router, seed=t.seed, progress=progress, sample_interval=interval)
    wall = time.perf_counter() - t0
    cap = res.paths.per_flow_min(fabric.links.capacity)
    ideal = 8 * res.size / cap + res.path_latency
    with np.errstate(divide="ignore", invalid="ignore"):
        slow = np.where(ideal > 0, res.fct / ideal, 1.0)
    used = res.link_bytes > 0
    tables = result_tables(fabric, res)
    result = TrafficResult(
        preset=getattr(fabric.spec, "preset", None),
        pattern=pattern,
        routing=router.name,
        routing_detail=describe(router),
        seed=t.seed,
        size_bytes=size if t.matrix is None else float(np.mean(res.size)) if len(res.size) else 0.0,
        flows=len(res.size),
        ideal_fct_s=float(np.median(ideal)) if len(ideal) else 0.0,
        fct_s=res.fct_summary(),
        fct_over_ideal={
            "p50": float(np.median(slow)) if len(slow) else 1.0,
            "p99": float(np.percentile(slow, 99)) if len(slow) else 1.0,
        },
        makespan_s=res.makespan,
        links_used=int(used.sum()),
        link_peak_util_max=float(res.link_peak_util.max()) if used.any() else 0.0,
        link_mean_util_of_used=float(res.link_mean_util[used].mean()) if used.any() else 0.0,
        rate_computations=res.stats["rate_computations"],
        wall_s=wall,
        peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    )
    return Outcome(result, tables, wall_s=wall)


COMMAND = Command(
    "traffic",
    TrafficConfig,
    run,
    flags=("fabric", "traffic", "routing"),
    progress=True,
)
