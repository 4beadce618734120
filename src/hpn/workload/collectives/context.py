"""What every collective algorithm builds with: the fabric's NVLink wiring, connection keys,
and barriers (zero-bandwidth compute tasks) that start and end a collective in a FlowDAG."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from hpn.engine.dag import FlowDAG
from hpn.errors import InputError
from hpn.routing.base import Paths
from hpn.topology.fabric import Fabric, LinkTier, NodeKind

MAX_FLOWS = 8_000_000  # the 8-pod GPT-3 example needs 4.9 M


@dataclass(frozen=True)
class Params:
    """Algorithm knobs.

    ``model``: ``"nccl"`` (NCCL's tuner chooses algorithm, protocol and channels and gives
    the latency, :mod:`~hpn.workload.collectives.tuning`) or ``"alpha"`` (the alpha-beta
    model: ``alpha`` per algorithm step, no protocol; the default algorithm per op).
    ``proto``: NCCL_PROTO syntax (``auto``: all). ``gpu``: the GPU type NCCL's model reads.
    ``nccl``: the NCCL release whose tuner runs (:mod:`~hpn.workload.collectives.versions`).
    ``nic_path``: the GPU <-> NIC PCIe path as NCCL's topology names it (pix, pxb, pxn, phb,
    sys); NCCL enables LL128 by default only up to pxb (pxn on SM90+).
    ``cpu``: the hosts' CPU vendor NCCL detects (intel, amd): across hosts a ring step costs
    at least 1 us on Intel, 2 on AMD (``getNetOverhead``), and AMD takes NCCL's AMD row of
    LL caps.
    ``channels``: NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS (nccl model) or parallel
    rings/trees (alpha model; default one per GPU of a host); ``conns``: connections (QPs,
    each its own 5-tuple) per GPU pair, the bytes split evenly; ``alpha``: software latency
    per algorithm step (s); ``stepwise``: one flow per step instead of a coupled pipeline
    (validation); ``chunk``: bytes per pipelined chunk in the step-by-step broadcast;
    ``eff``: NCCL's bandwidth efficiency of the chosen protocol (what in-switch flows pay);
    ``flow_channels``: at most this many flow groups per GPU of a host (channels beyond are
    merged, same bytes, fewer distinct connections, and trees with half the ``conns``, as
    the two trees already give each GPU two connections, but no fewer than the NIC's ports:
    training's flow budget; None: one per channel)."""

    channels: int | None = None
    conns: int = 2
    alpha: float = 2e-6
    stepwise: bool = False
    chunk: float = 4 * 2**20
    model: str = "nccl"
    proto: str = "auto"
    gpu: str = "H800"
    eff: float = 1.0
    flow_channels: int | None = None
    nccl: str = "2.30.7"
    nic_path: str = "pxb"
    cpu: str = "intel"

    def __post_init__(self) -> None:
        if self.channels is not None and not 1 <= self.channels <= 64:
            raise InputError(
                "channels", f"must be in 1..64 (NCCL's MAXCHANNELS), got {self.channels}"
            )
        if self.model not in ("nccl", "alpha"):
            raise InputError("model", f"must be nccl or alpha, got {self.model!r}")
        from hpn.workload.collectives.versions import VERSIONS

        VERSIONS.get(self.nccl)
        from hpn.workload.collectives.versions import NIC_PATHS

        if self.nic_path not in NIC_PATHS:
            raise InputError(
                "nic_path", f"must be one of {', '.join(NIC_PATHS)}, got {self.nic_path!r}"
            )
        from hpn.workload.collectives.versions import check_cpu

        check_cpu(self.cpu)
        if self.conns < 1:
            raise InputError("conns", f"must be >= 1, got {self.conns}")
        if not self.alpha >= 0:
            raise InputError("alpha", f"must be >= 0, got {self.alpha}")
        if not self.chunk > 0:
            raise InputError("chunk", f"must be > 0, got {self.chunk}")


def nvlink_data_fabric(fabric: Fabric, p: Params, gpus: np.ndarray | None = None) -> Fabric:
    """The fabric as NCCL's kernels use its NVLink (``p.model == "nccl"``; else ``fabric``).

    NCCL's topology counts what its kernels move over one NVLink, not the link's signalling
    rate: ``SM90_NVLINK_BW`` = 20.0 GB/s per link in 2.18.3, 20.6 in 2.30.7 (``topo.h``),
    against NVLink 4's 25 GB/s per direction. Each GPU <-> NVSwitch link is capped at that
    figure times the GPU's links (PCIe-only GPUs: NCCL's PCIe figure); an H800 (8 links) of
    the default fabric's 200 GB/s per direction gets 160 (2.18.3) or 164.8 GB/s (2.30.7).
    Links already below it are unchanged. The network links are never changed. ``gpus``:
    only the NVLinks of these GPU nodes (one job's, where jobs of different GPU types or
    NCCL releases share a fabric); None: every GPU's. The one home of this rule:
    ``hpn collective``, ``hpn train`` (every job, its TP collectives too) and ``hpn fail``
    all run their flows on this fabric.
    """
    if p.model != "nccl":
        return fabric
    from hpn.workload.collectives import tuning as tu

    gpu = tu.GPUS.get(p.gpu)
    v = tu.VERSIONS.get(p.nccl)
    per_gpu = gpu.nvlink_GBps(v) if gpu.nvlinks else gpu.pcie_GBps
    lk = fabric.links
    nvl = lk.tier == LinkTier.NVLINK
    if gpus is not None:
        mine = np.zeros(fabric.num_nodes, bool)
        mine[np.asarray(gpus, np.int64).ravel()] = True
        nvl &= mine[lk.src] | mine[lk.dst]
    cap = lk.capacity.copy()
    cap[nvl] = np.minimum(cap[nvl], per_gpu * 8e9)
    if np.array_equal(cap, lk.capacity):
        return fabric
    return replace(fabric, links=replace(lk, capacity=cap))


def conn_keys(src: np.ndarray, dst: np.ndarray, qp: np.ndarray | int) -> np.ndarray:
    """A stable routing key per connection (src GPU, dst GPU, QP index): the same connection
    gets the same key (hence the same ECMP path) in every collective of a DAG. The low 16 bits
    are well mixed, so a router may use them as the RoCEv2 UDP source port."""
    x = (
        np.asarray(src, np.uint64) * np.uint64(0x9E3779B1)
        + np.asarray(dst, np.uint64) * np.uint64(0x85EBCA77)
        + np.asarray(qp, np.uint64) * np.uint64(0xC2B2AE3D)
    )
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(29))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(32))) * np.uint64(0x94D049BB133111EB)
    return (x >> np.uint64(1)).astype(np.int64)


class Ctx:
    """A FlowDAG being built on a fabric."""

    def __init__(self, fabric: Fabric, dag: FlowDAG | None = None):
        self.fabric = fabric
        self.dag = dag if dag is not None else FlowDAG()
        lk, nd = fabric.links, fabric.nodes
        nv = np.flatnonzero((lk.tier == LinkTier.NVLINK) & (nd.kind[lk.src] == NodeKind.GPU))
        self.nvlink_up = np.full(fabric.num_nodes, -1, np.int64)
        self.nvlink_up[lk.src[nv]] = nv
        self.nvswitch = np.full(fabric.num_nodes, -1, np.int64)  # per GPU
        self.nvswitch[lk.src[nv]] = lk.dst[nv]
        self.host = nd.host
        self.choices: list = []  # one tuning.Choice per collective added (NCCL_DEBUG=INFO)

    def check_budget(self, flows: int, what: str) -> None:
        if self.dag.num_flows + flows > MAX_FLOWS:
            raise InputError(what, f"would need {flows:,} flows (limit {MAX_FLOWS:,})")

    def barrier(self, node: int, duration: float = 0.0, after=None) -> int:
        """A compute task of ``duration`` on ``node`` after tasks ``after``."""
        t = int(self.dag.add_compute([node], [duration])[0])
        if after is not None and np.size(after):
            self.dag.add_deps(np.asarray(after, np.int64), t)
        return t

    def flows(
        self, src, dst, size, qp, *, after=None, coupled=False, delay=0.0, groups=None
    ) -> np.ndarray:
        """Flows with connection keys (routed by the router) after tasks ``after``
        (one task for all, or one per flow); ``qp`` one for all or one per flow; ``groups``:
        coupled groups by label (:meth:`FlowDAG.add_flows`)."""
        src = np.asarray(src, np.int64)
        ids = self.dag.add_flows(
            src,
            dst,
            size,
            keys=conn_keys(src, dst, qp),
            coupled=coupled,
            delay=delay,
            groups=groups,
        )
        if after is not None and np.size(after):
            self.dag.add_deps(after, ids)
        return ids

    def switch_flows(self, gpus, up, down, *, after=None) -> np.ndarray:
        """One coupled group of GPU -> NVSwitch (``up`` bytes each) and NVSwitch -> GPU
        (``down`` bytes each) flows over NVLink: an in-switch (NVLS) reduction or multicast."""
        gpus = np.asarray(gpus, np.int64)
        if (self.nvlink_up[gpus] < 0).any():
            raise InputError("algo", "NVLS needs GPUs with NVLink to an NVSwitch")
        sw = self.nvswitch[gpus]
        links = np.concatenate([self.nvlink_up[gpus], self.nvlink_up[gpus] ^ 1])
        paths = Paths(np.arange(len(links) + 1), links)
        ids = self.dag.add_flows(
            np.concatenate([gpus, sw]),
            np.concatenate([sw, gpus]),
            np.concatenate([np.full(len(gpus), up), np.full(len(gpus), down)]),
            paths=paths,
            coupled=True,
        )
        if after is not None and np.size(after):
            self.dag.add_deps(after, ids)
        return ids
