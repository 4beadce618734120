"""NCCL 2.18.3's ``ncclTopoTuneModel`` for one entry (``v2.18.3-1:src/graph/tuning.cc``
lines 157-242), the paper's NCCL; the tables are in :mod:`.versions` (``V2_18_3``).

Where it differs from 2.30.7 (:func:`.tuning.cost`), by line of 2.18.3's tuning.cc:

- 166-169: Broadcast, Reduce, AllGather, ReduceScatter run Ring only (no NVLS AllGather, no PAT).
- 178: Ring LL ×1/4 across hosts or for AllReduce/Reduce, else ×1/3 (2.30: ×1/2).
- 179: Ring LL128 ×0.7 at one GPU per host, else ×0.92.
- 174-175, 197-198: NVLS and NVLSTree take ``nChannels × bw`` with a fixed ratio, 5/6 (NVLS)
  and ``0.70 · nNodes / (2(nNodes − 1))`` (NVLSTree): no NVLS efficiency, no NVLSTree cap.
- 56-59, 235-238: NVLS/NVLSTree base latency 23 µs; NVLSTree adds ``2(nNodes − 1) × 19`` µs,
  linear in hosts (2.30: ``2 log2(nNodes)`` steps), so NVLSTree wins only at large sizes.
- 161: a ring AllReduce counts ``2 nNodes`` network steps (2.30: ``2(nNodes − 1)``).
- 203-204: the network latency of the algorithm itself at one GPU per host (2.30 takes Tree's).
- 232: CollNetDirect arity serialization 0.5 µs (2.30: 0.4).
"""

from __future__ import annotations

from typing import Any

from hpn.workload.collectives.versions import (
    CNCHAIN,
    CNDIRECT,
    CPUS,
    LL,
    LL128,
    NET,
    NET_OVERHEAD,
    NVLINK,
    NVLS,
    NVLSTREE,
    PCI,
    RING,
    SIMPLE,
    TREE,
    Cost,
    log2i,
)


def cost_218(c: Any, op: str, a: int, p: int) -> Cost | None:
    """One (algorithm, protocol) entry as NCCL 2.18.3 computes it (None where it skips);
    ``c`` is a :class:`.tuning.Comm`."""
    v = c.nccl
    n, nodes = c.ranks, c.nodes
    ppn = n / nodes
    if op != "allreduce" and a != RING:
        return None  # tuning.cc:166-169
    if a in (NVLS, NVLSTREE) and p != SIMPLE:
        return None
    if a > NVLSTREE:
        return None  # no PAT in 2.18
    nsteps = (
        2 * (n - 1) if op == "allreduce" else n - 1 if op in ("allgather", "reducescatter") else n
    )
    g = c.graphs.get(a) or c.graphs[RING if a in (CNDIRECT, CNCHAIN) else TREE]
    arch, i2 = min(c.gpu.arch, 2), (nodes - 1 if nodes <= 2 else 2)
    i1 = arch if nodes == 1 else CPUS.index(c.cpu)  # multi-node: the CPU's row
    ll_max = v.ll_max_bw[i1][i2]
    collnet = a in (CNDIRECT, CNCHAIN)

    def busbw(bw: float) -> tuple[float, float]:
        if a in (NVLS, NVLSTREE) and g.channels < 1:
            return 0.0, 0.0
        bus, eff = g.channels * bw, 1.0
        if a == RING and p == LL:
            f = 0.25 if nodes > 1 or op in ("allreduce", "reduce") else 1 / 3
            bus, eff = min(ll_max, bus * f), f
        if a == RING and p == LL128:
            f = 0.7 if ppn < 2 else 0.92
            bus, eff = min(bus * f, g.channels * v.per_ch_ring_ll128[arch][i2]), f
        if a == TREE:
            bus, eff = min(bus * 0.92, g.channels * v.per_ch_tree[arch][i2]), 0.92
        if a == TREE and p == LL:
            bus, eff = min(bus / 3.8, ll_max), eff / 3.8
        if a == TREE and p == LL128:
            x = 7.0 / 9.0 if nodes == 1 else 120.0 / 128.0
            bus, eff = min(bus * x, g.channels * v.per_ch_tree_ll128[arch][i2]), eff * x
        if collnet and p != SIMPLE:
            bus = 0.0
        if a == CNDIRECT and p == SIMPLE:
            factor = ppn / g.channels
            bus /= factor - (factor - 1) / 2
            if c.gpu.compcap >= 90:
                bus, eff = bus * 0.85, eff * 0.85
        if a == RING:
            ratio = n / nsteps
        elif a == NVLS:
            ratio = eff = 5.0 / 6.0
        elif a == NVLSTREE:
            ratio = 0.70 * nodes / (2 * (nodes - 1))
            eff = 0.70
        else:
            ratio = 0.5
        return bus * ratio, eff

    bw, eff = busbw(g.bw_intra if nodes <= 2 or collnet else g.bw_inter)
    cap, _ = busbw(float("inf"))
    if bw <= 0:
        return None
    intra_hw = NVLINK if g.nvlink else PCI
    hw = intra_hw if nodes == 1 else NET
    lat = v.base_lat[a][p]
    intra_lat = v.hw_lat[intra_hw][a][p]
    inter_lat = v.hw_lat[NET][a][p]  # + latencyInter: 0 for IB/RoCE NICs (search.cc:522)
    if a == RING:
        if op in ("reduce", "broadcast"):
            lat += v.hw_lat[hw][a][p]  # sameChannels rings
        else:
            over = NET_OVERHEAD[c.cpu] * (3 if p == SIMPLE else 1) if nodes > 1 else 0.0
            intra_lat = max(intra_lat, over)
            inter_steps = (2 * nodes if nodes > 1 else 0) if op == "allreduce" else nodes - 1
            lat += (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat
    elif a == TREE:
        lat += 2 * ((n // nodes - 1) * intra_lat + log2i(nodes) * inter_lat)
    elif a == CNDIRECT:
        lat += 2 * (min(1, n // nodes - 1) * intra_lat + (n // nodes - 1) * 0.5) + inter_lat
    elif a == CNCHAIN:
        lat += 2 * (n // nodes - 1) * intra_lat + inter_lat
    elif a == NVLS:
        lat += v.hw_lat[NET][a][p] if nodes > 1 else 0.0
    elif a == NVLSTREE:
        lat += 2 * (nodes - 1) * v.hw_lat[NET][a][p]
    return Cost(lat, bw, eff, cap)
