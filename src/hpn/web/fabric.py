"""The fabric explorer's data: a laid-out picture of one segment, and one switch's ports.

Hosts stand for their GPUs (a host's NIC ports are its GPUs' links to the ToRs); ToRs are
ordered by rail, then plane, so each dual-ToR pair sits side by side; the Aggs above are
grouped by plane. Coordinates are in a 1000-wide box.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from hpn.config import dump_toml
from hpn.errors import InputError
from hpn.topology import Fabric, LinkTier, NodeKind, build, make_spec
from hpn.topology.fabric import Network

MAX_NODES = 2_000_000


@lru_cache(maxsize=8)
def _build(spec_toml: str) -> Fabric:
    import tomllib

    fields = tomllib.loads(spec_toml)
    return build(make_spec(fields.pop("preset", "hpn"), fields))


def fabric_of(fields: dict[str, Any]) -> Fabric:
    """Build (and cache) the fabric of a ``[fabric]`` table."""
    f = _build(dump_toml(dict(fields)))
    if f.num_nodes > MAX_NODES:
        raise InputError("fabric", f"{f.num_nodes:,} nodes is more than the explorer shows")
    return f


def _row(ids: np.ndarray, y: float, width: float = 960, x0: float = 20) -> list[tuple]:
    n = max(len(ids), 1)
    return [(int(i), x0 + width * (k + 0.5) / n, y) for k, i in enumerate(ids)]


def segment_view(f: Fabric, pod: int = 0, segment: int = 0) -> dict[str, Any]:
    """Nodes (id, kind, label, x, y, ...) and links (a, b, tier) of one segment and its Aggs."""
    nd, lk = f.nodes, f.links
    be = nd.network == Network.BACKEND
    tors_all = np.flatnonzero(be & (nd.kind == NodeKind.TOR) & (nd.pod == pod))
    segments = sorted({int(s) for s in nd.segment[tors_all]})
    if not len(tors_all):
        raise InputError("pod", f"no pod {pod}; the fabric has {int(nd.pod.max()) + 1}")
    if segment not in segments:
        raise InputError("segment", f"no segment {segment} in pod {pod}; 0..{max(segments)}")
    tors = tors_all[nd.segment[tors_all] == segment]
    tors = tors[np.lexsort((nd.plane[tors], nd.rail[tors]))]
    aggs = np.flatnonzero(be & (nd.kind == NodeKind.AGG) & (nd.pod == pod))
    aggs = aggs[np.lexsort((nd.index[aggs], nd.plane[aggs]))]
    ep = be & ((nd.kind == NodeKind.GPU) | (nd.kind == NodeKind.HOST)) & (nd.pod == pod)
    ep &= nd.segment == segment
    down = (lk.tier == LinkTier.NIC_TOR) & np.isin(lk.dst, tors) & ep[lk.src]
    hosts = np.unique(nd.host[lk.src[down]])
    nodes: list[dict[str, Any]] = []
    for i, x, y in _row(aggs, 60):
        nodes.append(
            {
                "id": i,
                "kind": "agg",
                "label": f.node_name(i),
                "x": x,
                "y": y,
                "plane": int(nd.plane[i]),
            }
        )
    for i, x, y in _row(tors, 330):
        nodes.append(
            {
                "id": i,
                "kind": "tor",
                "label": f.node_name(i),
                "x": x,
                "y": y,
                "plane": int(nd.plane[i]),
                "rail": int(nd.rail[i]),
            }
        )
    backup = {int(h): bool(b) for h, b in zip(nd.host[ep], nd.backup[ep], strict=True)}
    for h, x, y in _row(hosts, 600):
        nodes.append(
            {
                "id": f"h{h}",
                "kind": "host",
                "label": f"host {h}",
                "x": x,
                "y": y,
                "backup": backup.get(h, False),
            }
        )
    tor_set = set(tors.tolist())
    up = np.flatnonzero((lk.tier == LinkTier.TOR_AGG) & np.isin(lk.src, list(tor_set)))
    up = up[np.isin(lk.dst[up], aggs)]
    links = [
        {"id": int(i), "a": int(lk.src[i]), "b": int(lk.dst[i]), "tier": "tor_agg"} for i in up
    ]
    pairs = {(int(nd.host[s]), int(d)) for s, d in zip(lk.src[down], lk.dst[down], strict=True)}
    links += [{"a": f"h{h}", "b": t, "tier": "nic_tor"} for h, t in sorted(pairs)]
    return {
        "pod": pod,
        "segment": segment,
        "segments": segments,
        "pods": int(nd.pod[be & (nd.kind == NodeKind.TOR)].max()) + 1,
        "preset": getattr(f.spec, "preset", "?"),
        "nodes": nodes,
        "links": links,
        "counts": {
            "aggs": len(aggs),
            "tors": len(tors),
            "hosts": len(hosts),
            "backup_hosts": sum(backup.get(int(h), False) for h in hosts),
        },
    }


def switch_ports(f: Fabric, node: int, util: dict[str, np.ndarray] | None = None) -> dict:
    """A switch's directed links out and in, with utilization from a run's ``links`` table."""
    nd, lk = f.nodes, f.links
    if not 0 <= node < f.num_nodes or nd.kind[node] not in (
        NodeKind.TOR,
        NodeKind.AGG,
        NodeKind.CORE,
    ):
        raise InputError("node", f"{node} is not a switch of this fabric")
    by_id: dict[int, tuple[float, float]] = {}
    if util is not None:
        by_id = {
            int(i): (float(m), float(p))
            for i, m, p in zip(util["link_id"], util["util_mean"], util["util_peak"], strict=True)
        }
    ports = []
    for i in np.flatnonzero((lk.src == node) | (lk.dst == node)):
        out = lk.src[i] == node
        peer = int(lk.dst[i] if out else lk.src[i])
        m, p = by_id.get(int(i), (None, None))
        ports.append(
            {
                "link": int(i),
                "direction": "out" if out else "in",
                "peer": f.node_name(peer),
                "tier": LinkTier(int(lk.tier[i])).name.lower(),
                "capacity_gbps": float(lk.capacity[i]) / 1e9,
                "util_mean": m,
                "util_peak": p,
            }
        )
    return {
        "node": node,
        "name": f.node_name(node),
        "kind": NodeKind(int(nd.kind[node])).name.lower(),
        "ports": ports,
        "has_utilization": util is not None,
    }
