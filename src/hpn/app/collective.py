"""``hpn collective``: an nccl-tests-style sweep of one collective on a fabric."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import Field, field_validator

from hpn.app.base import Command, Outcome, Result
from hpn.app.common import FabricSpec, RoutingTable, fabric_field, routing_field
from hpn.config import Model
from hpn.units import format_size, parse_duration, parse_size_list

if TYPE_CHECKING:  # the domain is imported when the command runs (a fast ``hpn --help``)
    from hpn.workload.collectives.run import SizeResult


class CollectiveOptions(Model):
    """The ``[collective]`` table."""

    op: str = Field(
        "allreduce",
        description="allreduce, allgather, reducescatter, alltoall, multi-allreduce, "
        "sendrecv or broadcast",
    )
    gpus: int = Field(448, description="GPUs in the job")
    per_host: int | None = Field(None, description="GPUs per host (default: all of a host)")
    sizes: str = Field(
        "1M,4M,16M,64M,256M,1G,4G",
        description="sizes as nccl-tests counts them; bare M/G are binary",
    )
    algo: str | None = Field(
        None, description="ring, tree, hd, hier, nvls, direct or pxn (default per op)"
    )
    routing: str | None = Field(
        None, description="routing policy (default: the fabric's: hpn on HPN presets, else ecmp)"
    )
    seed: int = Field(1, ge=0, le=2**63 - 1, description="seed for the routing")
    channels: int | None = Field(
        None, description="rings/trees per collective (default: GPUs per host)"
    )
    conns: int = Field(2, description="connections (QPs) per GPU pair")
    alpha: str = Field("2us", description="software latency per algorithm step")
    jobs: int = Field(1, description="identical jobs at once on consecutive hosts")
    stepwise: bool = Field(False, description="one flow per step (validation; small jobs)")

    @field_validator("sizes")
    @classmethod
    def _positive(cls, value: str) -> str:
        if any(s <= 0 for s in parse_size_list(value, "collective.sizes")):
            raise ValueError("every size must be > 0")
        return value


class CollectiveConfig(Model):
    """``hpn collective``: ``[fabric]`` and ``[collective]``."""

    fabric: FabricSpec = fabric_field()
    routing: RoutingTable = routing_field()
    collective: CollectiveOptions = Field(default_factory=CollectiveOptions)


@dataclass
class CollectiveResult(Result):
    op: str
    algo: str
    routing: str
    routing_detail: str
    seed: int
    gpus: int
    per_host: int
    hosts: int
    jobs: int
    results: list[SizeResult]
    wall_s: float
    preset: str | None

    def lines(self) -> list[str]:
        out = [
            f"# {self.op} ({self.algo}) on {self.preset}: {self.gpus} GPUs = "
            f"{self.hosts} hosts x {self.per_host}, routing {self.routing} (seed {self.seed}), "
            f"jobs {self.jobs}",
            f"#{'size':>11} {'time (us)':>12} {'algbw (GB/s)':>13} {'busbw (GB/s)':>13}",
        ]
        out += [
            f"{format_size(r['size_bytes']):>12} {r['time_s'] * 1e6:>12.1f} "
            f"{r['algbw_GBps']:>13.2f} {r['busbw_GBps']:>13.2f}"
            for r in self.results
        ]
        return [*out, f"# wall time {self.wall_s:.2f} s"]


def run(cfg: CollectiveConfig) -> Outcome[CollectiveResult]:
    """Simulate the sweep: one collective per size, algbw and busbw."""
    from hpn.errors import InputError
    from hpn.topology import build
    from hpn.workload.collectives import Params, sweep

    p = cfg.collective
    if p.jobs < 1:
        raise InputError("jobs", f"must be >= 1, got {p.jobs}")
    fabric = build(cfg.fabric)
    knobs = Params(
        channels=p.channels,
        conns=p.conns,
        alpha=parse_duration(p.alpha, "alpha"),
        stepwise=p.stepwise,
    )
    out = sweep(
        fabric,
        p.op,
        parse_size_list(str(p.sizes), "--sizes"),
        p.gpus,
        p.per_host,
        p.algo,
        p.routing,
        p.seed,
        knobs,
        p.jobs,
        hashing=cfg.routing.hashing(),
    )
    out["preset"] = getattr(fabric.spec, "preset", None)
    result = CollectiveResult.from_dict(out)
    rows = result.results
    label = f"{result.preset} {result.routing}"
    tables = {
        "busbw": {
            "fabric": [label] * len(rows),
            "size_bytes": [r["size_bytes"] for r in rows],
            "time_s": [r["time_s"] for r in rows],
            "algbw_gbps": [r["algbw_GBps"] for r in rows],
            "busbw_gbps": [r["busbw_GBps"] for r in rows],
        }
    }
    return Outcome(result, tables, wall_s=result.wall_s)


COMMAND = Command("collective", CollectiveConfig, run, flags=("fabric", "collective", "routing"))
