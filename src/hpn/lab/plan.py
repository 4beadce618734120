"""What a lab is made of, derived from a scaled-down ``Fabric``: namespaces, veth names,
addresses, rates and hash seeds. Pure data; nothing here touches the kernel.

- one network namespace per switch and per host (the host's NICs live in it; NVLink is not
  built: same-host pairs never reach the network);
- one veth pair per physical network link, each end named ``<prefix><peer>`` in its
  namespace (interface names are limited to 15 characters);
- the IP plan: the routing layer's (:func:`hpn.routing.addressing.address_plan`, so the model
  hashes the lab's own 5-tuples): one subnet per ToR pair (P §4.2; a /24 at HPN's 136 NICs,
  the smallest block that holds the pair's NICs in a scaled-down lab), NIC ``k`` of the pair
  gets ``.k+1``, on its host's loopback, so it is reachable over both ports; every link is a
  numbered /31 from 100.64.0.0/10 (physical link ``i`` -> ``100.64.0.0 + 2i`` at its lower
  end, ``+1`` above);
- link rates: the fabric's capacity times ``rate_scale`` (200G -> 200 Mbit/s by default);
- per-switch kernel hash seeds (``fib_multipath_hash_seed``) from the routing layer's seed
  policy (``same`` gives every switch one seed: the polarization scenario), as
  ``--ecmp-hash linux`` seeds the model's switches
  (:meth:`hpn.routing.ecmp.HashEcmpRouter.kernel_seeds`).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

import numpy as np
from pydantic import Field, field_validator

from hpn.config import Model
from hpn.errors import InputError
from hpn.routing.ecmp import HashConfig, HashEcmpRouter
from hpn.topology import build, make_spec
from hpn.topology.fabric import Fabric, LinkTier, Network, NodeKind

LINK_BASE = int(ipaddress.IPv4Address("100.64.0.0"))
MAX_NAMESPACES = 256
IFNAMSIZ = 15
SWITCH_KINDS = (NodeKind.TOR, NodeKind.AGG, NodeKind.CORE)
ENDPOINT_KINDS = (NodeKind.GPU, NodeKind.HOST)
_SHORT = {NodeKind.TOR: "t", NodeKind.AGG: "a", NodeKind.CORE: "c"}


class LabSpec(Model):
    """A lab: a fabric preset and its fields, scaled down to fit one machine."""

    name: str = Field("0", description="lab name: 1-4 of [a-z0-9]; names carry 'hl<name>'")
    preset: Literal["hpn", "rail-only", "fat-tree"] = Field("hpn", description="fabric preset")
    fabric: dict = Field(default_factory=dict, description="other fabric fields (dual_tor, ...)")
    segments: int = Field(2, ge=1, le=16, description="segments per pod")
    hosts_per_segment: int = Field(2, ge=1, le=32, description="hosts per segment (ToR pair)")
    rails: int = Field(1, ge=1, le=8, description="NICs (GPUs) per host")
    aggs_per_plane: int = Field(2, ge=1, le=16, description="Aggs per plane (ToR uplinks)")
    k: int = Field(4, ge=2, le=8, description="fat-tree radix (fat-tree preset only)")
    rate_scale: float = Field(1e-3, gt=0, le=1e-2, description="link rate = capacity x this")
    control: Literal["bgp", "static"] = Field("bgp", description="BGP (FRR) or static routes")
    ecmp_seeds: Literal["same", "tier", "switch"] = Field(
        HashConfig().seeds, description="kernel hash seeds per switch (routing defaults)"
    )
    seed: int = Field(0, ge=0, le=2**31 - 1, description="base of the seeds")
    bfd: bool = Field(False, description="BFD (FRR bfdd) on every BGP session [off: P is silent]")
    bfd_interval_ms: int = Field(300, ge=10, le=10_000, description="BFD tx/rx interval")
    bfd_multiplier: int = Field(3, ge=2, le=255, description="BFD detect multiplier")

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not re.fullmatch(r"[a-z0-9]{1,4}", v):
            raise ValueError("must be 1-4 characters of [a-z0-9]")
        return v

    @property
    def prefix(self) -> str:
        return f"hl{self.name}"

    def fabric_spec(self):
        """The scaled fabric spec: hosts per ToR, rails and Aggs per plane set from the lab."""
        fields = dict(self.fabric)
        if self.preset == "fat-tree":
            fields.setdefault("k", self.k)
        else:
            per_host = 1 if fields.get("rail_optimized", True) else self.rails
            fields.update(
                segments=self.segments,
                gpus_per_host=self.rails,
                tor_active_ports=self.hosts_per_segment * per_host,
                tor_backup_ports=0,
                tor_uplinks=self.aggs_per_plane,
            )
            if fields.get("frontend"):
                raise InputError("frontend", "the lab builds the backend network only")
        return make_spec(self.preset, fields)


def _ip(v: int) -> str:
    return str(ipaddress.IPv4Address(int(v)))


@dataclass(frozen=True, eq=False)
class LabPlan:
    """Namespaces, interfaces, addresses, rates and seeds of one lab.

    Directed link ``ln`` leaves node ``src[ln]`` through interface ``ifname[ln]`` of that node's
    namespace; its two ends carry the /31 addresses ``end_ip[ln]`` (near) and ``end_ip[ln ^ 1]``.
    """

    spec: LabSpec
    fabric: Fabric
    ns_of_node: np.ndarray  # int64 index into namespaces, -1 for nodes without one
    namespaces: list[str]
    ns_role: list[str]  # host | tor | agg | core
    links: np.ndarray  # directed link ids the lab builds (both directions), ascending
    ifname: dict[int, str]  # directed link -> interface name at its source
    end_ip: np.ndarray  # uint32 per directed link: its source end's /31 address (0: none)
    nic_ip: np.ndarray  # uint32 per node: the NIC's address (0: none)
    subnets: list[tuple[int, list[int]]]  # (network address, ToR node ids) per ToR pair
    kernel_seed: np.ndarray  # uint32 per node: fib_multipath_hash_seed of its namespace
    subnet_len: int = 24  # prefix length of every ToR pair's subnet

    def cidr(self, net: int) -> str:
        """A ToR pair's subnet as ``10.0.0.0/30``."""
        return f"{_ip(net)}/{self.subnet_len}"

    @property
    def prefix(self) -> str:
        return self.spec.prefix

    @cached_property
    def link_of_if(self) -> dict[tuple[int, str], int]:
        """(namespace index, interface name) -> directed link leaving through it."""
        src = self.fabric.links.src
        return {(int(self.ns_of_node[src[ln]]), n): ln for ln, n in self.ifname.items()}

    @cached_property
    def nodes_in_ns(self) -> list[list[int]]:
        out: list[list[int]] = [[] for _ in self.namespaces]
        for node in np.flatnonzero(self.ns_of_node >= 0):
            out[int(self.ns_of_node[node])].append(int(node))
        return out

    @cached_property
    def endpoints(self) -> np.ndarray:
        """NIC endpoints (GPUs, fat-tree hosts) with an address, in node order."""
        return np.flatnonzero(self.nic_ip > 0)

    def ns(self, node: int) -> str:
        return self.namespaces[int(self.ns_of_node[node])]

    def ip(self, node: int) -> str:
        return _ip(self.nic_ip[node])

    def link_ip(self, link: int) -> str:
        return _ip(self.end_ip[link])

    def rate_bps(self, link: int) -> float:
        return float(self.fabric.links.capacity[link]) * self.spec.rate_scale

    def nic_ports(self, node: int) -> list[int]:
        """The directed links leaving a NIC toward its ToRs, in port order."""
        out = [int(ln) for ln in self.fabric.out_links(node) if int(ln) in self.ifname]
        return sorted(out, key=lambda ln: int(self.fabric.links.port[ln]))

    def table_of(self, node: int) -> int:
        """The routing table of a NIC's source-based rule in its host namespace."""
        return 100 + int(self.nodes_in_ns[int(self.ns_of_node[node])].index(node))


def _short(fabric: Fabric, node: int, rank: np.ndarray) -> str:
    kind = NodeKind(int(fabric.nodes.kind[node]))
    if kind in ENDPOINT_KINDS:
        h = int(fabric.nodes.host[node])
        return f"h{h if h >= 0 else node}"
    return f"{_SHORT[kind]}{int(rank[node])}"


def make_plan(spec: LabSpec) -> LabPlan:
    """Build the scaled fabric and derive everything the lab creates from its arrays."""
    fabric = build(spec.fabric_spec())
    nd, lk = fabric.nodes, fabric.links
    prefix = spec.prefix
    if nd.network.max() != Network.BACKEND:
        raise InputError("frontend", "the lab builds the backend network only")
    # rank of each switch within its kind, for short names
    rank = np.full(fabric.num_nodes, -1, np.int64)
    for kind in SWITCH_KINDS:
        ids = np.flatnonzero(nd.kind == kind)
        rank[ids] = np.arange(len(ids))
    # namespaces: hosts (grouping their NICs), then switches
    ns_of_node = np.full(fabric.num_nodes, -1, np.int64)
    names: list[str] = []
    roles: list[str] = []
    index: dict[str, int] = {}
    for node in range(fabric.num_nodes):
        kind = NodeKind(int(nd.kind[node]))
        if kind not in ENDPOINT_KINDS and kind not in SWITCH_KINDS:
            continue
        name = f"{prefix}-{_short(fabric, node, rank)}"
        if name not in index:
            index[name] = len(names)
            names.append(name)
            roles.append("host" if kind in ENDPOINT_KINDS else kind.name.lower())
        ns_of_node[node] = index[name]
    if len(names) > MAX_NAMESPACES:
        raise InputError(
            "lab",
            f"this fabric needs {len(names)} namespaces, the lab builds at most "
            f"{MAX_NAMESPACES}; lower --segments, --hosts-per-segment, --rails or "
            "--aggs-per-plane",
        )
    # links: everything but NVLink, between nodes with namespaces
    keep = (ns_of_node[lk.src] >= 0) & (ns_of_node[lk.dst] >= 0) & (lk.tier != LinkTier.NVLINK)
    links = np.flatnonzero(keep)
    ifname: dict[int, str] = {}
    used: dict[tuple[int, str], int] = {}
    for ln in links:
        a, b = int(lk.src[ln]), int(lk.dst[ln])
        if nd.kind[a] in ENDPOINT_KINDS:  # NIC side: n<nic index>p<port>
            base = f"{prefix}n{max(int(nd.index[a]), 0)}p{max(int(lk.port[ln]), 0)}"
        elif nd.kind[b] in ENDPOINT_KINDS:
            base = f"{prefix}{_short(fabric, b, rank)}n{max(int(nd.index[b]), 0)}"
        else:
            base = f"{prefix}{_short(fabric, b, rank)}"
        key = (int(ns_of_node[a]), base)
        k = used.get(key, 0)
        used[key] = k + 1
        name = base if k == 0 else f"{base}x{k}"
        if len(name) > IFNAMSIZ:
            raise InputError("lab", f"interface name {name!r} exceeds {IFNAMSIZ} characters")
        ifname[int(ln)] = name
    if len(links) // 2 >= 1 << 21:
        raise InputError("lab", "too many links for 100.64.0.0/10")
    end_ip = np.zeros(fabric.num_links, np.uint32)
    end_ip[links] = LINK_BASE + 2 * (links // 2) + (links & 1)
    nic_ip, subnets, subnet_len = _nic_addresses(fabric, links)
    router = HashEcmpRouter(seed=spec.seed, hashing={"seeds": spec.ecmp_seeds})
    # switches by the seed policy, hosts (their NIC port choice) one seed per host
    kernel_seed = np.zeros(fabric.num_nodes, np.uint32)
    have = np.flatnonzero(np.isin(nd.kind, (*SWITCH_KINDS, *ENDPOINT_KINDS)))
    kernel_seed[have] = router.kernel_seeds(fabric, have)
    return LabPlan(
        spec, fabric, ns_of_node, names, roles, links, ifname, end_ip, nic_ip, subnets,
        kernel_seed, subnet_len,
    )  # fmt: skip


def _nic_addresses(fabric: Fabric, links: np.ndarray) -> tuple[np.ndarray, list, int]:
    """The routing layer's addresses: one subnet per ToR pair (the ToRs a NIC's ports land
    on), one address per NIC; (addresses, (network, ToRs) per subnet, prefix length)."""
    from hpn.routing.addressing import BASE, address_plan

    nd, lk = fabric.nodes, fabric.links
    ap = address_plan(fabric)
    nic_links = links[
        (lk.tier[links] == LinkTier.NIC_TOR) & np.isin(nd.kind[lk.src[links]], ENDPOINT_KINDS)
    ]
    tors_of: dict[int, set[int]] = {}
    for ln in nic_links:
        tors_of.setdefault(int(ap.subnet[lk.src[ln]]), set()).add(int(lk.dst[ln]))
    block = 1 << (32 - ap.prefix_len)
    subnets = [(BASE + g * block, sorted(tors_of[g])) for g in sorted(tors_of)]
    nic_ip = np.zeros(fabric.num_nodes, np.uint32)
    ends = np.unique(lk.src[nic_links])
    nic_ip[ends] = ap.ip[ends]
    return nic_ip, subnets, ap.prefix_len
