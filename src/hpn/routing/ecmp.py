"""Hash-faithful ECMP: every switch with a choice hashes the flow's 5-tuple.

At a switch, next hop = ``fold16(hash(5-tuple, seed)) mod N`` over its N equal-cost next hops
in port order (link id order). At the host the bond (LACP) picks the NIC port with its own
hash (Linux ``layer3+4`` by default). Seeds are the same everywhere (production practice),
per tier, or per switch. Cores forward deterministically: traffic for a pod arriving on
in-port ``j`` leaves on candidate ``j mod N`` (P §7); when that port is down, the core falls
back to hashing. Keys passed to :meth:`route` identify connections (queue pairs); each draws
its UDP source port from (seed, key), as a library does per queue pair. :meth:`route_sports`
routes flows whose source ports are given (what HPN's host-side path selection does).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import numpy as np
from pydantic import Field

from hpn.config import Model
from hpn.routing.addressing import SPORT_MAX, SPORT_MIN, AddressPlan, address_plan, roce_tuples
from hpn.routing.base import register_router
from hpn.routing.hashing import HASHES, fold16, get_hash, linux_bond_l34
from hpn.routing.shortest import Choice, EcmpRouter, splitmix64
from hpn.topology.fabric import NodeKind

if TYPE_CHECKING:
    from hpn.topology import Fabric


class HashConfig(Model):
    """How switches and hosts hash (every field settable from configs and the CLI)."""

    tor_hash: str = Field("crc32", description=f"ToR hash: {', '.join(HASHES)}")
    agg_hash: str = Field("crc32", description="Agg hash")
    core_hash: str = Field("crc32", description="core hash (fallback when a mapped port is down)")
    bond_hash: str = Field("l34", description="host bond port choice: l34 (Linux) or a hash name")
    seeds: Literal["same", "tier", "switch"] = Field(
        "same", description="same seed everywhere, one per tier, or one per switch"
    )
    core_port_map: bool = Field(True, description="cores map in-port -> out-port per pod (P §7)")


_TIER_SALT = {NodeKind.TOR: 0x1B873593, NodeKind.AGG: 0xCC9E2D51, NodeKind.CORE: 0x85EBCA6B}


class HashEcmpRouter(EcmpRouter):
    """ECMP as switches do it: CRC/XOR hashes of the RoCEv2 5-tuple, seeded per policy."""

    name = "ecmp"

    def __init__(self, seed: int = 0, hashing: HashConfig | dict | None = None):
        super().__init__(seed)
        self.hashing = hashing if isinstance(hashing, HashConfig) else HashConfig(**(hashing or {}))
        for name in (self.hashing.tor_hash, self.hashing.agg_hash, self.hashing.core_hash):
            get_hash(name)
        if self.hashing.bond_hash != "l34":
            get_hash(self.hashing.bond_hash)
        self._plans: dict[int, AddressPlan] = {}

    def plan(self, fabric: Fabric) -> AddressPlan:
        key = id(fabric)
        if key not in self._plans:
            self._plans = {key: address_plan(fabric)}
        return self._plans[key]

    def sports(self, keys: np.ndarray) -> np.ndarray:
        """The UDP source port each connection draws: seeded by (router seed, key)."""
        h = splitmix64(
            np.asarray(keys, np.int64).astype(np.uint64)
            ^ splitmix64(np.uint64(self.seed & 0xFFFFFFFFFFFFFFFF))
        )
        return (SPORT_MIN + h % np.uint64(SPORT_MAX - SPORT_MIN + 1)).astype(np.uint32)

    def route_sports(self, fabric, src, dst, sports, down=None):
        """Route flows whose UDP source ports are given."""
        self._given = np.asarray(sports, np.int64).astype(np.uint32)
        try:
            return self.route(fabric, src, dst, None, down)
        finally:
            self._given = None

    def switch_seeds(self, fabric: Fabric, nodes: np.ndarray) -> np.ndarray:
        kind = fabric.nodes.kind[nodes]
        base = np.uint64(self.seed & 0xFFFFFFFF)
        if self.hashing.seeds == "same":
            return np.full(len(nodes), base, np.uint64)
        if self.hashing.seeds == "tier":
            salt = np.zeros(len(nodes), np.uint64)
            for k, v in _TIER_SALT.items():
                salt[kind == k] = v
            return base ^ salt
        return splitmix64(nodes.astype(np.uint64) ^ base) & np.uint64(0xFFFFFFFF)

    _given: np.ndarray | None = None

    def chooser(self, fabric, src, dst, keys):
        if self._given is not None:
            sports = self._given
        else:
            sports = self.sports(np.arange(len(src)) if keys is None else keys)
        tuples = roce_tuples(self.plan(fabric), src, dst, sports)
        cfg, kind, lk = self.hashing, fabric.nodes.kind, fabric.links
        in_rank = _in_rank(fabric) if cfg.core_port_map else None
        fns = {NodeKind.TOR: cfg.tor_hash, NodeKind.AGG: cfg.agg_hash, NodeKind.CORE: cfg.core_hash}

        def pick(c: Choice) -> np.ndarray:
            out = np.zeros(len(c.nodes), np.int64)
            k = kind[c.nodes]
            host = ~np.isin(k, (NodeKind.TOR, NodeKind.AGG, NodeKind.CORE, NodeKind.NVSWITCH))
            if host.any():
                i = np.flatnonzero(host)
                t = tuples.take(c.keys[i])
                if cfg.bond_hash == "l34":
                    (s_ip, _), (d_ip, _), _, (sp, _), (dp, _) = t.fields
                    h = linux_bond_l34(s_ip, d_ip, sp, dp)
                else:
                    h = fold16(get_hash(cfg.bond_hash)(t, self.seed))
                out[i] = h.astype(np.int64) % c.count[i]
            for node_kind, fn in fns.items():
                i = np.flatnonzero(k == node_kind)
                if not len(i):
                    continue
                h = fold16(
                    get_hash(fn)(tuples.take(c.keys[i]), self.switch_seeds(fabric, c.nodes[i]))
                )
                out[i] = h.astype(np.int64) % c.count[i]
                if node_kind == NodeKind.CORE and in_rank is not None:
                    out[i] = _core_map(c, i, out[i], in_rank, lk)
            return out

        return np.arange(len(src), dtype=np.int64), pick


def _in_rank(fabric: Fabric) -> np.ndarray:
    """For every directed link, its rank among the links into the same node (by id)."""
    dst = fabric.links.dst
    order = np.lexsort((np.arange(len(dst)), dst))
    first = np.searchsorted(dst[order], dst[order], side="left")
    rank = np.empty(len(dst), np.int64)
    rank[order] = np.arange(len(dst)) - first
    return rank


def _core_map(c: Choice, i: np.ndarray, hashed: np.ndarray, in_rank, lk) -> np.ndarray:
    """In-port j -> candidate j mod N; hashing where no in-port is known (the first hop)."""
    prev = c.prev[i]
    known = prev >= 0
    mapped = np.where(known, in_rank[np.maximum(prev, 0)] % c.count[i], hashed)
    return mapped


register_router("ecmp", HashEcmpRouter, "switch hashing of RoCEv2 5-tuples (CRC), LACP bond")
