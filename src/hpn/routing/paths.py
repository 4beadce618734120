"""Counting equal-cost paths, and the path-search space of a design (P Table 1).

Paths are counted as distinct link sequences of shortest length on which only switches
forward (parallel links count separately, as they are separate ECMP members).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from hpn.routing.result import PairPaths, PathsResult
from hpn.routing.shortest import FORWARDING
from hpn.topology.fabric import Fabric, LinkTier, NodeKind


def count_paths(fabric: Fabric, src: int, dst: int, plane: int | None = None) -> int:
    """Equal-cost shortest paths from endpoint ``src`` to ``dst`` (0 if unreachable).

    Parameters
    ----------
    fabric
        The fabric.
    src, dst
        Endpoint node ids.
    plane
        Restrict the first hop to the NIC port of that number; None: any port.

    Returns
    -------
    int
        Number of shortest paths (parallel links count).

    Examples
    --------
    In a k=4 fat tree, (k/2)^2 paths join hosts of different pods, one joins hosts on one edge
    switch:

    >>> from hpn.topology import build
    >>> f = build("fat-tree", k=4)
    >>> count_paths(f, 0, 15), count_paths(f, 0, 1)
    (4, 1)
    """
    lk, n = fabric.links, fabric.num_nodes
    fwd = np.isin(fabric.nodes.kind, FORWARDING)
    use = (lk.tier != LinkTier.NVLINK) & (fwd[lk.src] | (lk.src == src))
    if plane is not None:
        use &= (lk.src != src) | (lk.port == plane)
    ids = np.flatnonzero(use)
    g = sp.csr_matrix((np.ones(len(ids)), (lk.src[ids], lk.dst[ids])), shape=(n, n))
    dist = csgraph.shortest_path(g, unweighted=True, indices=src)
    if not np.isfinite(dist[dst]):
        return 0
    count = np.zeros(n)
    count[src] = 1.0
    ds, dd = dist[lk.src[ids]], dist[lk.dst[ids]]
    for level in range(1, int(dist[dst]) + 1):
        m = (dd == level) & (ds == level - 1)
        count += np.bincount(lk.dst[ids[m]], weights=count[lk.src[ids[m]]], minlength=n)
    return int(round(count[dst]))


def _endpoint(fabric: Fabric, **where: int) -> int | None:
    nd = fabric.nodes
    m = np.isin(nd.kind, (NodeKind.GPU, NodeKind.HOST)) & ~nd.backup
    for attr, value in where.items():
        m &= getattr(nd, attr) == value
    hit = np.flatnonzero(m)
    return int(hit[0]) if len(hit) else None


def path_report(fabric: Fabric) -> PathsResult:
    """Equal-cost path counts between endpoint pairs of increasing distance.

    Parameters
    ----------
    fabric
        The fabric.

    Returns
    -------
    PathsResult
        Path count (and, for multi-port NICs, per plane) of a same-segment same-rail pair,
        a cross-rail pair, a cross-segment pair and a cross-pod pair, where the fabric has one.
    """
    nd = fabric.nodes
    a = _endpoint(fabric, pod=0, segment=0)
    cases: dict[str, tuple[int | None, int | None]] = {}
    if a is not None:
        host = int(nd.host[a])
        idx = int(nd.index[a])
        same = np.flatnonzero(
            np.isin(nd.kind, (NodeKind.GPU, NodeKind.HOST))
            & (nd.pod == 0)
            & (nd.segment == 0)
            & (nd.index == idx)
            & (nd.host != host)
            & ~nd.backup
        )
        cases["same_segment_same_rail"] = (a, int(same[0]) if len(same) else None)
        cross_rail = np.flatnonzero(
            (nd.kind == NodeKind.GPU)
            & (nd.pod == 0)
            & (nd.segment == 0)
            & (nd.index != idx)
            & (nd.host != host)
            & ~nd.backup
        )
        cases["same_segment_cross_rail"] = (a, int(cross_rail[0]) if len(cross_rail) else None)
        cases["cross_segment_same_rail"] = (a, _endpoint(fabric, pod=0, segment=1, index=idx))
        cases["cross_pod"] = (a, _endpoint(fabric, pod=1, segment=0, index=idx))
    out: dict[str, PairPaths] = {}
    for name, (s, d) in cases.items():
        if s is None or d is None:
            continue
        total = count_paths(fabric, s, d)
        per_plane = [count_paths(fabric, s, d, plane=p) for p in (0, 1)]
        out[name] = PairPaths(paths=total, per_plane=per_plane)
    in_pod = [v for k, v in out.items() if k != "cross_pod"]
    return PathsResult(
        pairs=out,
        # what a host searches for a pair inside a pod once it has picked the plane (Table 1)
        search_space=max((max(v["per_plane"]) for v in in_pod), default=0),
        search_space_both_planes=max((v["paths"] for v in in_pod), default=0),
        preset=getattr(fabric.spec, "preset", None),
        paper_table1=PAPER_TABLE1,
    )


PAPER_TABLE1 = {
    "HPN pod (15,360 GPUs, 2 tiers, ToR balances)": "O(60)",
    "NVIDIA SuperPod (16,384 GPUs, 3 tiers)": "O(32*32*4) = O(4096)",
    "Jupiter (26,000 GPUs, 3 tiers)": "O(8*256) = O(2048)",
    "fat tree k=48 (27,648 GPUs, 3 tiers)": "O(48*48) = O(2304)",
}
