"""Placement: which GPUs of a fabric a job gets, as a (hosts, GPUs per host) array of node ids.

Rank ``r`` of a job is ``gpus.ravel()[r]``: ranks fill a host before the next (NCCL's and
Megatron's order). Hosts are taken contiguously in fabric order (pod, segment, host), skipping
backup hosts, starting at ``first_host``. Rail-aware: local rank ``i`` of a host is its GPU
``i``, whose NIC sits on rail ``i`` in a rail-optimized fabric, so the same job lands on HPN
within one segment's rails and on DCN+ over consecutive 16-host segments, as each cluster would.

The host order is the launcher's host list, which NCCL follows when it chains hosts into rings
(NCCL 2.30.7 ``src/init.cc`` 1291-1301, ``src/graph/connect.cc`` 95-113): ``fabric`` (the
default), ``random`` (a random permutation) or ``swaps=K`` (K random transpositions of fabric
order: a host list that mostly follows the segments), drawn from ``order_seed``.
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


def host_order(n: int, order: str = "fabric", seed: int = 1) -> np.ndarray:
    """A permutation of ``n`` hosts: ``fabric`` (identity), ``random`` or ``swaps=K``."""
    what = "fabric, random or swaps=K (K >= 0 random transpositions of fabric order)"
    kind, _, arg = str(order).partition("=")
    if kind == "fabric" and not arg:
        return np.arange(n)
    rng = np.random.default_rng(seed)
    if kind == "random" and not arg:
        return rng.permutation(n)
    if kind != "swaps" or not arg.isdigit():
        raise InputError("host_order", f"must be {what}, got {order!r}")
    out = np.arange(n)
    for _ in range(int(arg) if n > 1 else 0):
        i, j = rng.choice(n, 2, replace=False)
        out[[i, j]] = out[[j, i]]
    return out


def place(
    fabric: Fabric,
    gpus: int,
    per_host: int | None = None,
    first_host: int = 0,
    order: str = "fabric",
    order_seed: int = 1,
) -> Placement:
    """``gpus`` GPUs, ``per_host`` on each host (default: all of a host), on contiguous hosts
    listed in ``order`` (:func:`host_order`, seeded by ``order_seed``)."""
    grid = host_gpus(fabric)
    k = grid.shape[1] if per_host is None else per_host
    if not 1 <= k <= grid.shape[1]:
        raise InputError("per_host", f"must be in 1..{grid.shape[1]}, got {k}")
    if gpus < 1 or gpus % k:
        raise InputError("gpus", f"must be a positive multiple of per_host={k}, got {gpus}")
    need = gpus // k
    if first_host < 0 or first_host + need > len(grid):
        raise InputError(
            "first_host" if first_host else "gpus",
            f"{gpus} GPUs at {k} per host need hosts {first_host}..{first_host + need - 1}; "
            f"the fabric has {len(grid)} active hosts",
        )
    hosts = grid[first_host : first_host + need, :k]
    return Placement(hosts[host_order(need, order, order_seed)].copy())
