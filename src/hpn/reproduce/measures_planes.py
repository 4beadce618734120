"""The dual-plane ablation of P §6.1: cross-segment collective traffic on an HPN Pod,
dual-plane against the same fabric single-plane (every ToR to every Agg).

The paper states only the result ("up to +71.6 %" for cross-segment traffic), read here as
throughput: the bytes crossing the Agg tier are the same on both designs. The setting is
ours, chosen to put the traffic where the single-plane design differs: the Fig 19 job
(:func:`~hpn.reproduce.measures_hpn.boundary_job`: 4-32 full hosts, half on each side of a
2-segment boundary, the fabric's routing, NCCL 2.18.3) running the paper's network-bound
collective, the Multi-AllReduce of Fig 17c (one ring per rail, all of its traffic between
hosts), at Fig 17c's sizes. A ring crosses the segment boundary twice per rail, through the
Aggs; single-plane, each Agg picks which of the destination pair's two ToRs (so which NIC
port) a flow arrives on, and that choice is correlated with the source ToR's (P §6.1).
"""

from __future__ import annotations

from typing import Any

from hpn.reproduce.context import Context
from hpn.reproduce.measure import Measured, gain, measure
from hpn.reproduce.measures_hpn import FIG19_HOSTS, PAPER_NCCL, PLANES, boundary_job

Jobs = dict[str, dict[str, Any]]
ABLATION_OP = "multi-allreduce"
ABLATION_SIZES = "64M,256M,1G,4G"  # Fig 17c's Multi-AllReduce sizes


def _busbw(ctx: Context) -> dict[str, dict[int, list[tuple[int, float]]]]:
    """busbw (GB/s) per plane design, host count and size of the ablation's runs."""
    return {
        name: {
            h: [
                (int(r["size_bytes"]), float(r["busbw_GBps"]))
                for r in boundary_job(ctx, ABLATION_OP, h, dual, ABLATION_SIZES, "s6.1 ablation")
            ]
            for h in FIG19_HOSTS
        }
        for name, dual in PLANES
    }


def port_split(hosts: int, dual: bool, size: float = 4 * 2**30) -> dict[str, float]:
    """Bytes on the two ToR -> NIC ports of each receiving NIC in one ablation run (4 GiB):
    the largest share of a NIC's bytes on its busier port, the NICs above one half, and the
    collective's time.

    The run is the ``hpn collective`` one of :func:`_busbw` (same placement, tuner, routing
    and seed), simulated here to read the engine's per-link bytes, which the command does
    not report.
    """
    import numpy as np

    from hpn.engine import simulate
    from hpn.routing import router_for
    from hpn.topology import build
    from hpn.topology.fabric import NodeKind
    from hpn.workload.collectives import Params
    from hpn.workload.collectives.context import nvlink_data_fabric
    from hpn.workload.collectives.placement import host_gpus
    from hpn.workload.collectives.run import collective_dag

    fabric = build("hpn", segments=2, dual_plane=dual)
    boundary = int(np.sum(fabric.nodes.segment[host_gpus(fabric)[:, 0]] == 0))
    p = Params(nccl=PAPER_NCCL)
    ctx, marks, _ = collective_dag(
        fabric, ABLATION_OP, size, hosts * 8, params=p, first_host=boundary - hosts // 2
    )
    res = simulate(nvlink_data_fabric(fabric, p), ctx.dag, router_for(fabric, seed=1), seed=1)
    (start, end), *_ = marks
    lk, kind = fabric.links, fabric.nodes.kind
    down = np.flatnonzero((kind[lk.src] == NodeKind.TOR) & (kind[lk.dst] == NodeKind.GPU))
    by_nic: dict[int, list[float]] = {}
    for link in down:
        by_nic.setdefault(int(lk.dst[link]), [0.0, 0.0])[int(lk.port[link])] += float(
            res.link_bytes[link]
        )
    shares = [max(b) / sum(b) for b in by_nic.values() if sum(b) > 0]
    return {
        "busier_share_max": max(shares),
        "nics_uneven": sum(s > 0.5 + 1e-9 for s in shares),
        "nics": len(shares),
        "time_s": float(res.task_finish[end] - res.task_start[start]),
    }


@measure("dual_plane_ablation")
def dual_plane_ablation(ctx: Context, jobs: Jobs) -> Measured:
    """Dual-plane over single-plane, Multi-AllReduce across a 2-segment boundary: the largest
    busbw gain over 4-32 hosts and 64 MiB-4 GiB (the per-host-count gains are the figure)."""
    bw = _busbw(ctx)
    one, two = bw["single-plane"], bw["dual-plane"]
    per_host = {
        h: [(s, gain(d, o)) for (s, o), (_, d) in zip(one[h], two[h], strict=True)]
        for h in FIG19_HOSTS
    }
    top = {h: max(g, key=lambda sg: sg[1]) for h, g in per_host.items()}
    best = max(top, key=lambda h: top[h][1])
    low = min(g for gs in per_host.values() for _, g in gs)
    pts: list[list[Any]] = [[f"{h} hosts", g] for h, (_, g) in top.items()]
    pts.append(["up to", top[best][1]])
    split = {name: port_split(FIG19_HOSTS[0], dual) for name, dual in PLANES}
    s1, s2 = split["single-plane"], split["dual-plane"]
    at = top[best][0] / 2**20
    detail = (
        f"largest at {best} hosts, {at:g} MiB: busbw {dict(one[best])[top[best][0]]:.1f} -> "
        f"{dict(two[best])[top[best][0]]:.1f} GB/s; gains over all runs {low:+.1f} to "
        f"{top[best][1]:+.1f} %; {FIG19_HOSTS[0]} hosts, 4 GiB: the busier ToR port toward a "
        f"receiving NIC carries up to {s1['busier_share_max']:.0%} of its bytes single-plane "
        f"({s1['nics_uneven']} of {s1['nics']} NICs uneven), "
        f"{s2['busier_share_max']:.0%} dual-plane ({s2['nics_uneven']} uneven)"
    )
    return Measured(top[best][1], {"model": pts}, detail)
