"""``hpn collective``: an nccl-tests-style sweep of one collective on a fabric."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field, field_validator

from hpn.app.base import Command, Outcome
from hpn.app.common import FabricSpec, RoutingTable, fabric_field, routing_field
from hpn.app.limits import ALPHA_MAX, bounded
from hpn.config import Model, Seconds
from hpn.errors import InputError
from hpn.gpus import CATALOG
from hpn.units import format_size, parse_sizes

if TYPE_CHECKING:  # the domain is imported when the command runs (a fast ``hpn --help``)
    from hpn.workload.collectives.result import CollectiveResult


class CollectiveOptions(Model):
    """The ``[collective]`` table."""

    op: str = Field(
        "allreduce",
        description="allreduce, allgather, reducescatter, alltoall, multi-allreduce, "
        "sendrecv, broadcast or reduce",
    )
    gpus: int = Field(448, description="GPUs in the job")
    per_host: int | None = Field(None, description="GPUs per host (default: all of a host)")
    sizes: str = Field(
        "1M,4M,16M,64M,256M,1G,4G",
        description="sizes as nccl-tests counts them (bare M/G are binary): a list, or "
        "BEGIN:END:FACTOR like nccl-tests -b -e -f",
    )
    algo: str | None = Field(
        None,
        description="auto (NCCL's tuner), or NCCL_ALGO syntax over ring, tree, nvls, nvlstree, "
        "collnetdirect, collnetchain, pat (lists, ^ to exclude); or one of hd, hier, direct, "
        "pxn",
    )
    proto: str = Field(
        "auto", description="auto, or NCCL_PROTO syntax over simple, ll, ll128 (^ excludes)"
    )
    gpu: str = Field(
        "H800",
        description="GPU type NCCL's model reads: " + ", ".join(g.name for g in CATALOG.values()),
    )
    nccl: str = Field(
        "2.30.7",
        description="NCCL release whose tuner runs: 2.30.7 (current) or 2.18.3 (the paper's)",
    )
    nic_path: str = Field(
        "pxb",
        description="GPU-NIC PCIe path as NCCL's topology names it: pix, pxb, pxn, phb, sys "
        "(NCCL enables LL128 by default only up to pxb, pxn on SM90+)",
    )
    cpu: str = Field(
        "intel",
        description="the hosts' CPU vendor NCCL's tuner reads: intel or amd (AMD: 2 us of "
        "network overhead per ring step instead of 1, and NCCL's AMD row of LL caps)",
    )
    model: str = Field(
        "nccl",
        description="nccl (NCCL's tuner: algorithm, protocol, channels, latency) or alpha "
        "(alpha per step, the default algorithm per op, no protocol)",
    )
    routing: str | None = Field(
        None, description="routing policy (default: the fabric's: hpn on HPN presets, else ecmp)"
    )
    seed: int = Field(1, ge=0, le=2**63 - 1, description="seed for the routing")
    channels: int | None = Field(
        None,
        ge=1,
        le=64,
        description="channels, 1..64: NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS (default: "
        "NCCL's; alpha model: GPUs per host)",
    )
    conns: int = Field(2, description="connections (QPs) per GPU pair")
    alpha: Seconds = bounded("2us", "software latency per algorithm step", ge=0, le=ALPHA_MAX)
    jobs: int = Field(1, description="identical jobs at once on consecutive hosts")
    host_order: str = Field(
        "fabric",
        description="the launcher's host list, which NCCL chains in rank order: fabric, random "
        "or swaps=K (K random transpositions of fabric order)",
    )
    order_seed: int = Field(1, ge=0, le=2**63 - 1, description="seed for --host-order")
    first_host: int = Field(
        0,
        ge=0,
        description="the job's first host in fabric order (hpn topo summary: hosts per "
        "segment; a job of H hosts across a segment boundary B starts at B - H/2)",
    )
    stepwise: bool = Field(False, description="one flow per step (validation; small jobs)")

    @field_validator("sizes")
    @classmethod
    def _positive(cls, value: str) -> str:
        sizes = parse_sizes(value, "--sizes")
        if any(s <= 0 for s in sizes):
            raise ValueError("every size must be > 0")
        twice = [s for i, s in enumerate(sizes) if s in sizes[:i]]
        if twice:
            raise ValueError(f"{format_size(twice[0])} given twice; give each size once")
        return value


class CollectiveConfig(Model):
    """``hpn collective``: ``[fabric]`` and ``[collective]``."""

    fabric: FabricSpec = fabric_field()
    routing: RoutingTable = routing_field()
    collective: CollectiveOptions = Field(default_factory=CollectiveOptions)


def run(cfg: CollectiveConfig) -> Outcome[CollectiveResult]:
    """Simulate the sweep: one collective per size, algbw and busbw."""
    from hpn.topology import build
    from hpn.workload.collectives import Params, sweep

    p = cfg.collective
    if p.jobs < 1:
        raise InputError("jobs", f"must be >= 1, got {p.jobs}")
    from hpn.workload.collectives.placement import host_order

    host_order(2, p.host_order)  # the flag's syntax, before the fabric is built
    fabric = build(cfg.fabric)
    from hpn.workload.collectives.tuning import GPUS

    GPUS.get(p.gpu)
    if p.stepwise and p.model != "alpha":
        raise InputError("stepwise", "needs --model alpha (NCCL's model has no step flows)")
    knobs = Params(
        channels=p.channels,
        conns=p.conns,
        alpha=float(p.alpha),
        stepwise=p.stepwise,
        model=p.model,
        proto=p.proto,
        gpu=p.gpu,
        nccl=p.nccl,
        nic_path=p.nic_path,
        cpu=p.cpu,
    )
    result = sweep(
        fabric,
        p.op,
        parse_sizes(str(p.sizes), "--sizes"),
        p.gpus,
        p.per_host,
        p.algo,
        p.routing,
        p.seed,
        knobs,
        p.jobs,
        hashing=cfg.routing.hashing(),
        host_order=p.host_order,
        order_seed=p.order_seed,
        first_host=p.first_host,
    )
    rows = result.results
    label = f"{result.preset} {result.routing}"
    tables = {
        "busbw": {
            "fabric": [label] * len(rows),
            "size_bytes": [r["size_bytes"] for r in rows],
            "time_s": [r["time_s"] for r in rows],
            "algbw_gbps": [r["algbw_GBps"] for r in rows],
            "busbw_gbps": [r["busbw_GBps"] for r in rows],
            "algo": [r["algo"] for r in rows],
            "proto": [r["proto"] for r in rows],
            "channels": [r["channels"] for r in rows],
        }
    }
    return Outcome(result, tables, wall_s=result.wall_s)


COMMAND = Command("collective", CollectiveConfig, run, flags=("fabric", "collective", "routing"))
