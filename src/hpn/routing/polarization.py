"""The paper's Fig 13 scenario: a data-parallel job whose traffic crosses segments on one rail.

Rail-``r`` GPUs of ``hosts`` hosts in segment 0 and as many in segment 1 exchange traffic:
every GPU sends to ``senders`` GPUs of the other segment, ``connections`` connections each
(elephant flows of equal size). On a plain Clos with dual-ToR (``--single-plane``) every Agg
hashes between the destination's two ToRs, and with the same (linear) hash as the source
ToR its choice follows the uplink the source ToR took: polarization. With dual-plane the Agg
has no choice. The scenario hashes as the paper's plain Clos did (one CRC, one seed, no
offset: :meth:`HashConfig.polarized`); ``hashing`` overrides any field, e.g. the production
default ``{"seeds": "switch", "agg_offset": 10}``. We measure the load the two ToR downlinks
toward each receiving NIC carry, and how evenly the Agg downlinks toward the job's ToRs are
loaded.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hpn.errors import InputError
from hpn.routing.base import make_router
from hpn.routing.ecmp import HashConfig
from hpn.routing.result import PolarizationResult
from hpn.topology.fabric import Fabric, LinkTier, NodeKind


def job_flows(
    fabric: Fabric, hosts: int, senders: int, connections: int, rail: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(src, dst, keys) of the scenario's connections.

    ``hosts`` rail-``rail`` GPUs of segment 0 and as many of segment 1 send to each other:
    each of the first ``senders`` of a side to a shifted partner, ``connections`` each.

    Parameters
    ----------
    fabric
        The fabric (two segments in pod 0).
    hosts
        GPUs used per segment.
    senders
        Partners each GPU sends to.
    connections
        Connections per (sender, receiver).
    rail
        The rail (GPU index) used.

    Returns
    -------
    tuple of numpy.ndarray
        Sources, destinations and a distinct key per connection.
    """
    nd = fabric.nodes
    gpus = []
    for seg in (0, 1):
        m = (nd.kind == NodeKind.GPU) & (nd.pod == 0) & (nd.segment == seg) & ~nd.backup
        m &= nd.index == rail
        ids = np.flatnonzero(m)
        if len(ids) < hosts:
            raise InputError(
                "--hosts", f"segment {seg} has {len(ids)} rail-{rail} GPUs, {hosts} asked"
            )
        gpus.append(ids[:hosts])
    if not 1 <= senders <= hosts:
        raise InputError("--senders", f"must be 1..{hosts}, got {senders}")
    srcs, dsts = [], []
    for a, b in ((gpus[0], gpus[1]), (gpus[1], gpus[0])):
        for k in range(senders):
            srcs.append(a)
            dsts.append(np.roll(b, -k))
    src = np.repeat(np.concatenate(srcs), connections)
    dst = np.repeat(np.concatenate(dsts), connections)
    return src, dst, np.arange(len(src), dtype=np.int64)


def polarization(
    fabric: Fabric,
    routing: str = "ecmp",
    seed: int = 0,
    hosts: int = 16,
    senders: int = 2,
    connections: int = 4,
    size: float = 64e6,
    hashing: dict | None = None,
) -> PolarizationResult:
    """Hash polarization of a two-segment job: how unevenly the receivers' ToR ports and the
    Aggs' downlinks are loaded when every tier hashes alike (P §3, Fig 4).

    Parameters
    ----------
    fabric
        The fabric (at least two segments).
    routing
        Policy name.
    seed
        Seed.
    hosts, senders, connections
        The scenario (:func:`job_flows`).
    size
        Bytes per connection.
    hashing
        Hash settings over the polarized defaults (the same hash on every tier).

    Returns
    -------
    PolarizationResult
        Load ratio and shares of the two ports of each receiving NIC, idle ports, and the
        spread of load over the Agg downlinks into the job's ToRs.
    """
    if fabric.nodes.segment.max() < 1:
        raise InputError("--segments", "the scenario needs at least 2 segments")
    src, dst, keys = job_flows(fabric, hosts, senders, connections)
    kw: dict[str, Any] = {"seed": seed}
    if routing in ("ecmp", "hpn"):
        kw["hashing"] = HashConfig.polarized(**(hashing or {}))
    paths = make_router(routing, **kw).route(fabric, src, dst, keys)
    lk = fabric.links
    load = np.bincount(paths.links, minlength=fabric.num_links) * size
    receivers = np.unique(dst)
    into = np.flatnonzero((lk.tier == LinkTier.NIC_TOR) & np.isin(lk.dst, receivers))
    per_port = np.zeros((fabric.num_nodes, 2))
    per_port[lk.dst[into], lk.port[into]] = load[into]
    pp = per_port[receivers]
    hi, lo = pp.max(axis=1), pp.min(axis=1)
    ratio = np.where(lo > 0, hi / np.where(lo > 0, lo, 1), np.inf)
    share = hi / pp.sum(axis=1)
    job_tors = np.unique(lk.src[into])
    down = np.flatnonzero(
        (lk.tier == LinkTier.TOR_AGG)
        & np.isin(lk.dst, job_tors)
        & (fabric.nodes.kind[lk.src] == NodeKind.AGG)
    )
    dl = load[down]
    worst = float(ratio.max())
    return PolarizationResult(
        routing=routing,
        hashing=kw["hashing"].describe() if "hashing" in kw else None,
        flows=int(len(src)),
        receiving_nics=int(len(receivers)),
        tor_port_load_ratio=None if np.isinf(worst) else round(worst, 4),
        tor_port_max_share=round(float(share.max()), 4),
        tor_port_mean_share=round(float(share.mean()), 4),
        idle_port_nics=int(np.count_nonzero(lo == 0)),
        agg_downlink_max_over_mean=round(float(dl.max() / dl.mean()), 4) if dl.sum() else None,
        agg_downlinks_used=int(np.count_nonzero(dl)),
        agg_downlinks=int(len(dl)),
        preset=getattr(fabric.spec, "preset", None),
        dual_plane=bool(getattr(fabric.spec, "dual_plane", False)),
        seed=seed,
    )
