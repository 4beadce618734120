"""The fabric explorer's data: a laid-out picture of one segment or one pod, and one switch's
ports.

Hosts stand for their GPUs (a host's NIC ports are its GPUs' links to the ToRs); ToRs are
ordered by rail, then plane, so each dual-ToR pair sits side by side; the Aggs above are
grouped by plane. The pod view aggregates: a box of host counts per segment, links bundled
per (segment, plane). Coordinates are in a 1000-wide box.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from hpn.config import dump_toml
from hpn.errors import InputError
from hpn.topology import Fabric, LinkTier, NodeKind, build, spec_from_table
from hpn.topology.fabric import Network

MAX_NODES = 2_000_000


@lru_cache(maxsize=8)
def _build(spec_toml: str) -> Fabric:
    import tomllib

    fields = tomllib.loads(spec_toml)
    return build(spec_from_table(fields))


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


MAX_POD_SWITCHES = 5_000
MAX_POD_SEGMENTS = 256


def _bundles(
    f: Fabric,
    tier: LinkTier,
    src: np.ndarray,
    dst: np.ndarray,
    key_a,
    key_b,
    where: dict,
    node_x: dict[int, float] | None = None,
) -> list[dict[str, Any]]:
    """Links of ``tier`` from ``src`` to ``dst`` nodes, one bundle per (key_a, key_b) group.

    With ``node_x`` (x of each ``dst`` node), a bundle also spans the x range of the nodes it
    reaches (``x2_lo``..``x2_hi``, ``reaches`` of them), so it is drawn fanning out to all of
    them rather than to one."""
    lk = f.links
    sel = np.flatnonzero((lk.tier == tier) & np.isin(lk.src, src) & np.isin(lk.dst, dst))
    if not len(sel):
        return []
    ka, kb = key_a(lk.src[sel]), key_b(lk.dst[sel])
    pairs, inv, n = np.unique(
        np.stack([ka, kb], 1), axis=0, return_inverse=True, return_counts=True
    )
    cap = np.bincount(inv.ravel(), weights=lk.capacity[sel], minlength=len(pairs))
    out = []
    inv = inv.ravel()
    for j, ((a, b), k, c) in enumerate(zip(pairs.tolist(), n.tolist(), cap.tolist(), strict=True)):
        (x1, y1), (x2, y2) = where[("a", a)], where[("b", b)]
        fan: dict[str, Any] = {}
        if node_x is not None:
            reached = np.unique(lk.dst[sel][inv == j]).tolist()
            xs = [node_x[i] for i in reached]
            fan = {"x2_lo": min(xs), "x2_hi": max(xs), "reaches": len(reached)}
        out.append(
            fan
            | {
                "tier": tier.name.lower(),
                "a": a,
                "b": b,
                "links": k,
                "capacity_gbps": c / 1e9,
                "x1": x1,
                "y1": y1,
                "x2": x2,
                "y2": y2,
            }
        )
    return out


def pod_view(f: Fabric, pod: int = 0) -> dict[str, Any]:
    """All segments of a pod at once: Aggs by plane on top (cores above them when any), each
    segment a block of its ToRs (rail rows, dual-ToR pairs side by side) over one box that
    counts its hosts; ToR-Agg and Agg-core links bundled per (segment, plane) and
    (Agg plane, core plane)."""
    nd = f.nodes
    be = nd.network == Network.BACKEND
    pods = int(nd.pod[be & (nd.kind == NodeKind.TOR)].max()) + 1
    tors = np.flatnonzero(be & (nd.kind == NodeKind.TOR) & (nd.pod == pod))
    if not len(tors):
        raise InputError("pod", f"no pod {pod}; the fabric has {pods}")
    aggs = np.flatnonzero(be & (nd.kind == NodeKind.AGG) & (nd.pod == pod))
    aggs = aggs[np.lexsort((nd.index[aggs], nd.plane[aggs]))]
    lk = f.links
    up = (lk.tier == LinkTier.AGG_CORE) & np.isin(lk.src, aggs)
    cores = np.unique(lk.dst[up])
    cores = cores[np.lexsort((nd.index[cores], nd.plane[cores]))]
    segments = sorted({int(s) for s in nd.segment[tors]})
    if len(segments) > MAX_POD_SEGMENTS or len(tors) + len(aggs) + len(cores) > MAX_POD_SWITCHES:
        raise InputError(
            "pod",
            f"pod {pod} has {len(segments)} segments and {len(tors) + len(aggs) + len(cores)} "
            f"switches, more than the pod view shows; pick a segment",
        )
    nodes: list[dict[str, Any]] = []
    where: dict[tuple, tuple[float, float]] = {}

    node_x: dict[int, float] = {}

    def sw(i: int, kind: str, x: float, y: float, **extra) -> None:
        node_x[int(i)] = float(x)
        nodes.append(
            {"id": i, "kind": kind, "label": f.node_name(i), "x": x, "y": y}
            | {"plane": int(nd.plane[i])}
            | extra
        )

    y = 30.0
    for tier_nodes, kind in ((cores, "core"), (aggs, "agg")):
        if not len(tier_nodes):
            continue
        row = _row(tier_nodes, y)
        for i, x, yy in row:
            sw(i, kind, x, yy)
        xs = np.array([x for _, x, _ in row])
        planes = nd.plane[tier_nodes]
        for p in np.unique(planes).tolist():
            where[(kind, p)] = (float(xs[planes == p].mean()), y)
        y += 90
    # segment blocks: up to 16 a row, each a grid of ToRs (rails down, planes across)
    ep = be & ((nd.kind == NodeKind.GPU) | (nd.kind == NodeKind.HOST)) & (nd.pod == pod)
    hosts, first = np.unique(nd.host[ep], return_index=True)
    h_seg, h_bak = nd.segment[ep][first], nd.backup[ep][first]
    per_row = min(len(segments), 16)
    bw = 960 / per_row
    y0 = y + 60
    blocks = []
    for s in segments:
        st = tors[nd.segment[tors] == s]
        st = st[np.lexsort((nd.plane[st], nd.rail[st]))]
        planes = len(np.unique(nd.plane[st]))
        cols = planes if planes > 1 else int(np.ceil(np.sqrt(len(st))))
        rows = int(np.ceil(len(st) / cols))
        blocks.append((s, st, cols, rows))
    rows_max = max(b[3] for b in blocks)
    cell_h = min(14.0, 240 / rows_max)
    block_h = 20 + rows_max * cell_h + 44
    seg_out = []
    for k, (s, st, cols, _rows) in enumerate(blocks):
        bx = 20 + bw * (k % per_row)
        by = y0 + block_h * (k // per_row)
        cw = (bw - 6) / cols
        for j, i in enumerate(st.tolist()):
            x = bx + 3 + cw * (j % cols + 0.5)
            yy = by + 20 + cell_h * (j // cols + 0.5)
            sw(i, "tor", x, yy, rail=int(nd.rail[i]), segment=s)
        mine = h_seg == s
        seg_out.append(
            {
                "segment": s,
                "x": bx + 2,
                "y": by + 20 + rows_max * cell_h + 6,
                "w": bw - 4,
                "h": 30,
                "tors": len(st),
                "hosts": int(mine.sum() - h_bak[mine].sum()),
                "backup_hosts": int(h_bak[mine].sum()),
                "label_y": by + 12,
            }
        )
        where[("seg", s)] = (bx + bw / 2, by + 14)
    height = y0 + block_h * ((len(segments) - 1) // per_row + 1) + 10

    def plane_key(ids: np.ndarray) -> np.ndarray:
        return nd.plane[ids]

    agg_where = {("a", s): v for (g, s), v in where.items() if g == "seg"}
    agg_where |= {("b", p): v for (g, p), v in where.items() if g == "agg"}
    bundles = _bundles(
        f, LinkTier.TOR_AGG, tors, aggs, lambda ids: nd.segment[ids], plane_key, agg_where, node_x
    )
    core_where = {("a", p): v for (g, p), v in where.items() if g == "agg"}
    core_where |= {("b", p): v for (g, p), v in where.items() if g == "core"}
    bundles += _bundles(f, LinkTier.AGG_CORE, aggs, cores, plane_key, plane_key, core_where, node_x)
    return {
        "pod": pod,
        "pods": pods,
        "segments": segments,
        "preset": getattr(f.spec, "preset", "?"),
        "nodes": nodes,
        "segment_boxes": seg_out,
        "bundles": bundles,
        "height": height,
        "counts": {
            "cores": len(cores),
            "aggs": len(aggs),
            "tors": len(tors),
            "segments": len(segments),
            "hosts": len(hosts),
            "backup_hosts": int(h_bak.sum()),
        },
    }
