"""HPN's host-side precise path selection (P §6.1, App B Alg 1-2).

For every pair of NICs the host predicts the switches' hashes (as RePaC does: the functions
are linear and known), enumerating candidate UDP source ports and the path each one takes;
it keeps one source port per *distinct* path. Connections are then placed per NIC, as the
NIC's host does it for all its connections (not pair by pair):

- a NIC's connections, ordered by (peer, connection), alternate planes (NIC ports), starting
  at a plane drawn per NIC, so a NIC with one connection per peer still uses both ports and a
  pair with an even number of connections has exactly half on each plane;
- within the plane, a connection takes a path its pair does not use yet, and among those the
  one whose first uplink (the ToR -> Agg link) the NIC's other connections use least, so a
  NIC's connections spread over the ToR's uplinks across all its peers.

The network then routes the chosen ports by ordinary hashing (:class:`HashEcmpRouter`), so
prediction and forwarding are the same code and cannot disagree.

Candidates are searched in rounds of growing size per pair; a pair stops when each of its
NIC's planes has enough distinct paths for its connections, or when a round finds no new path
(its equal-cost paths are exhausted, e.g. two NICs under the same ToR pair have exactly one
path per plane). Messages are spread over a pair's connections by least outstanding bytes on
real hosts (the paper's PathSelection); in a fluid model where the workload gives every
connection an equal share and the connections of a pair have equal rates, that is the same
split (see ``docs/guide/routing.md`` for where it differs).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hpn.errors import InputError
from hpn.routing.addressing import SPORT_MAX, SPORT_MIN, address_plan, roce_tuples
from hpn.routing.base import Paths, register_router, validate_endpoints
from hpn.routing.ecmp import HashEcmpRouter
from hpn.routing.shortest import splitmix64
from hpn.topology.fabric import Fabric, LinkTier, NodeKind

_SPAN = SPORT_MAX - SPORT_MIN + 1


@dataclass(frozen=True, eq=False)
class Selection:
    """Chosen source port per flow, with the path and plane (NIC port) it lands on."""

    sport: np.ndarray
    paths: Paths
    plane: np.ndarray
    distinct_paths_found: np.ndarray  # per flow: distinct paths known for its pair


def _path_ids(p: Paths) -> np.ndarray:
    """A 64-bit identity per path (XOR of hashed (hop, link))."""
    hop = np.arange(len(p.links)) - np.repeat(p.offsets[:-1], p.lengths)
    v = splitmix64((p.links.astype(np.uint64) << np.uint64(8)) ^ hop.astype(np.uint64))
    return np.bitwise_xor.reduceat(v, p.offsets[:-1]) if len(v) else np.zeros(0, np.uint64)


class HpnRouter(HashEcmpRouter):
    """Precise path selection: distinct paths per pair, planes and uplinks balanced per NIC."""

    name = "hpn"

    def __init__(
        self, seed: int = 0, hashing=None, first_round: int = 16, max_candidates: int = 256
    ):
        super().__init__(seed, hashing)
        self.first_round = int(first_round)
        self.max_candidates = int(max_candidates)

    def route(
        self,
        fabric: Fabric,
        src: np.ndarray,
        dst: np.ndarray,
        keys: np.ndarray | None = None,
        down: np.ndarray | None = None,
    ) -> Paths:
        """The paths of :meth:`select` (see :meth:`hpn.routing.base.Router.route`)."""
        return self.select(fabric, src, dst, keys, down).paths

    def select(
        self,
        fabric: Fabric,
        src: np.ndarray,
        dst: np.ndarray,
        keys: np.ndarray | None = None,
        down: np.ndarray | None = None,
    ) -> Selection:
        """Each flow's source port, chosen as HPN's hosts do, and the path and plane it gets.

        Takes the arguments of :meth:`hpn.routing.base.Router.route`.
        """
        src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
        validate_endpoints(fabric, src, dst)
        n = len(src)
        keys = np.arange(n, dtype=np.int64) if keys is None else np.asarray(keys, np.int64)
        pair_key = src * fabric.num_nodes + dst
        pairs, pair_of = np.unique(pair_key, return_inverse=True)
        # connection j of a pair = rank of the flow's key among the pair's distinct keys (a
        # connection carries many flows: buckets, micro-batches reuse it)
        conns, conn_of = _pair_keys(pair_of, keys)
        first = np.searchsorted(conns[0], np.arange(len(pairs)))
        conn_rank = np.arange(conns.shape[1]) - first[conns[0]]
        need = np.bincount(conns[0], minlength=len(pairs))
        p_src, p_dst = pairs // fabric.num_nodes, pairs % fabric.num_nodes
        ports = _ports(fabric, down)[p_src]
        per_plane = -(-need // ports)
        found = self._search(fabric, pairs, p_src, p_dst, ports, per_plane, down)
        if found is None:
            found = _Found(len(pairs))
            active = np.arange(len(pairs))
            tried, size = 0, self.first_round
            while len(active) and tried < self.max_candidates:
                size = min(size, self.max_candidates - tried)
                cand_pair = np.repeat(active, size)
                offs = np.tile(np.arange(tried, tried + size), len(active))
                sp = self._candidate_sports(pairs[cand_pair], offs)
                paths = self.route_sports(fabric, p_src[cand_pair], p_dst[cand_pair], sp, down)
                new = found.add(cand_pair, sp, _path_ids(paths), *_plane_and_uplink(fabric, paths))
                tried += size
                a = active
                enough = (found.per_plane[a, 0] >= per_plane[a]) & (
                    (ports[a] < 2) | (found.per_plane[a, 1] >= per_plane[a])
                )
                saturated = np.bincount(cand_pair, weights=new, minlength=len(pairs))[a] == 0
                active = a[~(enough | saturated)]
                size *= 2
        salt = splitmix64(p_src.astype(np.uint64) ^ np.uint64(self.seed & 0xFFFFFFFF))
        flip = (salt & np.uint64(1)) > 0
        chosen, item, c_plane = found.place(conns[0], conn_rank, p_src, ports, flip)
        sport = chosen[conn_of]
        if isinstance(found, _Compiled):  # the search walked these ports already
            paths = found.kept.paths(item[conn_of], pair_of)
            self.kernel = "numba"
        else:  # (the rr bond: on the port the selection pinned the connection to)
            paths = self.route_sports(fabric, src, dst, sport, down, rr=c_plane[conn_of])
            self.kernel = "numpy"
        plane = fabric.links.port[paths.links[paths.offsets[:-1]]].astype(np.int64)
        return Selection(sport, paths, plane, found.count[pair_of])

    def _search(self, fabric, pairs, p_src, p_dst, ports, per_plane, down) -> _Found | None:
        """The candidate rounds in the compiled kernel (None where it does not run)."""
        if not self.use_kernels() or type(self).chooser is not HashEcmpRouter.chooser:
            return None
        from hpn.routing.fast import NoPath, hash_spec, search_compiled
        from hpn.routing.shortest import _classes, _Graph, _graph, _nvlink_pairs, _nvlink_up

        # the checks route_sports makes in its first round, in its order
        tuples = roce_tuples(address_plan(fabric), p_src, p_dst, np.zeros(len(pairs), np.uint32))
        g = _Graph(fabric, down) if down is not None else _graph(fabric)
        nv = _nvlink_pairs(fabric, p_src, p_dst)
        net = np.flatnonzero(~nv)
        p_u = np.zeros(len(pairs), np.int64)
        if len(net):
            walk, p_u[net] = _classes(g, fabric, p_dst[net], None)
        else:
            return None
        up = _nvlink_up(fabric)
        nv0 = np.where(nv, up[p_src], -1)
        nv1 = np.where(nv, up[p_dst] ^ 1, -1)
        seeds = self.switch_seeds(fabric, np.arange(fabric.num_nodes))
        spec = hash_spec(
            fabric, self.hashing, self.seed, seeds, tuples, np.zeros(len(pairs)),
            self.core_ports(fabric),
        )  # fmt: skip
        start = splitmix64(pairs.astype(np.uint64) ^ np.uint64(self.seed & 0xFFFFFFFF))
        arrays = {
            "src": p_src, "dst": p_dst, "start": start, "per_plane": per_plane.astype(np.int64),
            "ports": ports.astype(np.int64), "nv0": nv0.astype(np.int64),
            "nv1": nv1.astype(np.int64),
        }  # fmt: skip
        try:
            items, count, plane_count, up_ids, kept = search_compiled(
                fabric, g, walk, p_u, arrays, spec,
                first_round=self.first_round, max_candidates=self.max_candidates,
            )  # fmt: skip
        except NoPath as e:  # the message route_sports gives in the first round
            size = min(self.first_round, self.max_candidates)
            i = int(np.count_nonzero(~nv[: e.pair])) * size
            raise InputError(
                "routing", f"no path from node {int(p_src[e.pair])} (flow {i}) to its destination"
            ) from None
        return _Compiled(count, plane_count, items, up_ids, Kept(*kept))

    def _candidate_sports(self, pair_key: np.ndarray, index: np.ndarray) -> np.ndarray:
        """Candidate ``index`` of a pair: a pair-specific walk through the port range."""
        start = splitmix64(pair_key.astype(np.uint64) ^ np.uint64(self.seed & 0xFFFFFFFF))
        return (SPORT_MIN + (start + index.astype(np.uint64)) % np.uint64(_SPAN)).astype(np.uint32)


def _pair_keys(pair_of: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (pair, key) columns in lexicographic order (as ``np.unique(...,
    axis=1)`` gives them, by one lexsort) and the column of every flow."""
    order = np.lexsort((keys, pair_of))
    p, k = pair_of[order], keys[order]
    new = np.ones(len(order), bool)
    new[1:] = (p[1:] != p[:-1]) | (k[1:] != k[:-1])
    inv = np.empty(len(order), np.int64)
    inv[order] = np.cumsum(new) - 1
    return np.stack([p[new], k[new]]), inv


def _first_min(score: np.ndarray, cnt: np.ndarray) -> np.ndarray:
    """Per group (``score`` holds groups of ``cnt`` consecutive entries): the position of
    its first entry with the group's least score (none for an empty group)."""
    if (cnt == 0).any():  # (reduceat needs non-empty groups)
        rep = np.repeat(np.arange(len(cnt)), cnt)
        best = np.full(len(cnt), np.iinfo(np.int64).max)
        np.minimum.at(best, rep, score)
        at = np.flatnonzero(score == best[rep])
        return at[np.unique(rep[at], return_index=True)[1]]
    start = np.cumsum(cnt) - cnt
    best = np.minimum.reduceat(score, start)
    hit = np.flatnonzero(score == np.repeat(best, cnt))
    grp = np.repeat(np.arange(len(cnt)), cnt)[hit]
    first = np.ones(len(hit), bool)
    first[1:] = grp[1:] != grp[:-1]
    return hit[first]


def _ports(fabric, down) -> np.ndarray:
    """Usable NIC ports (1 or 2) of every node: its live links into ToRs."""
    lk = fabric.links
    up = lk.tier == LinkTier.NIC_TOR
    up &= np.isin(fabric.nodes.kind[lk.src], (NodeKind.GPU, NodeKind.HOST))
    if down is not None:
        up &= ~np.asarray(down, bool)
    n = np.bincount(lk.src[up], minlength=fabric.num_nodes)
    return np.clip(n, 1, 2)


def _plane_and_uplink(fabric, paths: Paths) -> tuple[np.ndarray, np.ndarray]:
    """Per path: its plane (the NIC port it leaves on, 0/1) and its first link above the NIC
    (the ToR's uplink; for a one-hop path, the first link)."""
    first = paths.links[paths.offsets[:-1]]
    second = np.where(paths.lengths > 1, paths.offsets[:-1] + 1, paths.offsets[:-1])
    plane = np.clip(fabric.links.port[first].astype(np.int64), 0, 1)
    return plane, paths.links[second]


_KEY = np.dtype([("pair", "<u8"), ("pid", "<u8")])


def _keys(pair: np.ndarray, pid: np.ndarray) -> np.ndarray:
    """(pair, path id) as one comparable 16-byte key per candidate."""
    rec = np.empty(len(pair), _KEY)
    rec["pair"], rec["pid"] = pair, pid
    return rec.view("V16")


class _Found:
    """Distinct paths found per pair: their source ports, planes and first uplinks."""

    def __init__(self, n_pairs: int):
        self.count = np.zeros(n_pairs, np.int64)
        self.per_plane = np.zeros((n_pairs, 2), np.int64)
        self.items: list[tuple[np.ndarray, ...]] = []
        self.seen = np.zeros(0, "V16")

    def add(self, pair, sport, pid, plane, uplink) -> np.ndarray:
        """Record candidates; returns 1 for each candidate that is a new distinct path."""
        key = _keys(pair, pid)
        first = np.sort(np.unique(key, return_index=True)[1])
        fresh = first[~np.isin(key[first], self.seen)]
        self.seen = np.concatenate([self.seen, key[fresh]])
        new = np.zeros(len(pair), np.int64)
        new[fresh] = 1
        self.items.append((pair[fresh], sport[fresh], plane[fresh], uplink[fresh]))
        self.count += np.bincount(pair[fresh], minlength=len(self.count))
        np.add.at(self.per_plane, (pair[fresh], plane[fresh]), 1)
        return new

    def place(self, c_pair, c_rank, p_src, ports, flip) -> tuple[np.ndarray, ...]:
        """The source port of every connection (``c_pair``, ``c_rank``), placed NIC by NIC,
        the item (distinct path, in the order of ``_by_pair_and_plane``) it takes and the
        item's plane.

        Round ``r`` places the ``r``-th connection of every NIC (its connections ordered by
        pair, then rank); in a round no two connections share a NIC or a pair, so each round
        is one vectorized step over the NICs."""
        pair, sport, plane, uplink = self._by_pair_and_plane()
        # the items of (pair, plane) group pair * 2 + plane start at g_off[group]
        g_off = np.zeros(2 * len(self.count) + 1, np.int64)
        np.cumsum(self.per_plane.ravel(), out=g_off[1:])
        # position of each connection among its NIC's connections
        c_nic = p_src[c_pair]
        o = np.lexsort((c_rank, c_pair, c_nic))
        pos = np.empty(len(o), np.int64)
        start = np.searchsorted(c_nic[o], c_nic[o])
        pos[o] = np.arange(len(o)) - start
        want = (pos + flip[c_pair]) % ports[c_pair]
        has = self.per_plane[c_pair] > 0
        want = np.where(has[np.arange(len(want)), want], want, 1 - want)
        chosen = np.zeros(len(c_pair), np.uint32)
        item = np.zeros(len(c_pair), np.int64)
        by_round = np.argsort(pos, kind="stable")
        bounds = np.searchsorted(pos[by_round], np.arange(pos.max() + 2))
        rounds = len(bounds) - 1
        loads = None  # (connections on each path, on each (NIC, uplink); item classes)
        for r in range(rounds):
            conn = by_round[bounds[r] : bounds[r + 1]]
            g = c_pair[conn] * 2 + want[conn]
            first, cnt = g_off[g], g_off[g + 1] - g_off[g]
            if r == 0 and cnt.all():  # nothing placed yet: each score is the item's rank
                pick = first
            else:
                if loads is None:
                    loads = self._loads(pair, uplink, p_src)
                used, load, nic_up_of = loads
                cand = np.repeat(first - np.cumsum(cnt) + cnt, cnt) + np.arange(cnt.sum())
                rank = cand - np.repeat(first, cnt)  # the item's place in its group
                score = (used[cand] << 40) + (load[nic_up_of[cand]] << 16) + rank
                pick = cand[_first_min(score, cnt)]
            if r + 1 < rounds:
                if loads is None:
                    loads = self._loads(pair, uplink, p_src)
                used, load, nic_up_of = loads
                used[pick] += 1
                load[nic_up_of[pick]] += 1
            chosen[conn], item[conn] = sport[pick], pick
        return chosen, item, plane[item]

    def _loads(self, pair, uplink, p_src) -> tuple[np.ndarray, ...]:
        """(connections of its pair on each item's path, connections of a NIC on each (NIC,
        uplink) class: zeros; the class of each item)."""
        # (NIC, uplink) classes, numbered in (NIC, uplink) order (one int64 key: fast unique)
        span = int(uplink.max()) + 1 if len(uplink) else 1
        nic_up_of, n_classes = self._class_ids(p_src[pair] * span + uplink)
        return np.zeros(len(pair), np.int64), np.zeros(n_classes, np.int64), nic_up_of

    def _by_pair_and_plane(self) -> tuple[np.ndarray, ...]:
        """(pair, sport, plane, uplink) of the items by pair, plane, then found order."""
        pair, sport, plane, uplink = (np.concatenate(x) for x in zip(*self.items, strict=True))
        self.items = []  # placed once; the sorted copies below replace them (memory)
        order = np.lexsort((np.arange(len(pair)), plane, pair))
        return pair[order], sport[order], plane[order], uplink[order]

    def _class_ids(self, keys: np.ndarray) -> tuple[np.ndarray, int]:
        """An id per key (equal keys, equal ids) and the number of ids."""
        u, inv = np.unique(keys, return_inverse=True)
        return inv, len(u)


register_router(
    "hpn", HpnRouter, "host-side precise path selection (source-port search, per-NIC balance)"
)


@dataclass(frozen=True, eq=False)
class Kept:
    """The links of the compiled search's distinct paths: item ``i`` of pair ``p`` in range
    ``t`` (pairs from ``starts[t]`` on) has ``links[t][off[i] : off[i] + length[p]]``."""

    starts: np.ndarray
    links: list[np.ndarray]
    off: np.ndarray
    length: np.ndarray

    def paths(self, item: np.ndarray, pair: np.ndarray) -> Paths:
        """The paths of items ``item`` (of pairs ``pair``), one after the other."""
        length = self.length[pair]
        offsets = np.zeros(len(item) + 1, np.int64)
        np.cumsum(length, out=offsets[1:])
        links = np.empty(int(offsets[-1]), np.int64)
        part = np.searchsorted(self.starts, pair, side="right") - 1
        for t, lk in enumerate(self.links):
            f = np.flatnonzero(part == t) if len(self.links) > 1 else np.arange(len(item))
            n = length[f]
            step = np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n)  # hop of each link
            links[np.repeat(offsets[f], n) + step] = lk[np.repeat(self.off[item[f]], n) + step]
        return Paths(offsets, links)


class _Compiled(_Found):
    """What the compiled candidate rounds found (items in the numpy code's order)."""

    def __init__(self, count, per_plane, items, up_ids, kept: Kept):
        self.count, self.per_plane, self.items = count, per_plane, [items]
        self.up_ids = up_ids  # the (source NIC, uplink) class of each item, and their number
        self.kept = kept

    def _by_pair_and_plane(self) -> tuple[np.ndarray, ...]:
        items = self.items[0]  # the kernel gives them in this order
        self.items = []
        return items

    def _class_ids(self, keys: np.ndarray) -> tuple[np.ndarray, int]:
        return self.up_ids  # the kernel numbered them (by first appearance)
