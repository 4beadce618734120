"""Hash-faithful ECMP: every switch with a choice hashes the flow's 5-tuple.

At a switch, next hop = ``rotate16(fold16(hash(5-tuple, seed)), offset) mod N`` over its N
equal-cost next hops in port order (link id order). By default, as production fabrics are
configured, every switch has its own seed and each tier its own hash offset (the bits of the
hash that feed the modulo): ToR 0, Agg 10, core 0 (SONiC's per-role offset on T1 switches).
``seeds="same"`` with offset 0 everywhere is the explicit polarization scenario. At the host
the bond (LACP) picks the NIC port with its own hash (Linux ``layer3+4`` by default). Cores
forward deterministically: traffic for a pod arriving on in-port ``j`` leaves on candidate
``j mod N`` (P §7); when that port is down, the core falls back to hashing. Keys passed to
:meth:`route` identify connections (queue pairs); each draws its UDP source port from
(seed, key), as a library does per queue pair. :meth:`route_sports` routes flows whose source
ports are given (what HPN's host-side path selection does). The seed scheme is written out in
``docs/guide/routing.md`` (the namespace lab reuses it).

``linux`` (a tier's hash, or the hosts' ``bond_hash``) is a Linux router instead
(:mod:`hpn.routing.linuxhash`): the kernel's SipHash of the flow keys, seeded with the switch's
seed, picks among all equal-cost next hops in link order by hash threshold (no offset, no
two-stage LAG choice, no core port map); hosts seed theirs once per host. ``ecmp_hash=linux``
for every tier makes the hosts Linux too unless ``bond_hash`` is given: the namespace lab's
fabric, whose paths the model then predicts flow for flow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import Field, field_validator, model_validator

from hpn.config import Model
from hpn.routing.addressing import SPORT_MAX, SPORT_MIN, address_plan, roce_tuples
from hpn.routing.base import register_router
from hpn.routing.cache import per_fabric
from hpn.routing.config import DEFAULT_SEEDS
from hpn.routing.hashing import HASHES, fold16, get_hash, linux_bond_l34, rotate16
from hpn.routing.linuxhash import LINUX
from hpn.routing.shortest import Choice, EcmpRouter, splitmix64
from hpn.topology.fabric import NodeKind

if TYPE_CHECKING:
    from hpn.routing.base import Paths
    from hpn.routing.fast import FlowSpec
    from hpn.routing.shortest import Chooser
    from hpn.topology import Fabric


class HashConfig(Model):
    """How switches and hosts hash (every field settable from configs and the CLI)."""

    tor_hash: str = Field("crc32", description=f"ToR hash: {', '.join(HASHES)}, {LINUX}")
    agg_hash: str = Field("crc32", description="Agg hash")
    core_hash: str = Field("crc32", description="core hash (fallback when a mapped port is down)")
    bond_hash: str = Field(
        "l34",
        description="host port choice: l34 (Linux bonding layer3+4), rr (RoCE LAG: connections "
        "round robin over ports), linux (a multipath route, the kernel's hash), or a hash name",
    )
    seeds: Literal["same", "tier", "switch"] = Field(
        DEFAULT_SEEDS,
        description="same: one seed everywhere and every switch hashes alike (offsets not "
        "given are 0); tier: SONiC's per-role seeds; switch: one per switch (Linux "
        "per-namespace seed, Cumulus, Dell)",
    )
    tor_offset: int = Field(0, ge=0, le=15, description="ToR hash offset (bits rotated out)")
    agg_offset: int = Field(10, ge=0, le=15, description="Agg hash offset (SONiC T1: 10)")
    core_offset: int = Field(0, ge=0, le=15, description="core hash offset")
    lag: bool = Field(
        True,
        description="parallel links to one neighbour are a LAG: hash over neighbours (ECMP), "
        "then over the LAG's members; false: one flat ECMP group over all links",
    )
    tor_lag_offset: int = Field(
        8, ge=0, le=15, description="ToR LAG hash offset (equal to tor_offset: correlated)"
    )
    agg_lag_offset: int = Field(2, ge=0, le=15, description="Agg LAG hash offset")
    core_lag_offset: int = Field(8, ge=0, le=15, description="core LAG hash offset")
    core_port_map: bool = Field(True, description="cores map in-port -> out-port per pod (P §7)")

    @model_validator(mode="before")
    @classmethod
    def _same_means_alike(cls, data: Any) -> Any:
        """``seeds="same"``: every switch hashes alike, so offsets not given are 0."""
        if isinstance(data, dict) and data.get("seeds") == "same":
            zero = {
                f"{t}{o}": 0 for t in ("tor", "agg", "core") for o in ("_offset", "_lag_offset")
            }
            data = {**zero, **data}
        if isinstance(data, dict) and all(data.get(f"{t}_hash") == LINUX for t in TIER_NAMES):
            data = {"bond_hash": LINUX, **data}  # Linux routers, Linux hosts
        return data

    @field_validator("tor_hash", "agg_hash", "core_hash")
    @classmethod
    def _known(cls, name: str) -> str:
        if name not in HASHES and name != LINUX:
            raise ValueError(f"unknown hash {name!r}; choose from {', '.join(HASHES)}, {LINUX}")
        return name

    @field_validator("bond_hash")
    @classmethod
    def _bond(cls, name: str) -> str:
        if name not in ("l34", "rr", LINUX) and name not in HASHES:
            raise ValueError(
                f"unknown bond hash {name!r}; choose from l34, rr, {LINUX}, {', '.join(HASHES)}"
            )
        return name

    @classmethod
    def polarized(cls, **kw) -> HashConfig:
        """One seed and no offset anywhere: every tier takes the same bits of one CRC."""
        zero = {f"{t}{o}": 0 for t in ("tor", "agg", "core") for o in ("_offset", "_lag_offset")}
        return cls(**{"seeds": "same", **zero, **kw})

    def describe(self) -> str:
        """One line naming the hashing (for outputs and stored runs)."""
        h = {self.tor_hash, self.agg_hash, self.core_hash}
        fn = self.tor_hash if len(h) == 1 else f"{self.tor_hash}/{self.agg_hash}/{self.core_hash}"
        return (
            f"hash {fn}, seeds {self.seeds}, offsets {self.tor_offset}/{self.agg_offset}/"
            f"{self.core_offset}, bond {self.bond_hash}"
        )


TIER_NAMES = ("tor", "agg", "core")

# SONiC's ECMP seed per device role (docker-orchagent/switch.json.j2): ToRRouter 0,
# LeafRouter 10, SpineRouter 25; the router seed is XORed in.
TIER_SEEDS = {NodeKind.TOR: 0, NodeKind.AGG: 10, NodeKind.CORE: 25}


def switch_seed(node: np.ndarray | int, base: int) -> np.ndarray:
    """The per-switch seed of ``seeds="switch"``: the low 32 bits of splitmix64(node ^ base),
    for switch node id ``node`` and router seed ``base``.

    Parameters
    ----------
    node
        Switch node id(s).
    base
        Router seed.

    Returns
    -------
    numpy.ndarray
        uint64 seeds below 2**32.
    """
    x = np.asarray(node, np.uint64) ^ np.uint64(base & 0xFFFFFFFF)
    return splitmix64(x) & np.uint64(0xFFFFFFFF)


class HashEcmpRouter(EcmpRouter):
    """ECMP as switches do it: CRC/XOR hashes of the RoCEv2 5-tuple, seeded per policy."""

    name = "ecmp"

    def __init__(self, seed: int = 0, hashing: HashConfig | dict | None = None):
        super().__init__(seed)
        self.hashing = hashing if isinstance(hashing, HashConfig) else _hash_config(hashing)

    def sports(self, keys: np.ndarray) -> np.ndarray:
        """The UDP source port each connection draws: seeded by (router seed, key)."""
        h = splitmix64(
            np.asarray(keys, np.int64).astype(np.uint64)
            ^ splitmix64(np.uint64(self.seed & 0xFFFFFFFFFFFFFFFF))
        )
        return (SPORT_MIN + h % np.uint64(SPORT_MAX - SPORT_MIN + 1)).astype(np.uint32)

    def route_sports(
        self,
        fabric: Fabric,
        src: np.ndarray,
        dst: np.ndarray,
        sports: np.ndarray,
        down: np.ndarray | None = None,
        rr: np.ndarray | None = None,
    ) -> Paths:
        """Route flows whose UDP source ports are given.

        ``rr``: under the ``rr`` bond, the counter each flow's host takes modulo its ports
        (the port HPN's selection pinned the connection to); None: the flow's position, as
        HPN's search numbers its candidate probes."""
        self._given = np.asarray(sports, np.int64).astype(np.uint32)
        self._rr = None if rr is None else np.asarray(rr, np.int64)
        try:
            return EcmpRouter.route(self, fabric, src, dst, None, down)
        finally:
            self._given = self._rr = None

    def bond_counter(self, src: np.ndarray, conn: np.ndarray) -> np.ndarray:
        """What the ``rr`` bond takes modulo a host's ports, per flow (``conn`` otherwise).

        Routed connections: :func:`rr_ranks` (each NIC's connections in turn over its ports);
        given source ports: ``route_sports``'s ``rr``, else the flow's position."""
        if self.hashing.bond_hash != "rr":
            return conn
        if self._given is not None:
            return conn if self._rr is None else self._rr
        return rr_ranks(src, conn)

    def switch_seeds(self, fabric: Fabric, nodes: np.ndarray) -> np.ndarray:
        """The hash seed of every switch in ``nodes`` under the ``seeds`` policy."""
        kind = fabric.nodes.kind[nodes]
        base = np.uint64(self.seed & 0xFFFFFFFF)
        if self.hashing.seeds == "same":
            return np.full(len(nodes), base, np.uint64)
        if self.hashing.seeds == "tier":
            role = np.zeros(len(nodes), np.uint64)
            for k, v in TIER_SEEDS.items():
                role[kind == k] = v
            return base ^ role
        return switch_seed(nodes, self.seed)

    def kernel_seeds(self, fabric: Fabric, nodes: np.ndarray) -> np.ndarray:
        """``fib_multipath_hash_seed`` of each node as a Linux router or host: a switch's seed
        under the ``seeds`` policy, a NIC endpoint its host's (the ``switch`` seed of the
        host's first NIC: one namespace, one seed), moved into 1..2^32-1."""
        from hpn.routing.linuxhash import kernel_seed

        nodes = np.asarray(nodes, np.int64)
        nd = fabric.nodes
        out = np.zeros(len(nodes), np.uint64)
        sw = np.isin(nd.kind[nodes], (NodeKind.TOR, NodeKind.AGG, NodeKind.CORE))
        out[sw] = self.switch_seeds(fabric, nodes[sw])
        ends = nodes[~sw]
        if len(ends):
            out[~sw] = switch_seed(_first_nic(fabric)[ends], self.seed)
        return kernel_seed(out)

    _given: np.ndarray | None = None
    _rr: np.ndarray | None = None

    def kernel_spec(
        self, fabric: Fabric, src: np.ndarray, dst: np.ndarray, keys: np.ndarray
    ) -> FlowSpec | None:
        """The compiled walk's view of :meth:`chooser` (None for a subclass's own chooser)."""
        if type(self).chooser is not HashEcmpRouter.chooser:
            return None
        cfg = self.hashing
        if LINUX in (cfg.tor_hash, cfg.agg_hash, cfg.core_hash, cfg.bond_hash):
            return None  # the kernel's hash runs in numpy
        from hpn.routing.fast import hash_spec

        conn = np.asarray(keys, np.int64)
        sports = self._given if self._given is not None else self.sports(conn)
        tuples = roce_tuples(address_plan(fabric), src, dst, sports)
        seeds = self.switch_seeds(fabric, np.arange(fabric.num_nodes))
        bond = self.bond_counter(np.asarray(src, np.int64), conn)
        return hash_spec(
            fabric, self.hashing, self.seed, seeds, tuples, bond, self.core_ports(fabric)
        )

    def core_ports(self, fabric: Fabric) -> tuple | None:
        """(in-port rank per link, the cores' ports per pod) where cores map ports."""
        if not self.hashing.core_port_map:
            return None
        return _in_rank(fabric), _core_ports(fabric)

    def chooser(
        self, fabric: Fabric, src: np.ndarray, dst: np.ndarray, keys: np.ndarray
    ) -> tuple[np.ndarray, Chooser]:
        conn = np.arange(len(src)) if keys is None else np.asarray(keys, np.int64)
        sports = self._given if self._given is not None else self.sports(conn)
        tuples = roce_tuples(address_plan(fabric), src, dst, sports)
        bond = self.bond_counter(np.asarray(src, np.int64), conn)
        cfg, kind = self.hashing, fabric.nodes.kind
        in_rank = _in_rank(fabric) if cfg.core_port_map else None
        ports = _core_ports(fabric) if cfg.core_port_map else None
        fns = {
            NodeKind.TOR: (cfg.tor_hash, cfg.tor_offset, cfg.tor_lag_offset),
            NodeKind.AGG: (cfg.agg_hash, cfg.agg_offset, cfg.agg_lag_offset),
            NodeKind.CORE: (cfg.core_hash, cfg.core_offset, cfg.core_lag_offset),
        }

        def pick(c: Choice) -> np.ndarray:
            out = np.zeros(len(c.nodes), np.int64)
            k = kind[c.nodes]
            host = ~np.isin(k, (NodeKind.TOR, NodeKind.AGG, NodeKind.CORE, NodeKind.NVSWITCH))
            if host.any():
                i = np.flatnonzero(host)
                t = tuples.take(c.keys[i])
                if cfg.bond_hash == LINUX:
                    out[i] = _linux_pick(t, self.kernel_seeds(fabric, c.nodes[i]), c.count[i])
                    h = None
                elif cfg.bond_hash == "rr":
                    h = bond[c.keys[i]]
                elif cfg.bond_hash == "l34":
                    (s_ip, _), (d_ip, _), _, (sp, _), (dp, _) = t.fields
                    h = linux_bond_l34(s_ip, d_ip, sp, dp)
                else:
                    h = fold16(get_hash(cfg.bond_hash)(t, self.seed))
                if h is not None:
                    out[i] = h.astype(np.int64) % c.count[i]
            for node_kind, (fn, offset, lag_offset) in fns.items():
                i = np.flatnonzero(k == node_kind)
                if not len(i):
                    continue
                if fn == LINUX:
                    seeds = self.kernel_seeds(fabric, c.nodes[i])
                    out[i] = _linux_pick(tuples.take(c.keys[i]), seeds, c.count[i])
                    continue
                h = fold16(
                    get_hash(fn)(tuples.take(c.keys[i]), self.switch_seeds(fabric, c.nodes[i]))
                )
                if cfg.lag:
                    out[i] = _lag_pick(c, i, fabric, rotate16(h, offset), rotate16(h, lag_offset))
                else:
                    out[i] = rotate16(h, offset).astype(np.int64) % c.count[i]
                if node_kind == NodeKind.CORE and in_rank is not None:
                    out[i] = _core_map(c, i, out[i], in_rank, fabric, ports)
            return out

        return np.arange(len(src), dtype=np.int64), pick


def rr_ranks(src: np.ndarray, conn: np.ndarray) -> np.ndarray:
    """The ``rr`` bond's counter per flow: the rank of its connection among the distinct
    connection keys of its source NIC, in key order (the order the connections were opened).

    A NIC's connections take its ports in turn, as mlx5's LAG gives each new queue pair the
    next port (Linux ``drivers/infiniband/hw/mlx5/qp.c``, ``get_tx_affinity_rr``); flows that
    share a key are one connection and share its port.

    Parameters
    ----------
    src
        Source node (NIC) of each flow.
    conn
        Connection key of each flow.

    Returns
    -------
    numpy.ndarray
        int64, per flow.

    Examples
    --------
    >>> rr_ranks(np.array([7, 9, 7, 9, 7]), np.array([0, 1, 2, 3, 2])).tolist()
    [0, 0, 1, 1, 1]
    """
    src, conn = np.asarray(src, np.int64), np.asarray(conn, np.int64)
    o = np.lexsort((conn, src))
    s, k = src[o], conn[o]
    new_src = np.ones(len(o), bool)
    new_src[1:] = s[1:] != s[:-1]
    new_conn = new_src.copy()
    new_conn[1:] |= k[1:] != k[:-1]
    distinct = np.cumsum(new_conn) - 1  # the (NIC, key) number of each flow, in order
    out = np.empty(len(o), np.int64)
    out[o] = distinct - distinct[new_src][np.cumsum(new_src) - 1]
    return out


def _linux_pick(t, seeds: np.ndarray, count: np.ndarray) -> np.ndarray:
    """A Linux router's choice among ``count`` next hops for the tuples ``t``."""
    from hpn.routing.linuxhash import flow_hash, select

    (s_ip, _), (d_ip, _), (proto, _), (sp, _), (dp, _) = t.fields
    proto_v = int(proto[0]) if len(proto) else 17
    return select(flow_hash(s_ip, d_ip, sp, dp, proto_v, seeds), count)


@per_fabric
def _first_nic(fabric: Fabric) -> np.ndarray:
    """Per node: the first NIC endpoint of its host (itself where it has no host)."""
    nd = fabric.nodes
    out = np.arange(fabric.num_nodes, dtype=np.int64)
    ends = np.flatnonzero(np.isin(nd.kind, (NodeKind.GPU, NodeKind.HOST)) & (nd.host >= 0))
    first: dict[int, int] = {}
    for n in ends:  # ascending: the first seen is the host's first NIC
        first.setdefault(int(nd.host[n]), int(n))
    out[ends] = [first[int(nd.host[n])] for n in ends]
    return out


def _lag_pick(c: Choice, i: np.ndarray, fabric: Fabric, h_ecmp, h_lag) -> np.ndarray:
    """Two-stage choice of flows ``i``: neighbour ``h_ecmp mod m`` among the m distinct next-hop
    switches (in order of their first link), then member ``h_lag mod L`` of the L parallel
    links to it (in port order). Without parallel links this is ``h_ecmp mod count``."""
    count, first = c.count[i], c.first[i]
    flow = np.repeat(np.arange(len(i)), count)
    pos = (
        np.repeat(first, count)
        + np.arange(count.sum())
        - np.repeat(np.cumsum(count) - count, count)
    )
    nbr = fabric.links.dst[c.cand[pos]].astype(np.int64)
    # rank of each candidate's neighbour within its flow, and of the candidate within (flow, nbr)
    key = flow * (fabric.num_nodes + 1) + nbr
    _, first_at, inv = np.unique(key, return_index=True, return_inverse=True)
    inv = inv.ravel()
    grp_first = first_at[inv]  # position of the group's first candidate
    is_first = grp_first == np.arange(len(key))
    starts = np.repeat(np.cumsum(count) - count, count)  # each flow's first candidate
    cs = np.cumsum(is_first) - 1  # global group number at a group's first candidate
    nbr_rank = cs[grp_first] - cs[starts]
    m = np.bincount(flow[is_first], minlength=len(i))
    members = np.bincount(inv)[inv]
    member_rank = np.zeros(len(key), np.int64)
    order = np.lexsort((np.arange(len(key)), inv))
    run_start = np.searchsorted(inv[order], inv[order])
    member_rank[order] = np.arange(len(key)) - run_start
    want_nbr = (np.asarray(h_ecmp, np.int64) % np.maximum(m, 1))[flow]
    want_mem = np.asarray(h_lag, np.int64)[flow] % members
    hit = (nbr_rank == want_nbr) & (member_rank == want_mem)
    out = np.zeros(len(i), np.int64)
    out[flow[hit]] = pos[hit] - first[flow[hit]]
    return out


def _hash_config(table: dict | None) -> HashConfig:
    """A HashConfig from a dict; a bad field is an InputError naming it."""
    from pydantic import ValidationError

    from hpn.config import one_line

    try:
        return HashConfig(**(table or {}))
    except ValidationError as e:
        raise one_line(e, "routing") from None


@per_fabric
def _in_rank(fabric: Fabric) -> np.ndarray:
    """For every directed link, its rank among the links into the same node (by id)."""
    dst = fabric.links.dst
    order = np.argsort(dst, kind="stable")  # by node, then link id
    into = np.bincount(dst, minlength=fabric.num_nodes)
    rank = np.empty(len(dst), np.int64)
    rank[order] = np.arange(len(dst)) - (np.cumsum(into) - into)[dst[order]]
    return rank


@per_fabric
def _core_ports(fabric: Fabric) -> tuple[np.ndarray, np.ndarray, int]:
    """CSR of every core's links into the Aggs of each pod, in port order: key core*P + pod."""
    lk, nd = fabric.links, fabric.nodes
    m = np.flatnonzero((nd.kind[lk.src] == NodeKind.CORE) & (nd.kind[lk.dst] == NodeKind.AGG))
    pods = int(nd.pod.max()) + 1
    key = lk.src[m].astype(np.int64) * pods + nd.pod[lk.dst[m]]
    order = np.lexsort((m, key))
    offsets = np.zeros(fabric.num_nodes * pods + 1, np.int64)
    np.cumsum(np.bincount(key, minlength=fabric.num_nodes * pods), out=offsets[1:])
    return offsets, m[order], pods


def _core_map(
    c: Choice, i: np.ndarray, hashed: np.ndarray, in_rank, fabric: Fabric, ports
) -> np.ndarray:
    """In-port j -> the pod's port j mod N (on the healthy port list); hashing when that port
    is down or there is no in-port (a flow that starts at the core)."""
    offsets, links, pods = ports
    lk, nd = fabric.links, fabric.nodes
    first, count = c.first[i], c.count[i]
    pod = nd.pod[lk.dst[c.cand[first]]].astype(np.int64)
    key = c.nodes[i].astype(np.int64) * pods + pod
    full = offsets[key + 1] - offsets[key]
    prev = c.prev[i]
    ok = (prev >= 0) & (full > 0)
    mapped = np.full(len(i), -1, np.int64)
    mapped[ok] = links[offsets[key[ok]] + in_rank[prev[ok]] % full[ok]]
    # where is the mapped link among the surviving candidates (sorted by id per flow)?
    flow = np.repeat(np.arange(len(i)), count)
    pos = (
        np.repeat(first, count)
        + np.arange(count.sum())
        - np.repeat(np.cumsum(count) - count, count)
    )
    hit = c.cand[pos] == mapped[flow]
    out = hashed.copy()
    out[flow[hit]] = pos[hit] - first[flow[hit]]
    return out


register_router(
    "ecmp",
    HashEcmpRouter,
    "switch hashing of RoCEv2 5-tuples (CRC, per-switch seeds, per-tier offsets), LACP bond",
)
