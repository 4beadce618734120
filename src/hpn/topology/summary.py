"""Counts and derived figures of a fabric, read off its arrays (not off its spec)."""

from __future__ import annotations

from typing import Any, TypedDict

import numpy as np

from hpn.topology.fabric import Fabric, LinkTier, Network, NodeKind


class Frontend(TypedDict):
    """The frontend network of a fabric: its NICs, switches and physical links per tier."""

    nics: int
    switches: dict[str, int]  # tor, agg, core
    links: dict[str, int]  # nic_tor, tor_agg, agg_core


def tor_pair_paths(f: Fabric, a: int, b: int) -> int:
    """Equal-cost ToR -> Agg -> ToR paths from ToR ``a`` to ToR ``b`` (parallel links count).

    Parameters
    ----------
    f
        The fabric.
    a, b
        ToR node ids.

    Returns
    -------
    int
        Number of two-hop paths.
    """
    lk = f.links
    up = (lk.src == a) & (lk.tier == LinkTier.TOR_AGG)
    down = (lk.dst == b) & (lk.tier == LinkTier.TOR_AGG)
    n = f.num_nodes
    via_up = np.bincount(lk.dst[up], minlength=n)
    via_down = np.bincount(lk.src[down], minlength=n)
    return int(np.dot(via_up, via_down))


def sample_tor_pair(f: Fabric) -> tuple[int, int] | None:
    """Two same-plane, same-rail backend ToRs in different segments of pod 0, if any.

    Parameters
    ----------
    f
        The fabric.

    Returns
    -------
    tuple of int, or None
        The two ToR ids, or None for a single-segment fabric.
    """
    nd = f.nodes
    tors = f.nodes_of(NodeKind.TOR)
    if not len(tors):
        return None
    a = int(tors[0])
    same = (
        (nd.pod[tors] == nd.pod[a])
        & (nd.segment[tors] != nd.segment[a])
        & (nd.plane[tors] == nd.plane[a])
        & (nd.rail[tors] == nd.rail[a])
    )
    cand = tors[same]
    return (a, int(cand[0])) if len(cand) else None


def summarize(f: Fabric) -> dict[str, Any]:
    """The figures of ``hpn topo summary``; physical links counted once.

    Parameters
    ----------
    f
        The fabric.

    Returns
    -------
    dict
        GPUs, hosts, switches and links by tier, oversubscriptions, paths between ToRs and
        the size limits (segments and GPUs per pod, pods); a ``frontend`` part if it has one.
    """
    nd, meta = f.nodes, f.meta
    be = nd.network == Network.BACKEND
    endpoint = be & ((nd.kind == NodeKind.GPU) | (nd.kind == NodeKind.HOST))
    tors = be & (nd.kind == NodeKind.TOR)
    seg_keys = np.unique(nd.pod[tors].astype(np.int64) * 1_000_000 + nd.segment[tors])
    pair = sample_tor_pair(f)
    spec = f.spec
    out: dict[str, Any] = {
        "preset": getattr(spec, "preset", "imported"),
        "pods": int(len(np.unique(nd.pod[tors]))) if tors.any() else 0,
        "segments": int(len(seg_keys)),
        "gpus": int(np.count_nonzero(endpoint & ~nd.backup)),
        "backup_gpus": int(np.count_nonzero(endpoint & nd.backup)),
        "hosts": int(len(np.unique(nd.host[endpoint]))),
        "switches": {
            "tor": f.count(NodeKind.TOR),
            "agg": f.count(NodeKind.AGG),
            "core": f.count(NodeKind.CORE),
        },
        "links": {
            "nvlink": f.physical_links(LinkTier.NVLINK),
            "nic_tor": f.physical_links(LinkTier.NIC_TOR),
            "tor_agg": f.physical_links(LinkTier.TOR_AGG),
            "agg_core": f.physical_links(LinkTier.AGG_CORE),
        },
        "tor_oversubscription": _round(meta.get("tor_oversubscription")),
        "agg_oversubscription": _round(meta.get("agg_oversubscription")),
        "paths_between_tors": tor_pair_paths(f, *pair) if pair else None,
        "max_segments_per_pod": meta.get("max_segments_per_pod"),
        "max_gpus_per_pod": meta.get("max_gpus_per_pod"),
        "max_pods": meta.get("max_pods"),
        "nodes": f.num_nodes,
        "directed_links": f.num_links,
    }
    if (nd.network == Network.FRONTEND).any():
        fe = Network.FRONTEND
        out["frontend"] = Frontend(
            nics=f.count(NodeKind.NIC, fe),
            switches={
                "tor": f.count(NodeKind.TOR, fe),
                "agg": f.count(NodeKind.AGG, fe),
                "core": f.count(NodeKind.CORE, fe),
            },
            links={
                "nic_tor": f.physical_links(LinkTier.FE_NIC_TOR),
                "tor_agg": f.physical_links(LinkTier.FE_TOR_AGG),
                "agg_core": f.physical_links(LinkTier.FE_AGG_CORE),
            },
        )
    return out


def _round(x: float | None) -> float | None:
    if x is None:
        return None
    return None if x == float("inf") else round(float(x), 4)
