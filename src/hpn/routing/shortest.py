"""Shortest-path ECMP with a seeded per-flow choice among equal-cost next hops.

Only switches (NVSwitch, ToR, Agg, Core) forward: a path never transits a GPU, host or NIC.
Network flows do not use NVLink; flows between two GPUs of one host go GPU -> NVSwitch -> GPU.

Vectorized: hop distances to every destination's attachment switches come from one BFS per
attachment switch on the switch graph (bitsets OR-ed level by level); then all flows walk hop by hop
in numpy. At each hop a flow's candidates are the out-links to a neighbour one hop closer to
its destination (the first hop included, so a dual-ToR NIC's port is an equal-cost choice),
and it takes candidate ``floor(u * count)`` where ``u`` is a hash of (seed, key, hop).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import numpy.typing as npt

from hpn.errors import InputError
from hpn.routing.base import Paths, register_router, validate_endpoints
from hpn.routing.cache import per_fabric
from hpn.topology.fabric import LinkTier, NodeKind

if TYPE_CHECKING:
    from hpn.routing.fast import FlowSpec
    from hpn.topology import Fabric

FORWARDING = np.array([NodeKind.NVSWITCH, NodeKind.TOR, NodeKind.AGG, NodeKind.CORE])
_FAR = np.int32(1 << 20)  # "unreachable" hop distance
_CHUNK = 1 << 15  # flows walked at once (bounds the candidate expansion)
CLASS_KERNEL_MIN = 1 << 20  # (switch, class) cells from which the compiled distances run


def splitmix64(x: npt.ArrayLike) -> np.ndarray:
    """The splitmix64 finalizer, vectorized over uint64 (wrapping arithmetic).

    Parameters
    ----------
    x
        Values (cast to uint64).

    Returns
    -------
    numpy.ndarray
        uint64 hashes.
    """
    v: np.ndarray = np.asarray(x, dtype=np.uint64)
    with np.errstate(over="ignore"):
        v = v + np.uint64(0x9E3779B97F4A7C15)
        v = (v ^ (v >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        v = (v ^ (v >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return v ^ (v >> np.uint64(31))


def uniform(seed: int, keys: np.ndarray, hop: int) -> np.ndarray:
    """A deterministic uniform [0, 1) per key, independent of the keys' order.

    Parameters
    ----------
    seed
        Router seed.
    keys
        Flow keys.
    hop
        The hop being chosen (each hop draws independently).

    Returns
    -------
    numpy.ndarray
        One float per key.
    """
    with np.errstate(over="ignore"):
        base = splitmix64(np.uint64(seed & 0xFFFFFFFFFFFFFFFF) + np.uint64(hop) * np.uint64(7919))
        h = splitmix64(keys.astype(np.uint64) ^ base)
    return (h >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))


def _csr(rows: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, order) grouping indices 0..len(rows)-1 by ``rows``, stable."""
    order = np.argsort(rows, kind="stable")
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=offsets[1:])
    return offsets, order.astype(np.int64)


class SwitchGraph(NamedTuple):
    """Compact switch -> switch adjacency in compressed rows (numpy only, as
    ``scipy.sparse.csr_matrix`` holds it: each row's columns distinct and ascending)."""

    indptr: np.ndarray
    indices: np.ndarray

    @classmethod
    def of(cls, src: np.ndarray, dst: np.ndarray, m: int) -> SwitchGraph:
        """The graph of the edges ``src[i] -> dst[i]`` among ``m`` switches."""
        width = max(m, 1)
        key = np.sort(np.asarray(src, np.int64) * width + np.asarray(dst, np.int64))
        key = key[np.diff(key, prepend=-1) != 0]  # (np.unique would import numpy.ma)
        row = key // width
        indptr = np.zeros(m + 1, np.int64)
        np.cumsum(np.bincount(row, minlength=m), out=indptr[1:])
        return cls(indptr, key - row * width)


class _Graph:
    """The network as forwarding sees it: switch graph, out-links to switches, attachments."""

    def __init__(self, fabric: Fabric, down: np.ndarray | None):
        lk, kind = fabric.links, fabric.nodes.kind
        self.n = fabric.num_nodes
        self.fwd = np.isin(kind, FORWARDING)
        up = lk.tier != LinkTier.NVLINK
        if down is not None:
            up &= ~np.asarray(down, bool)
        self.up = up
        to_fwd = up & self.fwd[lk.dst]
        ids = np.flatnonzero(to_fwd)
        off, order = _csr(lk.src[ids], self.n)
        self.out_off, self.out_ids = off, ids[order]  # out-links into forwarding nodes
        sw = ids[self.fwd[lk.src[ids]]]
        # compact index of the switches with a usable link; the others (NVSwitches, whose
        # links are NVLink) share index m: a row of no-path distances
        net = np.zeros(self.n, bool)
        net[lk.src[up]] = net[lk.dst[up]] = True
        net &= self.fwd
        m = self.m = int(net.sum())
        self.comp = np.where(net, np.cumsum(net) - 1, m)
        self.switch_graph = SwitchGraph.of(self.comp[lk.src[sw]], self.comp[lk.dst[sw]], m)
        # attachments: links from a switch into an endpoint (the endpoint's last hop)
        into = np.flatnonzero(up & self.fwd[lk.src] & ~self.fwd[lk.dst])
        self.att_off, order = _csr(lk.dst[into], self.n)
        self.att_ids = into[order]


@per_fabric
def _graph(fabric: Fabric) -> _Graph:
    """The fabric's forwarding graph with every link up (built once per fabric)."""
    return _Graph(fabric, None)


def _targets(g: _Graph, fabric: Fabric, dst: np.ndarray):
    """Per flow: its target switches (compact, padded -1) and the hops from a target to dst."""
    ud, inv = np.unique(dst, return_inverse=True)
    is_sw = g.fwd[ud]
    cnt = np.where(is_sw, 1, g.att_off[ud + 1] - g.att_off[ud])
    width = max(int(cnt.max()), 1) if len(cnt) else 1
    tgt = np.full((len(ud), width), -1, np.int64)
    tgt[is_sw, 0] = ud[is_sw]
    ep = np.flatnonzero(~is_sw)
    for j in range(width):
        has = ep[cnt[ep] > j]
        tgt[has, j] = fabric.links.src[g.att_ids[g.att_off[ud[has]] + j]]
    none = np.flatnonzero(cnt == 0)
    if len(none):
        raise InputError("routing", f"node {int(ud[none[0]])} has no usable link into it")
    offset = np.where(is_sw, 0, 1).astype(np.int32)
    return ud, inv, tgt, offset


@dataclass(frozen=True, eq=False)
class Choice:
    """The flows that have a choice at one hop of the walk (one entry per flow)."""

    nodes: np.ndarray  # the node each flow is at
    keys: np.ndarray  # the flow's key (as passed to the walk)
    hop: int
    count: np.ndarray  # equal-cost next hops of each flow
    first: np.ndarray  # offset of each flow's candidates in ``cand`` (flows at one node
    # for one destination class share them)
    cand: np.ndarray  # candidate link ids, per (node, class) in port (link id) order
    prev: np.ndarray  # the link each flow arrived on (-1 at the first hop)


Chooser = Callable[[Choice], np.ndarray]
"""``chooser(choice) -> pick``: which candidate (0 .. count-1) each flow takes; subclasses
supply hash models this way."""


class EcmpRouter:
    """Shortest-path ECMP; the choice among equal-cost next hops is seeded per flow key."""

    name = "random"
    per_connection = True  # a flow's path depends only on its (src, dst, key) among the
    # distinct connections of a call: flows of one connection may be routed once

    def __init__(self, seed: int = 0):
        self.seed = int(seed)

    def chooser(
        self, fabric: Fabric, src: np.ndarray, dst: np.ndarray, keys: np.ndarray
    ) -> tuple[np.ndarray, Chooser]:
        """(keys the walk passes back, the choice function) for one ``route`` call."""
        seed = self.seed

        def pick(c: Choice) -> np.ndarray:
            return (uniform(seed, c.keys, c.hop) * c.count).astype(np.int64)

        return keys, pick

    def route(
        self,
        fabric: Fabric,
        src: np.ndarray,
        dst: np.ndarray,
        keys: np.ndarray | None = None,
        down: np.ndarray | None = None,
    ) -> Paths:
        """A path per flow over the equal-cost next hops (:meth:`.base.Router.route`)."""
        src = np.asarray(src, np.int64)
        dst = np.asarray(dst, np.int64)
        keys = np.arange(len(src), dtype=np.int64) if keys is None else np.asarray(keys)
        validate_endpoints(fabric, src, dst)
        spec = self.kernel_spec(fabric, src, dst, keys) if self.use_kernels() else None
        pick = None
        if spec is None:
            keys, pick = self.chooser(fabric, src, dst, keys)
        self.kernel = "numpy" if spec is None else "numba"
        g = _Graph(fabric, down) if down is not None else _graph(fabric)
        nvlink = _nvlink_pairs(fabric, src, dst)
        lengths = np.zeros(len(src), np.int64)
        net = np.flatnonzero(~nvlink)
        if len(net):
            walk, inv = _classes(g, fabric, dst[net], pick)
            if spec is not None:
                from hpn.routing.fast import route_compiled

                found = route_compiled(fabric, g, walk, inv, src[net], dst[net], spec.take(net))
                return _with_nvlink(fabric, src, dst, nvlink, net, found)
            lengths[net] = walk.distance(src[net], inv)
        lengths[nvlink] = 2
        offsets = np.zeros(len(src) + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        links = np.empty(offsets[-1], np.int64)
        if nvlink.any():
            nv = np.flatnonzero(nvlink)
            up = _nvlink_up(fabric)
            links[offsets[nv]] = up[src[nv]]
            links[offsets[nv] + 1] = up[dst[nv]] ^ 1
        for lo in range(0, len(net), _CHUNK):
            part = net[lo : lo + _CHUNK]
            walk.walk(src[part], dst[part], inv[lo : lo + _CHUNK], keys[part], offsets[part], links)
        return Paths(offsets, links)

    compiled: bool | None = None  # the numba walk (None: when hpn.jit.enabled())
    kernel = "numpy"  # which walk the last ``route`` call ran: "numba" or "numpy"

    def use_kernels(self) -> bool:
        """Whether ``route`` may run the compiled walk (it does when ``kernel_spec`` allows):
        ``compiled``, else :func:`hpn.jit.enabled` (a small run's numpy twins import no numba)."""
        from hpn import jit

        return jit.enabled() if self.compiled is None else bool(self.compiled)

    def kernel_spec(
        self, fabric: Fabric, src: np.ndarray, dst: np.ndarray, keys: np.ndarray
    ) -> FlowSpec | None:
        """What the compiled walk needs to choose as :meth:`chooser` does; None where it
        cannot (a subclass with its own chooser, keys that are not integers)."""
        if type(self).chooser is not EcmpRouter.chooser or np.asarray(keys).dtype.kind not in "iu":
            return None
        from hpn.routing.fast import uniform_spec

        return uniform_spec(self.seed, np.asarray(keys).astype(np.int64))


def _nvlink_pairs(fabric: Fabric, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Flows between two GPUs of one host (they go GPU -> NVSwitch -> GPU)."""
    nodes = fabric.nodes
    return (
        (nodes.kind[src] == NodeKind.GPU)
        & (nodes.kind[dst] == NodeKind.GPU)
        & (nodes.host[src] == nodes.host[dst])
        & (nodes.host[src] >= 0)
    )


def _classes(g: _Graph, fabric: Fabric, dst: np.ndarray, pick: Chooser | None):
    """(the walk over the hop distances to the destination classes of ``dst``, the class of
    every flow): destinations with the same attachment switches share a class.

    ``pick`` None (the compiled walk) on a large fabric computes the distances in the
    compiled kernel (the same table; below ``CLASS_KERNEL_MIN`` switch x class cells the
    numpy code is faster than loading the kernel)."""
    ud, inv, tgt, toff = _targets(g, fabric, dst)
    sig_rows, sig_of_ud = _unique_rows(np.concatenate([tgt, toff[:, None]], axis=1))
    sig_tgt, sig_off = sig_rows[:, :-1], sig_rows[:, -1]
    if pick is None and (g.m + 1) * len(sig_rows) >= CLASS_KERNEL_MIN:
        from hpn.routing.fast import class_distances

        dsig = class_distances(g, g.comp[np.maximum(sig_tgt, 0)], sig_tgt >= 0, sig_off)
        return _Walk(fabric, g, dsig, pick), sig_of_ud[inv]
    cols, tinv = np.unique(sig_tgt[sig_tgt >= 0], return_inverse=True)
    D = _hops_to(g, g.comp[cols])  # (switches + 1, target switches)
    tcol: np.ndarray = np.full(sig_tgt.shape, -1, np.int64)
    tcol[sig_tgt >= 0] = tinv
    width = int(np.shape(tcol)[1])
    dsig = np.full((D.shape[0], len(sig_rows)), _FAR, np.int32)
    for j in range(width):
        has = np.flatnonzero(tcol[:, j] >= 0)
        dsig[:, has] = np.minimum(dsig[:, has], D[:, tcol[has, j]])
    dsig = np.minimum(dsig + sig_off[None, :].astype(np.int32), _FAR)
    return _Walk(fabric, g, dsig, pick), sig_of_ud[inv]


def _unique_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(rows, axis=0, return_inverse=True)`` of small non-negative integers (-1
    allowed), by one int64 key per row when the row fits in 62 bits."""
    if not rows.size:
        u, inv = np.unique(rows, axis=0, return_inverse=True)
        return u, inv.ravel()
    bits = max(int(rows.max()) + 2, 2).bit_length()
    if rows.shape[1] * bits > 62 or int(rows.min()) < -1:
        u, inv = np.unique(rows, axis=0, return_inverse=True)
        return u, inv.ravel()
    key = np.zeros(len(rows), np.int64)
    for j in range(rows.shape[1]):  # lexicographic: the first column in the high bits
        key = (key << bits) | (rows[:, j].astype(np.int64) + 1)
    _, first, inv = np.unique(key, return_index=True, return_inverse=True)
    return rows[first], inv.ravel()


def _with_nvlink(fabric, src, dst, nvlink, net, part: Paths) -> Paths:
    """All flows' paths from the network flows' (``part``, flows ``net``) and the NVLink
    flows' two hops."""
    if len(net) == len(src):
        return part
    lengths = np.full(len(src), 2, np.int64)
    lengths[net] = part.lengths
    offsets = np.zeros(len(src) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    links = np.empty(offsets[-1], np.int64)
    nv = np.flatnonzero(nvlink)
    up = _nvlink_up(fabric)
    links[offsets[nv]] = up[src[nv]]
    links[offsets[nv] + 1] = up[dst[nv]] ^ 1
    pos = np.repeat(offsets[net] - part.offsets[:-1], part.lengths) + np.arange(len(part.links))
    links[pos] = part.links
    return Paths(offsets, links)


def _hops_to(g: _Graph, targets: np.ndarray) -> np.ndarray:
    """Hop distances (int32, _FAR: none) from every compact switch to each target, with a
    last row of _FAR for the switches outside the switch graph.

    One breadth-first search for all targets at once: each switch holds a bitset of the
    targets it reaches within ``level`` hops, extended each level by OR-ing its
    out-neighbours' sets (a Clos has a diameter of a few hops).
    """
    m, nt = g.m, len(targets)
    D = np.full((m + 1, nt), _FAR, np.int32)
    ok = np.flatnonzero(targets < m)
    if not len(ok) or not m:
        return D
    a = g.switch_graph
    words = (nt + 63) // 64
    reach = np.zeros((m, words), np.uint64)
    col = ok.astype(np.uint64)
    np.bitwise_or.at(
        reach, (targets[ok], ok // 64), np.left_shift(np.uint64(1), col % np.uint64(64))
    )
    D[targets[ok], ok] = 0
    deg = np.diff(a.indptr)
    rows = np.flatnonzero(deg > 0)
    for level in range(1, m + 1):
        nb = np.zeros_like(reach)
        if len(rows):
            nb[rows] = np.bitwise_or.reduceat(reach[a.indices], a.indptr[rows], axis=0)
        fresh = nb & ~reach
        if not fresh.any():
            break
        reach |= fresh
        hit = np.unpackbits(fresh.view(np.uint8), axis=1, bitorder="little")[:, :nt]
        D[:m][hit.astype(bool)] = level
    return D


def _nvlink_up(fabric: Fabric) -> np.ndarray:
    lk = fabric.links
    up = np.full(fabric.num_nodes, -1, np.int64)
    ids = np.flatnonzero((lk.tier == LinkTier.NVLINK) & (fabric.nodes.kind[lk.src] == NodeKind.GPU))
    up[lk.src[ids]] = ids
    return up


class _Walk:
    """Walks flows hop by hop; ``dsig[switch, sig]`` is the hop distance to a destination
    class (destinations with the same attachment switches share a class)."""

    def __init__(self, fabric: Fabric, g: _Graph, dsig: np.ndarray, pick: Chooser | None):
        self.lk, self.g, self.pick = fabric.links, g, pick
        self.nsig = dsig.shape[1]
        self.flat = dsig.ravel()
        self.out_comp = g.comp[fabric.links.dst[g.out_ids]] * self.nsig  # row base per out-link

    def dist(self, nodes: np.ndarray, sig: np.ndarray) -> np.ndarray:
        """Hops from switch ``nodes`` to destination classes ``sig``."""
        return self.flat[self.g.comp[nodes] * self.nsig + sig]

    def distance(self, src: np.ndarray, uinv: np.ndarray) -> np.ndarray:
        """Hops from every src to its dst; InputError if there is no path."""
        out = np.empty(len(src), np.int64)
        g = self.g
        for lo in range(0, len(src), _CHUNK):
            s, u = src[lo : lo + _CHUNK], uinv[lo : lo + _CHUNK]
            d = np.full(len(s), _FAR, np.int64)
            sw = g.fwd[s]
            if sw.any():
                d[sw] = self.dist(s[sw], u[sw])
            ep = np.flatnonzero(~sw)
            if len(ep):
                rep, pos = self._expand(s[ep])
                dc = self.flat[self.out_comp[pos] + u[ep][rep]] + 1
                best = np.full(len(ep), _FAR, np.int64)
                deg = np.bincount(rep, minlength=len(ep))
                has = deg > 0  # entries are grouped by flow: one reduceat per flow
                if len(dc):
                    best[has] = np.minimum.reduceat(dc, (np.cumsum(deg) - deg)[has])
                d[ep] = best
            bad = np.flatnonzero(d >= _FAR)
            if len(bad):
                i = lo + int(bad[0])
                raise InputError(
                    "routing", f"no path from node {int(src[i])} (flow {i}) to its destination"
                )
            out[lo : lo + _CHUNK] = d
        return out

    def _expand(self, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        off = self.g.out_off
        deg = off[v + 1] - off[v]
        rep = np.repeat(np.arange(len(v)), deg)
        starts = np.repeat(off[v] - np.concatenate(([0], np.cumsum(deg)[:-1])), deg)
        return rep, starts + np.arange(len(rep))  # positions in out_ids

    def walk(self, src, dst, uinv, keys, offsets, links) -> None:
        lk, g = self.lk, self.g
        at = src.copy()
        remaining = self.distance(src, uinv)
        hop = 0
        idx = np.arange(len(src))
        while len(idx):
            v, r, u = at[idx], remaining[idx], uinv[idx]
            chosen = np.empty(len(idx), np.int64)
            last = (r == 1) & ~g.fwd[dst[idx]]
            if last.any():
                li = np.flatnonzero(last)
                chosen[li] = self._last_hop(v[li], dst[idx[li]])
            mid = np.flatnonzero(~last)
            if len(mid):
                # candidates depend on (node, destination class) only: expand each once
                cls, of = np.unique(v[mid] * self.nsig + u[mid], return_inverse=True)
                cv, cu = cls // self.nsig, cls % self.nsig
                rep, where = self._expand(cv)
                cr = np.empty(len(cls), np.int64)
                cr[of] = r[mid]  # hops left: a function of (node, class) on shortest paths
                ok = self.flat[self.out_comp[where] + cu[rep]] == cr[rep] - 1
                rep, cand = rep[ok], g.out_ids[where[ok]]
                c_count = np.bincount(rep, minlength=len(cls))
                if (c_count == 0).any():
                    raise InputError("routing", "inconsistent distances (no next hop)")
                count = c_count[of]
                first = np.concatenate(([0], np.cumsum(c_count)[:-1]))[of]
                prev = links[offsets[idx[mid]] + hop - 1] if hop else np.full(len(mid), -1)
                assert self.pick is not None, "a numpy walk needs its chooser"
                pick = self.pick(Choice(v[mid], keys[idx[mid]], hop, count, first, cand, prev))
                chosen[mid] = cand[first + pick]
            links[offsets[idx] + hop] = chosen
            at[idx] = lk.dst[chosen]
            remaining[idx] = r - 1
            idx = idx[r > 1]
            hop += 1

    def _last_hop(self, v: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """The link v -> dst into an endpoint (the lowest-id one if parallel)."""
        g = self.g
        cnt = g.att_off[dst + 1] - g.att_off[dst]
        out = np.full(len(v), -1, np.int64)
        for j in range(int(cnt.max())):
            has = np.flatnonzero((cnt > j) & (out < 0))
            lid = g.att_ids[g.att_off[dst[has]] + j]
            hit = self.lk.src[lid] == v[has]
            out[has[hit]] = lid[hit]
        return out


register_router(
    "random", EcmpRouter, "shortest paths, a seeded random choice among equal costs at every hop"
)
