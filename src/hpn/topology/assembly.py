"""Vectorized assembly of node and link arrays, shared by every fabric builder."""

from __future__ import annotations

from typing import Any

import numpy as np

from hpn.topology.fabric import Fabric, Links, LinkTier, Network, NodeKind, Nodes

NODE_DTYPES = {
    "kind": np.uint8,
    "network": np.uint8,
    "pod": np.int32,
    "segment": np.int32,
    "rail": np.int16,
    "plane": np.int16,
    "host": np.int32,
    "index": np.int32,
    "backup": np.bool_,
}
LINK_DTYPES = {
    "src": np.int32,
    "dst": np.int32,
    "capacity": np.float64,
    "latency": np.float64,
    "tier": np.uint8,
    "port": np.int8,
}


class Assembly:
    """Append blocks of nodes and of physical links; :meth:`fabric` concatenates them once."""

    def __init__(self) -> None:
        self._nodes: list[dict[str, np.ndarray]] = []
        self._links: list[tuple[np.ndarray, ...]] = []
        self.num_nodes = 0

    def add_nodes(
        self,
        kind: NodeKind,
        count: int,
        network: Network = Network.BACKEND,
        **attrs: np.ndarray | int | bool,
    ) -> np.ndarray:
        """Add ``count`` nodes; attributes are arrays of length ``count`` or scalars.

        Returns the new node ids.
        """
        block: dict[str, np.ndarray] = {}
        for name, dtype in NODE_DTYPES.items():
            if name == "kind":
                value: Any = int(kind)
            elif name == "network":
                value = int(network)
            else:
                value = attrs.pop(name, False if name == "backup" else -1)
            block[name] = np.broadcast_to(np.asarray(value, dtype=dtype), (count,)).copy()
        if attrs:
            raise TypeError(f"unknown node attributes: {sorted(attrs)}")
        self._nodes.append(block)
        ids = np.arange(self.num_nodes, self.num_nodes + count, dtype=np.int64)
        self.num_nodes += count
        return ids

    def add_links(
        self,
        a: np.ndarray,
        b: np.ndarray,
        capacity: float,
        latency: float,
        tier: LinkTier,
        port: np.ndarray | int = -1,
    ) -> None:
        """Add full-duplex physical links a[i] <-> b[i] (two directed links each)."""
        a = np.asarray(a, dtype=np.int64).ravel()
        b = np.asarray(b, dtype=np.int64).ravel()
        if a.shape != b.shape:
            raise ValueError("link endpoint arrays differ in length")
        n = len(a)
        port_arr = np.broadcast_to(np.asarray(port, dtype=np.int8), (n,))
        self._links.append(
            (
                np.stack((a, b), axis=1).ravel(),
                np.stack((b, a), axis=1).ravel(),
                np.full(2 * n, capacity, dtype=np.float64),
                np.full(2 * n, latency, dtype=np.float64),
                np.full(2 * n, int(tier), dtype=np.uint8),
                np.repeat(port_arr, 2),
            )
        )

    def add_mesh(
        self,
        lower: np.ndarray,
        upper: np.ndarray,
        capacity: float,
        latency: float,
        tier: LinkTier,
        parallel: int = 1,
    ) -> None:
        """Link every ``lower`` node to every ``upper`` node, ``parallel`` times (lower-major)."""
        lo = np.repeat(np.asarray(lower, np.int64), len(upper) * parallel)
        up = np.tile(np.repeat(np.asarray(upper, np.int64), parallel), len(lower))
        self.add_links(lo, up, capacity, latency, tier)

    def fabric(self, spec: Any, meta: dict[str, Any] | None = None) -> Fabric:
        """The fabric of everything added so far.

        Parameters
        ----------
        spec
            The spec it was built from (kept as ``Fabric.spec``; None for imports).
        meta
            Derived figures to keep (``Fabric.meta``), copied.

        Returns
        -------
        Fabric
            Nodes in the order they were added; links in directed pairs (``2 i`` and
            ``2 i + 1`` are the two directions of one cable).
        """
        nodes = Nodes(
            **{
                name: np.concatenate([blk[name] for blk in self._nodes])
                if self._nodes
                else np.empty(0, dtype)
                for name, dtype in NODE_DTYPES.items()
            }
        )
        cols = list(zip(*self._links, strict=True)) if self._links else [[]] * len(LINK_DTYPES)
        links = Links(
            **{
                name: np.concatenate(c).astype(d, copy=False) if len(c) else np.empty(0, d)
                for c, (name, d) in zip(cols, LINK_DTYPES.items(), strict=True)
            }
        )
        return Fabric(spec=spec, nodes=nodes, links=links, meta=dict(meta or {}))
