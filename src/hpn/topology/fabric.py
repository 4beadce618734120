"""The fabric: node and link arrays.

A ``Fabric`` is plain numpy arrays, built once and read by every later layer (routing, engine,
failures). Links are directed; physical link ``i`` is the pair of directed links ``2i``
(lower tier -> upper tier, or the order it was wired) and ``2i + 1`` (its reverse), so
``reverse(l) == l ^ 1``. Convert to networkx with :meth:`Fabric.to_networkx` only when needed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import networkx as nx
    import scipy.sparse as sp


class NodeKind(IntEnum):
    GPU = 0
    NVSWITCH = 1
    NIC = 2  # a host-level NIC node (the frontend NIC0); backend NIC ports are GPU links
    HOST = 3  # an endpoint with one NIC (fat-tree hosts)
    TOR = 4
    AGG = 5
    CORE = 6


class LinkTier(IntEnum):
    NVLINK = 0  # GPU <-> NVSwitch inside a host
    NIC_TOR = 1  # a backend NIC port (or fat-tree host) <-> ToR
    TOR_AGG = 2
    AGG_CORE = 3
    FE_NIC_TOR = 4  # frontend
    FE_TOR_AGG = 5
    FE_AGG_CORE = 6


class Network(IntEnum):
    BACKEND = 0
    FRONTEND = 1


@dataclass(frozen=True, eq=False)
class Nodes:
    """One entry per node; -1 where an attribute does not apply."""

    kind: np.ndarray  # uint8 NodeKind
    network: np.ndarray  # uint8 Network
    pod: np.ndarray  # int32
    segment: np.ndarray  # int32, index within the pod
    rail: np.ndarray  # int16
    plane: np.ndarray  # int16: for ToRs the NIC port they serve, for Aggs/Cores their plane
    host: np.ndarray  # int32, global host index
    index: np.ndarray  # int32, local index (GPU in host, ToR in segment, Agg in plane, ...)
    backup: np.ndarray  # bool

    def __len__(self) -> int:
        return len(self.kind)


@dataclass(frozen=True, eq=False)
class Links:
    """Directed links; see the module docstring for the pairing rule."""

    src: np.ndarray  # int32 node id
    dst: np.ndarray  # int32 node id
    capacity: np.ndarray  # float64 bit/s
    latency: np.ndarray  # float64 s
    tier: np.ndarray  # uint8 LinkTier
    port: np.ndarray  # int8: NIC port (0/1) on NIC-ToR links, -1 elsewhere

    def __len__(self) -> int:
        return len(self.src)


@dataclass(frozen=True, eq=False)
class Fabric:
    """A built fabric: its spec, nodes and directed links."""

    spec: Any  # the FabricSpec it was built from (None when imported)
    nodes: Nodes
    links: Links
    meta: dict[str, Any] = field(default_factory=dict)  # derived budget figures

    @property
    def num_nodes(self) -> int:
        """Number of nodes."""
        return len(self.nodes)

    @property
    def num_links(self) -> int:
        """Number of directed links (twice the physical links)."""
        return len(self.links)

    @staticmethod
    def reverse(link: np.ndarray | int) -> np.ndarray | int:
        """The directed link in the opposite direction."""
        return np.bitwise_xor(link, 1) if isinstance(link, np.ndarray) else link ^ 1

    def nodes_of(self, kind: NodeKind, network: Network = Network.BACKEND) -> np.ndarray:
        """Ids of the nodes of one kind in one network.

        Parameters
        ----------
        kind
            Node kind.
        network
            Backend (default) or frontend.

        Returns
        -------
        numpy.ndarray
            Node ids, ascending.
        """
        mask = (self.nodes.kind == kind) & (self.nodes.network == network)
        return np.flatnonzero(mask)

    def count(self, kind: NodeKind, network: Network = Network.BACKEND) -> int:
        """How many nodes of one kind are in one network.

        Parameters
        ----------
        kind
            Node kind.
        network
            Backend (default) or frontend.

        Returns
        -------
        int
            The count.

        Examples
        --------
        >>> from hpn.topology.presets import build
        >>> f = build("fat-tree", k=4)
        >>> f.count(NodeKind.HOST), f.count(NodeKind.CORE), f.num_nodes
        (16, 4, 36)
        """
        return int(np.count_nonzero((self.nodes.kind == kind) & (self.nodes.network == network)))

    def physical_links(self, tier: LinkTier) -> int:
        """Physical (undirected) links of one tier.

        Parameters
        ----------
        tier
            Link tier.

        Returns
        -------
        int
            The count.
        """
        return int(np.count_nonzero(self.links.tier[0::2] == tier))

    @cached_property
    def adjacency(self) -> sp.csr_matrix:
        """Node x node CSR matrix whose entries are directed link ids + 1 (0 = no link).

        With parallel links between a pair, the entry is the one with the lowest id; use
        :meth:`out_links` to see them all.
        """
        import scipy.sparse as sp  # here: a run that never asks imports no scipy

        n = self.num_nodes
        ids = np.arange(len(self.links), dtype=np.int64)
        order = np.lexsort((ids, self.links.dst, self.links.src))
        src, dst = self.links.src[order], self.links.dst[order]
        keep = np.ones(len(order), bool)
        keep[1:] = (src[1:] != src[:-1]) | (dst[1:] != dst[:-1])
        return sp.csr_matrix(
            (ids[order][keep] + 1, (src[keep], dst[keep])), shape=(n, n), dtype=np.int64
        )

    @cached_property
    def out_csr(self) -> tuple[np.ndarray, np.ndarray]:
        """(offsets, link ids) of each node's outgoing links, in link-id (port) order."""
        order = np.argsort(self.links.src, kind="stable")
        counts = np.bincount(self.links.src, minlength=self.num_nodes)
        offsets = np.zeros(self.num_nodes + 1, np.int64)
        np.cumsum(counts, out=offsets[1:])
        return offsets, order.astype(np.int64)

    def out_links(self, node: int) -> np.ndarray:
        """Outgoing link ids of ``node``, in link-id (port) order.

        Parameters
        ----------
        node
            Node id.

        Returns
        -------
        numpy.ndarray
            Directed link ids (a view of :attr:`out_csr`).
        """
        offsets, ids = self.out_csr
        return ids[offsets[node] : offsets[node + 1]]

    def link_between(self, a: int, b: int) -> int:
        """A directed link id from a to b, or -1."""
        return int(self.adjacency[a, b]) - 1

    def node_name(self, node: int) -> str:
        """A readable name: ``pod0/seg3/tor-r2-p1``, ``host17/gpu5``, ``pod0/agg-p0-12``."""
        n = self.nodes
        kind = NodeKind(int(n.kind[node]))
        fe = "fe-" if n.network[node] == Network.FRONTEND else ""
        pod, seg, rail, plane = (
            int(n.pod[node]),
            int(n.segment[node]),
            int(n.rail[node]),
            int(n.plane[node]),
        )
        idx = int(n.index[node])
        if kind in (NodeKind.GPU, NodeKind.NIC):
            return f"host{int(n.host[node])}/{fe}{kind.name.lower()}{idx}"
        if kind in (NodeKind.NVSWITCH, NodeKind.HOST):
            return f"host{int(n.host[node])}" + ("/nvswitch" if kind == NodeKind.NVSWITCH else "")
        if kind == NodeKind.TOR:
            r = f"-r{rail}" if rail >= 0 else ""
            p = f"-p{plane}" if plane >= 0 else ""
            return f"pod{pod}/seg{seg}/{fe}tor{r}{p}" if seg >= 0 else f"{fe}tor{idx}"
        p = f"p{plane}-" if plane >= 0 else ""
        r = f"r{rail}-" if rail >= 0 else ""
        where = f"pod{pod}/" if pod >= 0 else ""
        return f"{where}{fe}{kind.name.lower()}-{r}{p}{idx}"

    def to_networkx(self, multigraph: bool = True) -> nx.MultiDiGraph | nx.DiGraph:
        """A networkx (Multi)DiGraph with node attributes and link ids on edges."""
        import networkx as nx

        g: nx.DiGraph = nx.MultiDiGraph() if multigraph else nx.DiGraph()
        n = self.nodes
        kinds = [k.name.lower() for k in NodeKind]
        for i in range(self.num_nodes):
            g.add_node(
                i,
                kind=kinds[n.kind[i]],
                network=Network(int(n.network[i])).name.lower(),
                pod=int(n.pod[i]),
                segment=int(n.segment[i]),
                rail=int(n.rail[i]),
                plane=int(n.plane[i]),
                host=int(n.host[i]),
                index=int(n.index[i]),
                backup=bool(n.backup[i]),
            )
        tiers = [t.name.lower() for t in LinkTier]
        lk = self.links
        for i in range(self.num_links):
            g.add_edge(
                int(lk.src[i]),
                int(lk.dst[i]),
                link=i,
                capacity=float(lk.capacity[i]),
                latency=float(lk.latency[i]),
                tier=tiers[lk.tier[i]],
                port=int(lk.port[i]),
            )
        return g
