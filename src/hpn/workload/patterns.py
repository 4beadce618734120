"""Synthetic traffic patterns, each a ``FlowDAG``: permutation, all-to-all, incast, rail-ring.

Endpoints are the backend GPUs of active (non-backup) hosts, or the hosts of a fat tree; every
GPU has one NIC (two ports under dual-ToR), so "every GPU NIC sends" means every GPU sends.
Patterns are registered by name in :data:`PATTERNS`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from hpn.engine.dag import FlowDAG
from hpn.errors import InputError
from hpn.registry import Registry
from hpn.topology.fabric import Fabric, Network, NodeKind

MAX_FLOWS = 4_000_000


def endpoints(fabric: Fabric, limit: int | None = None) -> np.ndarray:
    """Backend GPUs of active hosts (or fat-tree hosts), in node order; the first ``limit``."""
    n = fabric.nodes
    ok = np.isin(n.kind, [NodeKind.GPU, NodeKind.HOST]) & (n.network == Network.BACKEND) & ~n.backup
    ep = np.flatnonzero(ok)
    if limit is not None:
        if limit < 2:
            raise InputError("endpoints", f"must be >= 2, got {limit}")
        ep = ep[:limit]
    if len(ep) < 2:
        raise InputError("pattern", f"needs at least 2 endpoints, the fabric has {len(ep)}")
    return ep


def permutation(fabric: Fabric, size: float, seed: int = 0, limit: int | None = None) -> FlowDAG:
    """Every endpoint sends one flow to a distinct random peer (a random cyclic permutation,
    so nobody sends to itself), all at t = 0."""
    ep = endpoints(fabric, limit)
    order = np.random.default_rng(seed).permutation(len(ep))
    dst = np.empty(len(ep), np.int64)
    dst[order] = ep[np.roll(order, -1)]
    dag = FlowDAG()
    dag.add_flows(ep, dst, size)
    return dag


def all_to_all(fabric: Fabric, size: float, seed: int = 0, limit: int | None = None) -> FlowDAG:
    """Every endpoint sends ``size`` bytes to every other one, all at t = 0."""
    ep = endpoints(fabric, limit)
    n = len(ep)
    if n * (n - 1) > MAX_FLOWS:
        raise InputError(
            "pattern",
            f"all-to-all over {n} endpoints is {n * (n - 1):,} flows; "
            f"limit the endpoints (at most {MAX_FLOWS:,} flows)",
        )
    i, j = np.divmod(np.arange(n * n), n)
    keep = i != j
    dag = FlowDAG()
    dag.add_flows(ep[i[keep]], ep[j[keep]], size)
    return dag


def incast(fabric: Fabric, size: float, seed: int = 0, limit: int | None = None) -> FlowDAG:
    """Every endpoint but one random receiver sends ``size`` bytes to it, all at t = 0."""
    ep = endpoints(fabric, limit)
    r = int(np.random.default_rng(seed).integers(len(ep)))
    dag = FlowDAG()
    dag.add_flows(np.delete(ep, r), ep[r], size)
    return dag


def rail_ring(fabric: Fabric, size: float, seed: int = 0, limit: int | None = None) -> FlowDAG:
    """One ring per rail: GPU r of every host sends ``size`` bytes to GPU r of the next host.

    Each ring is a coupled group (a pipelined collective streams at its slowest edge). Without
    rails (fat tree, non-rail fabrics) all endpoints form one ring.
    """
    ep = endpoints(fabric, limit)
    rail = fabric.nodes.rail[ep]
    if (rail < 0).any():
        rail = np.zeros(len(ep), np.int64)
    dag = FlowDAG()
    for r in np.unique(rail):
        ring = ep[rail == r]
        if len(ring) >= 2:
            dag.add_flows(ring, np.roll(ring, -1), size, coupled=True)
    if dag.num_flows == 0:
        raise InputError("pattern", "rail-ring needs at least 2 hosts per rail")
    return dag


PATTERNS: Registry[Callable[..., FlowDAG]] = Registry("pattern")
PATTERNS.add("permutation", permutation)
PATTERNS.add("all-to-all", all_to_all)
PATTERNS.add("incast", incast)
PATTERNS.add("rail-ring", rail_ring)


def make_pattern(
    name: str, fabric: Fabric, size: float, seed: int = 0, limit: int | None = None
) -> FlowDAG:
    pattern = PATTERNS.get(name)
    if not size >= 0:
        raise InputError("size", f"must be >= 0, got {size}")
    return pattern(fabric, size, seed, limit)
