"""HPN's host-side precise path selection (P §6.1, App B Alg 1-2).

For every pair of NICs the host predicts the switches' hashes (as RePaC does: the functions
are linear and known), enumerating candidate UDP source ports and the path each one takes;
it keeps one source port per *distinct* path, and gives connection ``j`` of the pair the
``j``-th choice, alternating planes (NIC ports) so both are used evenly. The network then
routes the chosen ports by ordinary hashing (:class:`HashEcmpRouter`), so prediction and
forwarding are the same code and cannot disagree.

Candidates are searched in rounds of growing size per pair; a pair stops when it has enough
distinct paths for its connections, or when a round finds no new path (its equal-cost paths
are exhausted, e.g. two NICs under the same ToR pair have exactly one path per plane).
Messages are spread over a pair's connections by least outstanding bytes on real hosts; in a
fluid model with equal connection rates that is an equal split, which is what the workload
layer does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hpn.routing.addressing import SPORT_MAX, SPORT_MIN
from hpn.routing.base import Paths, register_router, validate_endpoints
from hpn.routing.ecmp import HashEcmpRouter
from hpn.routing.shortest import splitmix64

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
    """Precise path selection: distinct paths per pair's connections, planes balanced."""

    name = "hpn"

    def __init__(
        self, seed: int = 0, hashing=None, first_round: int = 16, max_candidates: int = 256
    ):
        super().__init__(seed, hashing)
        self.first_round = int(first_round)
        self.max_candidates = int(max_candidates)

    def route(self, fabric, src, dst, keys=None, down=None) -> Paths:
        return self.select(fabric, src, dst, keys, down).paths

    def select(self, fabric, src, dst, keys=None, down=None) -> Selection:
        src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
        validate_endpoints(fabric, src, dst)
        n = len(src)
        keys = np.arange(n, dtype=np.int64) if keys is None else np.asarray(keys, np.int64)
        pair_key = src * fabric.num_nodes + dst
        pairs, pair_of = np.unique(pair_key, return_inverse=True)
        # connection j of a pair = rank of the flow's key among the pair's distinct keys (a
        # connection carries many flows: buckets, micro-batches reuse it)
        conns, conn_of = np.unique(np.stack([pair_of, keys]), axis=1, return_inverse=True)
        conn_of = conn_of.ravel()
        first = np.searchsorted(conns[0], np.arange(len(pairs)))
        conn = (np.arange(conns.shape[1]) - first[conns[0]])[conn_of]
        need = np.bincount(conns[0], minlength=len(pairs))
        p_src, p_dst = pairs // fabric.num_nodes, pairs % fabric.num_nodes
        found = _Found(len(pairs))
        active = np.arange(len(pairs))
        tried, size = 0, self.first_round
        while len(active) and tried < self.max_candidates:
            size = min(size, self.max_candidates - tried)
            cand_pair = np.repeat(active, size)
            offs = np.tile(np.arange(tried, tried + size), len(active))
            sp = self._candidate_sports(pairs[cand_pair], offs)
            paths = self.route_sports(fabric, p_src[cand_pair], p_dst[cand_pair], sp, down)
            new = found.add(
                cand_pair, sp, _path_ids(paths), fabric.links.port[paths.links[paths.offsets[:-1]]]
            )
            tried += size
            enough = found.count[active] >= need[active]
            saturated = np.bincount(cand_pair, weights=new, minlength=len(pairs))[active] == 0
            active = active[~(enough | saturated)]
            size *= 2
        sport = found.assign(pair_of, conn)
        paths = self.route_sports(fabric, src, dst, sport, down)
        plane = fabric.links.port[paths.links[paths.offsets[:-1]]].astype(np.int64)
        return Selection(sport, paths, plane, found.count[pair_of])

    def _candidate_sports(self, pair_key: np.ndarray, index: np.ndarray) -> np.ndarray:
        """Candidate ``index`` of a pair: a pair-specific walk through the port range."""
        start = splitmix64(pair_key.astype(np.uint64) ^ np.uint64(self.seed & 0xFFFFFFFF))
        return (SPORT_MIN + (start + index.astype(np.uint64)) % np.uint64(_SPAN)).astype(np.uint32)


_KEY = np.dtype([("pair", "<u8"), ("pid", "<u8")])


def _keys(pair: np.ndarray, pid: np.ndarray) -> np.ndarray:
    """(pair, path id) as one comparable 16-byte key per candidate."""
    rec = np.empty(len(pair), _KEY)
    rec["pair"], rec["pid"] = pair, pid
    return rec.view("V16")


class _Found:
    """Distinct paths found per pair: their source ports and planes."""

    def __init__(self, n_pairs: int):
        self.count = np.zeros(n_pairs, np.int64)
        self.items: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.seen = np.zeros(0, "V16")

    def add(self, pair, sport, pid, plane) -> np.ndarray:
        """Record candidates; returns 1 for each candidate that is a new distinct path."""
        key = _keys(pair, pid)
        first = np.sort(np.unique(key, return_index=True)[1])
        fresh = first[~np.isin(key[first], self.seen)]
        self.seen = np.concatenate([self.seen, key[fresh]])
        new = np.zeros(len(pair), np.int64)
        new[fresh] = 1
        self.items.append((pair[fresh], sport[fresh], plane[fresh].astype(np.int64)))
        self.count += np.bincount(pair[fresh], minlength=len(self.count))
        return new

    def assign(self, pair_of: np.ndarray, conn: np.ndarray) -> np.ndarray:
        """Connection j of a pair takes the j-th path of its plane-alternating list."""
        pair = np.concatenate([x[0] for x in self.items]) if self.items else np.zeros(0, int)
        sport = np.concatenate([x[1] for x in self.items]) if self.items else np.zeros(0)
        plane = np.concatenate([x[2] for x in self.items]) if self.items else np.zeros(0, int)
        # order each pair's paths: by rank within its plane, then plane -> p0, p1, p0, p1, ...
        o = np.lexsort((np.arange(len(pair)), plane, pair))
        pair, sport, plane = pair[o], sport[o], plane[o]
        grp = pair * 2 + np.minimum(plane, 1)
        start = np.searchsorted(grp, grp)
        rank_in_plane = np.arange(len(grp)) - start
        o = np.lexsort((plane, rank_in_plane, pair))
        pair, sport = pair[o], sport[o]
        first = np.searchsorted(pair, np.arange(len(self.count)))
        cnt = self.count[pair_of]
        pick = first[pair_of] + conn % np.maximum(cnt, 1)
        return sport[pick].astype(np.uint32)


register_router("hpn", HpnRouter, "host-side precise path selection (source-port search)")
