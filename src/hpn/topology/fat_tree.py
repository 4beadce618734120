"""A k-ary fat tree (Al-Fares et al., SIGCOMM 2008).

k pods of k/2 edge (ToR) and k/2 aggregation switches; (k/2)^2 cores; k^3/4 hosts. Edge ``e``
of a pod links to every Agg of the pod; Agg ``j`` links to cores ``j*k/2 ... (j+1)*k/2 - 1``.
Hosts are the endpoints (kind ``host``), one link each.
"""

from __future__ import annotations

import numpy as np

from hpn.topology.assembly import Assembly
from hpn.topology.fabric import Fabric, LinkTier, NodeKind
from hpn.topology.spec import FatTreeSpec


def build_fat_tree(spec: FatTreeSpec) -> Fabric:
    """Build a k-ary fat tree: k pods of k/2 edge and k/2 aggregation switches, (k/2)^2 cores.

    Parameters
    ----------
    spec
        The fat-tree spec (``k`` even).

    Returns
    -------
    Fabric
        The fabric: k^3/4 hosts, one per edge port.

    Examples
    --------
    >>> from hpn.topology.spec import FatTreeSpec
    >>> f = build_fat_tree(FatTreeSpec(k=4))
    >>> f.count(NodeKind.HOST), f.physical_links(LinkTier.AGG_CORE)
    (16, 16)
    """
    k, h = spec.k, spec.k // 2
    asm = Assembly()
    n_host = k * h * h
    host_edge = np.arange(n_host) // h  # global edge index
    hosts = asm.add_nodes(
        NodeKind.HOST,
        n_host,
        pod=host_edge // h,
        segment=host_edge % h,
        host=np.arange(n_host),
        index=np.arange(n_host) % h,
    )
    edge = asm.add_nodes(
        NodeKind.TOR,
        k * h,
        pod=np.repeat(np.arange(k), h),
        segment=np.tile(np.arange(h), k),
        index=np.tile(np.arange(h), k),
    )
    agg = asm.add_nodes(
        NodeKind.AGG, k * h, pod=np.repeat(np.arange(k), h), index=np.tile(np.arange(h), k)
    )
    core = asm.add_nodes(NodeKind.CORE, h * h, index=np.arange(h * h))
    lat, bw = spec.link_latency, spec.speed
    asm.add_links(hosts, edge[host_edge], bw, lat, LinkTier.NIC_TOR, port=0)
    e_pod = np.repeat(np.arange(k), h)
    up = agg[0] + e_pod[:, None] * h + np.arange(h)[None, :]
    asm.add_links(np.repeat(edge, h), up.ravel(), bw, lat, LinkTier.TOR_AGG)
    a_local = np.tile(np.arange(h), k)
    cores = core[0] + a_local[:, None] * h + np.arange(h)[None, :]
    asm.add_links(np.repeat(agg, h), cores.ravel(), bw, lat, LinkTier.AGG_CORE)
    meta = {
        "tor_oversubscription": 1.0,
        "agg_oversubscription": 1.0,
        "hosts_per_segment": h,
        "backup_hosts_per_segment": 0,
        "max_segments_per_pod": h,
        "max_gpus_per_pod": h * h,
        "max_pods": k,
    }
    return asm.fabric(spec, meta)
