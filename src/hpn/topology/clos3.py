"""A classic 3-tier dual-ToR Clos (DCN+ and the frontend network).

ToR pairs per segment, every ToR of a pod linked to every Agg of the pod with parallel links,
Agg ``j`` of every pod linked to its own group of cores.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from hpn.errors import InputError
from hpn.topology.assembly import Assembly
from hpn.topology.budget import ports, require
from hpn.topology.fabric import LinkTier, Network, NodeKind
from hpn.topology.spec import HostFields


@dataclass(frozen=True)
class Clos3Shape:
    segments_per_pod: int
    tor_down: int  # ports per ToR towards endpoints
    down_speed: float
    tor_uplinks: int
    aggs_per_pod: int
    agg_down: int
    agg_up: int
    speed: float  # ToR-Agg and Agg-Core
    core_parallel: int
    chip: float
    latency: float
    network: Network
    tiers: tuple[LinkTier, LinkTier, LinkTier]

    @property
    def tor_agg_parallel(self) -> int:
        """Parallel links from one ToR to each Agg of its pod."""
        return self.tor_uplinks // self.aggs_per_pod

    @property
    def max_segments_per_pod(self) -> int:
        """Segments (ToR pairs) an Agg's downlinks can serve (0: a ToR reaches no Agg)."""
        per_pair = 2 * self.tor_agg_parallel
        return self.agg_down // per_pair if per_pair else 0

    @property
    def cores_per_group(self) -> int:
        """Cores per core group (one group per Agg index)."""
        return self.agg_up // self.core_parallel

    @property
    def max_pods(self) -> int:
        """Pods a core's ports can connect."""
        return ports(self.chip, self.speed) // self.core_parallel


def check_shape(s: Clos3Shape, pods: int, tier: str) -> None:
    """Refuse a three-tier shape whose port budgets do not add up.

    Parameters
    ----------
    s
        The shape.
    pods
        Pods it is built with (more than one needs a core tier).
    tier
        Field prefix of the errors: ``""`` for the backend, ``"frontend."``.

    Raises
    ------
    InputError
        When ToR uplinks do not split evenly over the Aggs, or the Aggs or cores lack ports.
    """
    if s.tor_uplinks % s.aggs_per_pod:
        raise InputError(
            f"{tier}tor",
            f"{s.tor_uplinks} uplinks do not split evenly over {s.aggs_per_pod} Aggs",
        )
    if s.tor_agg_parallel < 1:
        raise InputError(
            f"{tier}tor", f"needs {s.aggs_per_pod} uplinks (one per Agg), has {s.tor_uplinks}"
        )
    require(
        f"{tier}agg",
        s.segments_per_pod * 2 * s.tor_agg_parallel,
        s.agg_down,
        f"downlink ports for {s.segments_per_pod} segments",
    )
    if pods > 1:
        if s.cores_per_group < 1:
            raise InputError(f"{tier}agg", "no uplink ports left for a core tier")
        require(f"{tier}core", pods * s.core_parallel, ports(s.chip, s.speed), "ports")


def wire_clos3(
    asm: Assembly, attach: np.ndarray, seg_pod: np.ndarray, pods: int, s: Clos3Shape
) -> None:
    """Wire ToRs, Aggs and cores above ``attach[segment, side, k]`` (endpoint node per port).

    Parameters
    ----------
    asm
        The assembly the nodes and links are added to.
    attach
        ``(segments, 2, tor_down)`` endpoint node ids per ToR port (side 0 and 1 of each dual
        ToR); -1 for an empty port.
    seg_pod
        Pod of each segment.
    pods
        Number of pods (a core tier is added when more than one).
    s
        The shape (port counts, speeds, network and link tiers).
    """
    nseg = attach.shape[0]
    seg_in_pod = np.zeros(nseg, np.int64)
    for p in range(pods):
        idx = np.flatnonzero(seg_pod == p)
        seg_in_pod[idx] = np.arange(len(idx))
    tor = asm.add_nodes(
        NodeKind.TOR,
        nseg * 2,
        s.network,
        pod=np.repeat(seg_pod, 2),
        segment=np.repeat(seg_in_pod, 2),
        plane=np.tile([0, 1], nseg),
        index=np.tile([0, 1], nseg),
    ).reshape(nseg, 2)
    for side in (0, 1):
        ends = attach[:, side, :]
        ok = ends >= 0
        tors = np.broadcast_to(tor[:, side : side + 1], ends.shape)
        asm.add_links(ends[ok], tors[ok], s.down_speed, s.latency, s.tiers[0], port=side)
    agg = asm.add_nodes(
        NodeKind.AGG,
        pods * s.aggs_per_pod,
        s.network,
        pod=np.repeat(np.arange(pods), s.aggs_per_pod),
        index=np.tile(np.arange(s.aggs_per_pod), pods),
    ).reshape(pods, s.aggs_per_pod)
    par = s.tor_agg_parallel
    lo = np.repeat(tor.ravel(), s.aggs_per_pod * par)
    up = np.repeat(agg[np.repeat(seg_pod, 2)], par, axis=1).ravel()
    asm.add_links(lo, up, s.speed, s.latency, s.tiers[1])
    if pods > 1:
        cpg = s.cores_per_group
        core = asm.add_nodes(
            NodeKind.CORE, s.aggs_per_pod * cpg, s.network, index=np.arange(s.aggs_per_pod * cpg)
        ).reshape(s.aggs_per_pod, cpg)
        lo = np.repeat(agg.ravel(), cpg * s.core_parallel)
        up = np.repeat(np.tile(core, (pods, 1)), s.core_parallel, axis=1).ravel()
        asm.add_links(lo, up, s.speed, s.latency, s.tiers[2])


def frontend_shape(chip: float, nic_bandwidth: float, latency: float, speed: float) -> Clos3Shape:
    """The frontend of P §8 / Fig 20: dual-ToR at 1:1, 8 Aggs per pod, 1:1 Aggs.

    Parameters
    ----------
    chip
        Switch chip capacity, bit/s.
    nic_bandwidth
        Frontend NIC bandwidth, bit/s (half to each ToR).
    latency
        Per-link latency, s.
    speed
        ToR-Agg and Agg-core port speed, bit/s.

    Returns
    -------
    Clos3Shape
        The shape, four segments per pod.
    """
    down_speed = nic_bandwidth / 2
    tor_down = ports(chip / 2, down_speed)
    tor_up = ports(chip / 2, speed)
    radix = ports(chip, speed)
    return Clos3Shape(
        segments_per_pod=4,
        tor_down=tor_down,
        down_speed=down_speed,
        tor_uplinks=tor_up,
        aggs_per_pod=8,
        agg_down=radix // 2,
        agg_up=radix - radix // 2,
        speed=speed,
        core_parallel=4,
        chip=chip,
        latency=latency,
        network=Network.FRONTEND,
        tiers=(LinkTier.FE_NIC_TOR, LinkTier.FE_TOR_AGG, LinkTier.FE_AGG_CORE),
    )


def add_frontend(asm: Assembly, spec: HostFields, host_pod: np.ndarray) -> dict[str, int]:
    """A frontend NIC (NIC0) per host and the frontend Clos above them; its size figures.

    Parameters
    ----------
    asm
        The assembly holding the backend; the frontend is added to it.
    spec
        The fabric spec (``chip``, ``frontend_nic_bandwidth``, ``link_latency``,
        ``uplink_speed``).
    host_pod
        Backend pod of each host, in host order.

    Returns
    -------
    dict
        ``frontend_segments`` and ``frontend_pods``.
    """
    from hpn.topology.hosts import add_frontend_nics

    nics = add_frontend_nics(asm, len(host_pod), host_pod)
    s = frontend_shape(spec.chip, spec.frontend_nic_bandwidth, spec.link_latency, spec.uplink_speed)
    nseg = -(-len(nics) // s.tor_down)
    pods = -(-nseg // s.segments_per_pod)
    s = replace(s, segments_per_pod=min(nseg, s.segments_per_pod))
    check_shape(s, pods, "frontend.")
    attach = np.full((nseg, 2, s.tor_down), -1, np.int64)
    flat = np.full(nseg * s.tor_down, -1, np.int64)
    flat[: len(nics)] = nics
    attach[:, 0, :] = attach[:, 1, :] = flat.reshape(nseg, s.tor_down)
    wire_clos3(asm, attach, np.arange(nseg) // s.segments_per_pod, pods, s)
    return {"frontend_segments": nseg, "frontend_pods": pods}
