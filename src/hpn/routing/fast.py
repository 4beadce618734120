"""Glue between the routers and the compiled kernels of :mod:`hpn.routing.kernels`: the
arrays a kernel takes, the candidate-list store it fills, the errors it reports.

A router's :meth:`~hpn.routing.shortest.EcmpRouter.kernel_spec` says how it chooses (a
:class:`FlowSpec`); :func:`route_compiled` walks flows with it, :func:`search_compiled` runs
HPN's candidate rounds. Both give exactly what the numpy code gives (tests check it).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from hpn.errors import InputError
from hpn.routing import kernels as K
from hpn.routing import parallel as P
from hpn.routing.base import Paths
from hpn.routing.cache import per_fabric
from hpn.topology.fabric import NodeKind

if TYPE_CHECKING:
    from hpn.topology import Fabric  # (the graph and walk are hpn.routing.shortest's)


_ROLES = {NodeKind.TOR: 1, NodeKind.AGG: 2, NodeKind.CORE: 3, NodeKind.NVSWITCH: 4}
_MEMO_MAX = 1 << 27  # (switch, class) memo entries at most (int32 each); beyond: no memo


@dataclass(frozen=True, eq=False)
class FlowSpec:
    """How a router chooses (``hs``: the kernel's hash settings) and every flow's 5-tuple
    fields and connection key (int64 arrays)."""

    hs: tuple
    s_ip: np.ndarray
    d_ip: np.ndarray
    sport: np.ndarray
    conn: np.ndarray

    def take(self, idx: np.ndarray) -> FlowSpec:
        """The spec of flows ``idx``, in that order."""
        return FlowSpec(self.hs, self.s_ip[idx], self.d_ip[idx], self.sport[idx], self.conn[idx])


@per_fabric
def _node_arrays(fabric: Fabric) -> tuple[np.ndarray, ...]:
    """(role per node: 0 endpoint, 1 ToR, 2 Agg, 3 core, 4 NVSwitch; pod; link src, dst,
    port as int64)."""
    kind = fabric.nodes.kind
    role = np.zeros(fabric.num_nodes, np.int64)
    for k, v in _ROLES.items():
        role[kind == k] = v
    lk = fabric.links
    return (
        role,
        fabric.nodes.pod.astype(np.int64),
        lk.src.astype(np.int64),
        lk.dst.astype(np.int64),
        lk.port.astype(np.int64),
    )


def _empty() -> np.ndarray:
    return np.zeros(1, np.int64)


def uniform_spec(seed: int, keys: np.ndarray) -> FlowSpec:
    """The ``random`` policy: a uniform draw from (seed, key, hop) at every hop.

    Parameters
    ----------
    seed
        Router seed.
    keys
        Flow keys.

    Returns
    -------
    FlowSpec
        The kernel's settings (the 5-tuple fields unused).
    """
    z, n = _empty(), len(keys)
    hs = (
        K.MODE_UNIFORM, np.uint64(seed & 0xFFFFFFFFFFFFFFFF), z, np.zeros(1, np.uint64),
        z, z, z, 0, False, K.hash_tables()[:1], False, z, z, z, 1, z,
    )  # fmt: skip
    zero = np.zeros(n, np.int64)
    return FlowSpec(hs, zero, zero, zero, np.asarray(keys, np.int64))


def hash_spec(
    fabric: Fabric,
    cfg: Any,
    seed: int,
    node_seed: np.ndarray,
    tuples: Any,
    conn: np.ndarray,
    core_ports: Any = None,
) -> FlowSpec:
    """:class:`~hpn.routing.ecmp.HashEcmpRouter`'s choice as the kernel's settings.

    Parameters
    ----------
    fabric
        The fabric.
    cfg
        The router's HashConfig.
    seed
        Router seed.
    node_seed
        Every node's switch seed.
    tuples
        The flows' TupleBytes.
    conn
        Connection key of each flow.
    core_ports
        (in-rank per link, the cores' port CSR) where cores map ports; None: they do not.

    Returns
    -------
    FlowSpec
        Hash codes, offsets and seeds per tier, and the flows' 5-tuple fields.
    """
    role, pod, *_ = _node_arrays(fabric)
    bond = {"l34": K.BOND_L34, "rr": K.BOND_RR}.get(cfg.bond_hash, K.BOND_HASH)
    codes = np.array(
        [K.HASH_CODES.get(cfg.bond_hash, 0)]
        + [K.HASH_CODES[h] for h in (cfg.tor_hash, cfg.agg_hash, cfg.core_hash)]
        + [0],
        np.int64,
    )
    offs = np.array([0, cfg.tor_offset, cfg.agg_offset, cfg.core_offset, 0], np.int64)
    lag_offs = np.array(
        [0, cfg.tor_lag_offset, cfg.agg_lag_offset, cfg.core_lag_offset, 0], np.int64
    )
    if cfg.core_port_map:
        in_rank, (c_off, c_links, pods) = core_ports
    else:
        in_rank, c_off, c_links, pods = _empty(), _empty(), _empty(), 1
    hs = (
        K.MODE_HASH, np.asarray(seed, np.uint64)[()], role,
        np.asarray(node_seed, np.uint64), codes, offs, lag_offs, bond, bool(cfg.lag),
        K.hash_tables(), bool(cfg.core_port_map), np.asarray(in_rank, np.int64),
        np.asarray(c_off, np.int64), np.asarray(c_links, np.int64), int(pods), pod,
    )  # fmt: skip
    (s_ip, _), (d_ip, _), _, (sport, _), _ = tuples.fields
    return FlowSpec(
        hs,
        s_ip.astype(np.int64),
        d_ip.astype(np.int64),
        np.asarray(sport).astype(np.int64),
        np.asarray(conn, np.int64),
    )


def class_distances(g: Any, targets: np.ndarray, valid: np.ndarray, off: np.ndarray) -> np.ndarray:
    """Hop distances from every compact switch to every destination class (int32, a last
    row of unreachable), as :func:`hpn.routing.shortest._classes` computes them.

    Parameters
    ----------
    g
        The routing graph.
    targets, valid
        (classes, width): each class's target switches (compact) and which are real.
    off
        Per class: the hops from a target to the destination (0 or 1).

    Returns
    -------
    numpy.ndarray
        (switches + 1, classes) int32.
    """
    cls, col = np.nonzero(valid & (targets < g.m))
    a = g.switch_graph
    return K.kernel("class_dist")(
        a.indptr.astype(np.int64), a.indices.astype(np.int64), int(g.m),
        targets[cls, col].astype(np.int64), cls.astype(np.int64),
        np.asarray(off, np.int64)[cls], int(targets.shape[0]),
    )  # fmt: skip


class Store:
    """The kernels' candidate lists (shared when equal) and the (switch, class) memo, for
    the destination classes of one walk; grown (and refilled) when a kernel fills it."""

    def __init__(self, fabric: Fabric, g: Any, walk: Any, size: int | None = None):
        _, _, src, dst, _ = _node_arrays(fabric)
        self.graph = (
            g.fwd, g.out_off, g.out_ids, g.comp, g.att_off, g.att_ids, src, dst,
            np.ascontiguousarray(walk.flat.reshape(-1, walk.nsig).T).ravel(), g.m + 1,
            np.asarray(walk.out_comp // walk.nsig, np.int64),
        )  # fmt: skip  # the distances class by class (a class's row stays in cache)
        deg = np.diff(g.out_off)
        self.scratch = np.zeros(3 * int(deg.max(initial=1)) + 16, np.int64)
        cells = (g.m + 1) * walk.nsig
        self.memo_size = cells if cells <= _MEMO_MAX else 0
        self.nsig, self.rows = walk.nsig, g.m + 1
        # switches with an out-link into each switch (compact ids; for the memo's row copy)
        at = np.flatnonzero(g.fwd[src[g.out_ids]])
        into, frm = g.comp[dst[g.out_ids[at]]], g.comp[src[g.out_ids[at]]]
        off = np.zeros(self.rows + 1, np.int64)
        np.cumsum(np.bincount(into, minlength=self.rows), out=off[1:])
        self.rev = (off, frm[np.argsort(into, kind="stable")].astype(np.int64))
        self._alloc(size or max(1 << 12, len(g.out_ids) // 2))

    def _alloc(self, s: int) -> None:
        self.size = s
        h = 1 << int(np.ceil(np.log2(2 * s + 2)))
        self.lists = (
            np.zeros(K._ENT * s, np.int32),  # entries
            np.zeros(s, np.int64),  # entry positions by neighbour group
            np.zeros(K._REC * s, np.int64),  # list records
            np.zeros(s, np.int64),  # group starts
            np.zeros(s, np.int64),  # group sizes
            np.full(h, -1, np.int64),  # hash table of the lists
        )
        # (entries, lists, groups, last row, a sink for cache warm-up loads)
        self.state = np.array([0, 0, 0, -1, 0], np.int64)
        self.memo = (
            np.full(self.memo_size, -1, np.int32),
            np.zeros(self.nsig if self.memo_size else 0, np.bool_),  # rows prepared
            *self.rev,
            np.zeros(self.rows, np.int64),  # marks of the row copy
        )

    def fork(self) -> Store:
        """A store of the same size for another thread (the graph tables shared, read only)."""
        twin = copy.copy(self)
        twin.scratch = np.zeros_like(self.scratch)
        twin._alloc(self.size)
        return twin

    def grow(self) -> None:
        """Double the candidate-list space (emptied: the kernel refills it)."""
        self._alloc(2 * self.size)

    def args(self) -> tuple:
        """(graph, lists, state, memo, scratch): the arrays a kernel takes."""
        return self.graph, self.lists, self.state, self.memo, self.scratch


def _store(fabric: Fabric, g: Any, walk: Any) -> Store:
    store = getattr(walk, "store", None)
    if store is None:
        store = walk.store = Store(fabric, g, walk)  # type: ignore[attr-defined]
    return store


def _stores(fabric: Fabric, g: Any, walk: Any, k: int) -> list[Store]:
    """``k`` stores for ``walk``'s classes, one per thread (the first is ``walk.store``)."""
    stores = getattr(walk, "stores", None) or [_store(fabric, g, walk)]
    while len(stores) < k:
        stores.append(stores[0].fork())
    walk.stores = stores  # type: ignore[attr-defined]
    return stores[:k]


def _split(n: int, threads: int | None, key: np.ndarray | None = None) -> list | None:
    """The ranges of ``n`` flows (pairs) to walk in threads (cut where ``key`` changes);
    None: one thread."""
    k = P.threads() if threads is None else threads
    if k < 2 or n < P.SPLIT_MIN:
        return None
    got = [r for r in P.ranges(n, k, key) if r[1] > r[0]]
    return got if len(got) > 1 else None


class NoPath(Exception):
    """The search found a pair without a path (``pair``: its index)."""

    def __init__(self, pair: int):
        super().__init__(pair)
        self.pair = pair


def _raise(status: int, i: int, src: np.ndarray) -> None:
    if status == K.NO_PATH:
        raise InputError(
            "routing", f"no path from node {int(src[i])} (flow {i}) to its destination"
        )
    raise InputError("routing", "inconsistent distances (no next hop)")


def route_compiled(
    fabric: Fabric,
    g: Any,
    walk: Any,
    uinv: np.ndarray,
    src: np.ndarray,
    dst: np.ndarray,
    spec: FlowSpec,
    threads: int | None = None,
) -> Paths:
    """The paths of flows ``src -> dst`` (destination classes ``uinv`` of ``walk``).

    Parameters
    ----------
    fabric
        The fabric.
    g, walk
        The routing graph and the distances of the destination classes
        (:mod:`hpn.routing.shortest`).
    uinv
        Destination class of each flow.
    src, dst
        Endpoints of each flow.
    spec
        How the router chooses (:func:`uniform_spec`, :func:`hash_spec`).
    threads
        Threads to walk in (:mod:`hpn.routing.parallel`; None: its default).

    Returns
    -------
    Paths
        One path per flow, as the numpy walk gives them.

    Raises
    ------
    InputError
        When a flow has no path.
    """
    uinv = np.asarray(uinv, np.int64)
    split = _split(len(uinv), threads)
    if split is not None:
        got = _route_parts(fabric, g, walk, split, uinv, src, dst, spec)
        if got is not None:
            return Paths(*P.join_paths(got))
    src64, dst64 = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    walk_args = (K.kernel("route"), _store(fabric, g, walk), src64, dst64, uinv, spec)
    status, i, offsets, links = _walk(*walk_args)
    if status != K.OK:  # again in flow order: the numpy code's error
        status, i, offsets, links = _walk(*walk_args, in_order=True)
    if status != K.OK:
        _raise(status, i, src)
    return Paths(offsets, links)


def _walk(run, store: Store, src, dst, u, spec: FlowSpec, in_order: bool = False) -> tuple:
    """The route kernel ``run``'s (status, flow, offsets, links) for flows ``src -> dst`` of
    classes ``u``, walked class by class (``in_order``: in flow order), the store grown as
    needed (``run`` fetched in the caller's thread: kernels compile on first fetch)."""
    order = np.arange(len(u), dtype=np.int64)
    if not in_order:
        order = np.argsort(u, kind="stable").astype(np.int64)  # flows of one class together
    while True:
        graph, lists, state, memo, scr = store.args()
        out = run(
            src, dst, u, spec.s_ip, spec.d_ip, spec.sport, spec.conn, order, graph, spec.hs,
            lists, state, memo, scr,
        )  # fmt: skip
        if out[0] != K.FULL:
            return out
        store.grow()


def _route_parts(fabric, g, walk, split, uinv, src, dst, spec) -> list[tuple] | None:
    """The ranges' (offsets, links), walked in threads; None when a range fails (the caller
    walks all flows in one thread: the error it reports is the numpy code's)."""
    stores = _stores(fabric, g, walk, len(split))
    run = K.kernel("route")
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)

    def part(store: Store, lo: int, hi: int) -> tuple:
        return _walk(run, store, src[lo:hi], dst[lo:hi], uinv[lo:hi], spec.take(np.arange(lo, hi)))

    got = P.run_parts(part, [(st, lo, hi) for st, (lo, hi) in zip(stores, split, strict=True)])
    if any(out[0] != K.OK for out in got):
        return None
    return [(offsets, links) for _, _, offsets, links in got]


def search_compiled(
    fabric: Fabric,
    g: Any,
    walk: Any,
    p_u: np.ndarray,
    pairs: dict[str, np.ndarray],
    spec: FlowSpec,
    threads: int | None = None,
    **kw: Any,
) -> tuple:
    """HPN's candidate rounds for ``pairs`` (dict of per-pair arrays); (items, count,
    found per plane, (source NIC, uplink) classes) as :class:`hpn.routing.hpn_select._Found`
    records them (the items by pair, plane, then found order: the order ``_Found.place``
    sorts them into).

    Parameters
    ----------
    fabric
        The fabric.
    g, walk
        The routing graph and the distances of the destination classes.
    p_u
        Destination class of each pair.
    pairs
        Per-pair arrays: ``src``, ``dst``, ``start``, ``per_plane``, ``ports``, ``nv0``,
        ``nv1``.
    spec
        The hash settings (:func:`hash_spec`).
    threads
        Threads to search in (:mod:`hpn.routing.parallel`; None: its default).
    **kw
        ``first_round`` and ``max_candidates`` of the selection.

    Returns
    -------
    tuple
        ``((pair, sport, plane, uplink), count, per_plane, (class of each item's (source
        NIC, uplink), number of classes), kept)``; ``kept`` holds the items' links: (first
        pair of each range, each range's links, where each item's links start in its
        range's, each pair's path length), as :class:`hpn.routing.hpn_select.Kept` reads
        them.

    Raises
    ------
    NoPath
        When a pair has no path.
    """
    run = K.kernel("search")
    port = _node_arrays(fabric)[4]
    per_pair = {
        **{k: pairs[k] for k in ("src", "dst", "start", "per_plane", "ports", "nv0", "nv1")},
        "u": np.asarray(p_u, np.int64), "s_ip": spec.s_ip, "d_ip": spec.d_ip,
    }  # fmt: skip
    # threads only where a range's result stands alone: the round-robin bond numbers a
    # candidate by its pair's position among all of a round's pairs, and a range's items are
    # numbered by source (so ranges are cut between sources, of pairs sorted by source)
    p_src = per_pair["src"]
    by_src = bool(np.all(p_src[1:] >= p_src[:-1]))
    split = None
    if spec.hs[7] != K.BOND_RR and by_src:
        split = _split(len(p_src), threads, p_src)
    if split is not None:
        got = _search_parts(fabric, g, walk, split, per_pair, port, spec, kw)
        if got is not None:
            count, per_plane, (pair, sport, plane, uplink), up_ids, kept = P.join_items(got)
            items = (pair, sport.view(np.uint32), plane, uplink)  # (ports: 49152-65535)
            return items, count, per_plane, up_ids, kept
    store = _store(fabric, g, walk)
    search_args = (run, store, per_pair, 0, len(p_src), port, spec, kw)
    out = _search(*search_args)
    if out[0] != K.OK:  # again in pair order: the numpy code's error
        out = _search(*search_args, in_order=True)
    status, i, pair, sport, plane, uplink, count, per_plane, up_ids, n_up = out[:10]
    if status == K.NO_PATH:
        raise NoPath(int(i))
    if status != K.OK:
        _raise(status, i, pairs["src"])
    l_off, links, length = out[10:]
    kept = (np.zeros(1, np.int64), [links], l_off, length)
    items = (pair, sport.view(np.uint32), plane, uplink)  # (ports: 49152-65535)
    return items, count, per_plane, (up_ids, int(n_up)), kept


def _search(run, store: Store, per_pair, lo, hi, port, spec, kw, in_order=False) -> tuple:
    """The search kernel ``run``'s output for pairs ``lo .. hi`` of ``per_pair``, walked
    class by class (``in_order``: in pair order), the store grown as needed."""
    order = np.arange(hi - lo, dtype=np.int64)
    if not in_order:  # pairs of one class together
        order = np.argsort(per_pair["u"][lo:hi], kind="stable").astype(np.int64)
    w = {k: v[lo + order] for k, v in per_pair.items()}  # in walk order
    inv = np.empty(len(order), np.int64)
    inv[order] = np.arange(len(order))
    while True:
        graph, lists, state, memo, scr = store.args()
        out = run(
            w["src"], w["dst"], w["u"], w["s_ip"], w["d_ip"], w["start"], w["per_plane"],
            w["ports"], w["nv0"], w["nv1"], int(kw["first_round"]), int(kw["max_candidates"]),
            port, inv, graph, spec.hs, lists, state, memo, scr,
        )  # fmt: skip
        if out[0] != K.FULL:
            return out
        store.grow()


def _search_parts(fabric, g, walk, split, per_pair, port, spec, kw) -> list[list] | None:
    """The ranges' (count, found per plane, (pair, sport, plane, uplink), class ids),
    searched in threads (pairs and classes numbered within a range); None when a range fails
    (the caller searches all pairs in one thread: the error it reports is the numpy code's)."""
    stores = _stores(fabric, g, walk, len(split))
    run = K.kernel("search")
    jobs = [(run, st, per_pair, *r, port, spec, kw) for st, r in zip(stores, split, strict=True)]
    got = P.run_parts(_search, jobs)
    if any(out[0] != K.OK for out in got):
        return None
    # (count, found per plane, items, (class ids, classes), kept: (link starts, links, length))
    return [[x[6], x[7], [*x[2:6]], [x[8], int(x[9])], [x[10], x[11], x[12]]] for x in got]
