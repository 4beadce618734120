"""Placement: which GPUs of a fabric a job gets, as a (hosts, GPUs per host) array of node ids.

Rank ``r`` of a job is ``gpus.ravel()[r]``: ranks fill a host before the next (NCCL's and
Megatron's order). Hosts are taken contiguously in fabric order (pod, segment, host), skipping
backup hosts, starting at ``first_host``. Rail-aware: local rank ``i`` of a host is its GPU
``i``, whose NIC sits on rail ``i`` in a rail-optimized fabric, so the same job lands on HPN
within one segment's rails and on DCN+ over consecutive 16-host segments, as each cluster would.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hpn.errors import InputError
from hpn.topology.fabric import Fabric, Network, NodeKind


@dataclass(frozen=True, eq=False)
class Placement:
    """GPU node ids of a job, shaped (hosts, per_host)."""

    gpus: np.ndarray

    @property
    def hosts(self) -> int:
        return self.gpus.shape[0]

    @property
    def per_host(self) -> int:
        return self.gpus.shape[1]

    @property
    def size(self) -> int:
        return self.gpus.size

    @property
    def ranks(self) -> np.ndarray:
        return self.gpus.ravel()


def host_gpus(fabric: Fabric) -> np.ndarray:
    """GPU ids of the active backend hosts, shaped (hosts, gpus per host), in fabric order."""
    n = fabric.nodes
    ok = (n.kind == NodeKind.GPU) & (n.network == Network.BACKEND) & ~n.backup
    ids = np.flatnonzero(ok)
    if not len(ids):
        raise InputError("placement", "the fabric has no GPU hosts")
    order = np.lexsort((n.index[ids], n.host[ids], n.segment[ids], n.pod[ids]))
    ids = ids[order]
    hosts, counts = np.unique(n.host[ids], return_counts=True)
    if (counts != counts[0]).any():
        raise InputError("placement", "hosts with different GPU counts are not supported")
    return ids.reshape(len(hosts), counts[0])


def place(fabric: Fabric, gpus: int, per_host: int | None = None, first_host: int = 0) -> Placement:
    """``gpus`` GPUs, ``per_host`` on each host (default: all of a host), hosts contiguous."""
    grid = host_gpus(fabric)
    k = grid.shape[1] if per_host is None else per_host
    if not 1 <= k <= grid.shape[1]:
        raise InputError("per_host", f"must be in 1..{grid.shape[1]}, got {k}")
    if gpus < 1 or gpus % k:
        raise InputError("gpus", f"must be a positive multiple of per_host={k}, got {gpus}")
    need = gpus // k
    if first_host < 0 or first_host + need > len(grid):
        raise InputError(
            "gpus",
            f"{gpus} GPUs at {k} per host need hosts {first_host}..{first_host + need - 1}; "
            f"the fabric has {len(grid)} active hosts",
        )
    return Placement(grid[first_host : first_host + need, :k].copy())
