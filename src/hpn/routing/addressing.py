"""Addresses and RoCEv2 5-tuples of backend endpoints.

IP plan: every ToR pair (the ToRs that a NIC's ports land on) is one L2 subnet (P §4.2); a
NIC has one IP and one MAC for both its ports. Subnets are cut from 10.0.0.0/8 in ToR order,
each the smallest power-of-two block that holds its NICs plus network and broadcast
addresses (a /24 for HPN's 136 NICs per ToR pair). RoCEv2 runs over UDP to port 4791; the
source port is the entropy a collective library sets per connection (queue pair).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

import numpy as np

from hpn.errors import InputError
from hpn.routing.cache import per_fabric
from hpn.routing.hashing import TupleBytes
from hpn.topology.fabric import Fabric, LinkTier, NodeKind

ROCE_PORT = 4791
UDP = 17
BASE = int(ipaddress.IPv4Address("10.0.0.0"))
SPORT_MIN, SPORT_MAX = 49152, 65535  # the dynamic range


@dataclass(frozen=True, eq=False)
class AddressPlan:
    """``ip[node]`` (uint32; 0 for nodes without an address) and each endpoint's subnet."""

    ip: np.ndarray
    subnet: np.ndarray  # int64, -1 for nodes without an address
    prefix_len: int

    def ip_str(self, node: int) -> str:
        """Dotted address of ``node``.

        Parameters
        ----------
        node
            Node id.

        Returns
        -------
        str
            ``10.x.y.z``.

        Raises
        ------
        InputError
            When the node has no backend address.
        """
        if not self.ip[node]:
            raise InputError("node", f"node {node} has no backend address")
        return str(ipaddress.IPv4Address(int(self.ip[node])))


@per_fabric
def address_plan(fabric: Fabric) -> AddressPlan:
    """Assign one IP per backend endpoint (GPU NIC or host), one subnet per ToR pair.

    Parameters
    ----------
    fabric
        The fabric (the plan is cached for as long as it lives).

    Returns
    -------
    AddressPlan
        Addresses in 10.0.0.0/8, subnets sized to the largest ToR pair.
    """
    lk, nd = fabric.links, fabric.nodes
    m = (lk.tier == LinkTier.NIC_TOR) & np.isin(nd.kind[lk.src], (NodeKind.GPU, NodeKind.HOST))
    m &= lk.port <= 0
    ends, tors = lk.src[m].astype(np.int64), lk.dst[m].astype(np.int64)
    ip = np.zeros(fabric.num_nodes, np.uint32)
    subnet = np.full(fabric.num_nodes, -1, np.int64)
    if not len(ends):
        return AddressPlan(ip, subnet, 32)
    order = np.lexsort((ends, tors))
    ends, tors = ends[order], tors[order]
    group, first = np.unique(tors, return_index=True)
    gid = np.searchsorted(group, tors)
    rank = np.arange(len(ends)) - first[gid]
    need = int(rank.max()) + 3
    block = 1 << int(np.ceil(np.log2(need)))
    if len(group) * block > 1 << 24:
        raise InputError("addressing", f"{len(group)} subnets of {block} do not fit in 10.0.0.0/8")
    ip[ends] = BASE + gid * block + rank + 1
    subnet[ends] = gid
    return AddressPlan(ip, subnet, 32 - int(np.log2(block)))


def roce_tuples(
    plan: AddressPlan, src: np.ndarray, dst: np.ndarray, sport: np.ndarray
) -> TupleBytes:
    """The RoCEv2 5-tuples (UDP, destination port 4791) of flows src -> dst.

    Parameters
    ----------
    plan
        The address plan.
    src, dst
        Endpoint node ids of each flow.
    sport
        UDP source port of each flow.

    Returns
    -------
    TupleBytes
        The tuples' bytes, column by column.
    """
    s_ip, d_ip = plan.ip[src], plan.ip[dst]
    if (s_ip == 0).any() or (d_ip == 0).any():
        bad = (
            int(np.asarray(src)[s_ip == 0][0])
            if (s_ip == 0).any()
            else int(np.asarray(dst)[d_ip == 0][0])
        )
        raise InputError("flows", f"node {bad} has no backend address (not a NIC endpoint)")
    return TupleBytes(s_ip, d_ip, sport, ROCE_PORT, UDP)


def random_sports(seed: int, n: int) -> np.ndarray:
    """Source ports as a library that draws them per queue pair would: uniform, seeded.

    Parameters
    ----------
    seed
        Seed.
    n
        Ports.

    Returns
    -------
    numpy.ndarray
        Ports in the dynamic range 49152..65535.
    """
    rng = np.random.default_rng(seed)
    return rng.integers(SPORT_MIN, SPORT_MAX + 1, n, dtype=np.uint32)
