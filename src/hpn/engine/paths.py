"""Every flow's path before a run: the DAG's explicit paths and the router's, each connection
(same source, destination and routing key) routed once when the router declares its choice a
function of the connection (``per_connection``)."""

from __future__ import annotations

import numpy as np

from hpn.engine import kernels
from hpn.engine.dag import ID, ID_MAX, Tasks
from hpn.engine.fill_kernels import kernels_for
from hpn.engine.memory import trim
from hpn.engine.state import PathTable
from hpn.routing.base import Router
from hpn.topology.fabric import Fabric


def route_flows(fabric: Fabric, router: Router, t: Tasks) -> PathTable:
    """Every flow's path: the DAG's explicit ones, the router's for the others (each
    connection routed once when the router allows it).

    Parameters
    ----------
    fabric
        The fabric.
    router
        The router.
    t
        The DAG's tasks (:meth:`FlowDAG.tasks`).

    Returns
    -------
    PathTable
        Path rows, lengths and latency of every flow.
    """
    with kernels_for(fabric, len(t.size)):  # (also when called outside run_sim)
        table = _route_flows(fabric, router, t)
    trim(len(t.size))  # the router's temporaries back to the OS
    return table


def _route_flows(fabric: Fabric, router: Router, t: Tasks) -> PathTable:
    nf = len(t.size)
    lat = fabric.links.latency
    given = np.flatnonzero(t.has_path)
    every = not len(given)  # every flow routed: the DAG's arrays as they are, no copies
    routed = np.flatnonzero(~t.has_path) if not every else None
    p, inv, n_routed = None, None, 0
    if nf and (every or len(routed)):  # type: ignore[arg-type]
        if every:
            src, dst, keys = t.src, t.dst, t.keys
        else:
            src, dst, keys = t.src[routed], t.dst[routed], t.keys[routed]
        if getattr(router, "per_connection", False):
            first, inv = connections(src, dst, keys, fabric.num_nodes)
            if first.base is not None:  # a view of a buffer of every flow: not kept
                first = first.copy()
            inv = inv.astype(ID) if len(first) <= ID_MAX else inv
        else:
            first, inv = np.arange(len(src)), np.arange(len(src))
        # (the per-flow arrays come after: the router's temporaries are the peak)
        p = router.route(fabric, src[first], dst[first], keys[first])
        del src, dst, keys, first
        n_routed = len(p.lengths)
    start = np.zeros(nf, np.int64)
    length = np.zeros(nf, ID)  # hops per flow
    latency = np.zeros(nf)
    parts = []
    if len(given):
        t.paths.check(fabric, t.src[given], t.dst[given])
        start[given] = t.paths.offsets[:-1]
        length[given] = t.paths.lengths
        latency[given] = t.paths.per_flow_sum(lat)
        parts.append(t.paths.links)
    if p is not None:
        base = sum(len(x) for x in parts)
        at = slice(None) if every else routed
        start[at] = (p.offsets[:-1] + base)[inv]
        length[at] = p.lengths[inv]
        latency[at] = p.per_flow_sum(lat)[inv]
        parts.append(p.links)
    links = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    if len(links) <= ID_MAX:  # row starts as int32 (:meth:`PathTable.replace` widens)
        start = start.astype(ID)
    return PathTable(start, length, links.astype(np.int64), latency, n_routed)


def connections(
    src: np.ndarray, dst: np.ndarray, keys: np.ndarray, n_nodes: int, compiled: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """(first flow of each distinct (src, dst, key) in order of first appearance, the
    connection of every flow).

    Parameters
    ----------
    src, dst, keys
        Per flow.
    n_nodes
        Nodes of the fabric (to combine src and dst into one key).
    compiled
        Group by a compiled hash table of the keys when numba is there (the same result as
        the sorts below; 4.9 M flows: ~0.3 s instead of ~1.3 s); False: the sorts.

    Returns
    -------
    tuple of numpy.ndarray
        First flow of each connection, and each flow's connection index.
    """
    if compiled and (found := kernels.connection_ids(src, dst, keys)) is not None:
        return found
    order = np.argsort(keys, kind="stable")  # keys are mostly unique per (src, dst)
    new = np.ones(len(order), bool)
    k = keys[order]
    np.not_equal(k[1:], k[:-1], out=new[1:])
    pair = src * n_nodes + dst
    p = pair[order]
    if (p[1:] != p[:-1])[~new[1:]].any():  # a key shared by two pairs: sort by both
        order = np.lexsort((keys, pair))
        p, k = pair[order], keys[order]
        new[1:] = (p[1:] != p[:-1]) | (k[1:] != k[:-1])
    group = np.cumsum(new) - 1
    first = order[new]  # stable sorts: the earliest flow of each connection
    rank = np.argsort(first)  # connections in order of first appearance (distinct values)
    pos = np.empty(len(rank), np.int64)
    pos[rank] = np.arange(len(rank))
    inv = np.empty(len(order), np.int64)
    inv[order] = pos[group]
    return first[rank], inv
