"""Who routes around a down link, and when: host, network (BGP withdrawal) or sender re-selection.

A fault takes directed links down; the flows crossing one keep going only once someone moves
them (what the lab measures with real packets, ``docs/guide/lab.md``):

- ``sender``: the link leaves a NIC: the host sees its own carrier loss and its bond moves
  the flows to its other port at once (P §4.2, "the bond moves traffic to the live port");
  likewise a switch whose link goes down and that has another equal-cost one: a ToR or Agg
  uplink, a core's link to one Agg of a pod (it has the pod's other Aggs of its plane), every
  link of a dead core or Agg (the switches below and beside it hash around it at once);
- ``withdraw``: a switch link, or a ToR's link to a NIC whose other ToR the flows' entry
  switches still reach: the ToR withdraws the NIC's /32 (P §4.2: every ARP entry a ToR learns
  becomes a /32 host route) and longest-prefix match steers traffic to the surviving ToR after
  BGP converges (lab: a 0.14 s gap);
- ``reselect``: no entry switch of the flows reaches a live ToR of the destination NIC any
  more. With dual-plane a plane-p Agg reaches the NIC's ToR pair only through its plane-p ToR
  (P §6.1: "a flow sent on port 0 is delivered on port 0 of the destination NIC"): after that
  ToR withdraws the /32, plane p still follows the pair's /24 to it, and it drops the packets.
  The flows are cut off until the *sender* moves them to the other plane: HPN's hosts do so
  after their next probe and a path search (P §6.1, App B: on failure the host recomputes its
  paths; the paper gives no period: ``probe`` and ``search`` are the lab's figures); plain
  ECMP never does (RDMA retransmits on the same queue pair, hence the same UDP source port and
  path), so they wait for the repair, unless ``ecmp_reselect`` says the stack re-hashes.

Reach is computed as BGP would: a NIC's /32 is announced by the ToRs whose link to it is up and
propagates valley-free (up, then down: Aggs of a group share an ASN, RFC 7938, so no route goes
ToR -> Agg -> ToR -> Agg); a switch that holds it delivers, one that only holds the /24 drops.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from hpn.errors import InputError
from hpn.topology.fabric import Fabric, LinkTier, NodeKind

_RANK = {int(NodeKind.TOR): 1, int(NodeKind.AGG): 2, int(NodeKind.CORE): 3}


@dataclass(frozen=True)
class Failover:
    """Delays (s) of each party that moves flows off a down link.

    ``withdraw``: BGP withdrawal to re-routed traffic (lab: 0.14 s longest gap, 2 x 2 lab,
    ``timers bgp 1 3``); ``probe`` + ``search``: HPN's re-selection (lab: 0.1 s probe period,
    0.2-0.4 s to re-learn 32 candidate ports per pair); ``ecmp_reselect``: when a stack
    without path selection moves a cut-off flow (inf: never before repair).
    """

    withdraw: float = 0.14
    probe: float = 0.1
    search: float = 0.2
    ecmp_reselect: float = math.inf

    def __post_init__(self) -> None:
        for k in ("withdraw", "probe", "search", "ecmp_reselect"):
            v = getattr(self, k)
            if not v >= 0 or (math.isinf(v) and k != "ecmp_reselect") or math.isnan(v):
                raise InputError(k, f"must be a finite number of seconds >= 0, got {v!r}")

    def reselect(self, routing: str) -> float:
        """Seconds until a sender moves a cut-off flow under ``routing``."""
        return self.probe + self.search if routing == "hpn" else self.ecmp_reselect


def _rank(fabric: Fabric) -> np.ndarray:
    kind = fabric.nodes.kind
    return np.array([_RANK.get(int(k), 0) for k in kind], np.int64)


def _spread(frontier: np.ndarray, src: np.ndarray, dst: np.ndarray, n: int) -> np.ndarray:
    """Nodes that reach ``frontier`` over the directed edges ``src -> dst`` (transitively)."""
    seen = np.zeros(n, bool)
    seen[frontier] = True
    while True:
        new = seen[dst] & ~seen[src]
        if not new.any():
            return seen
        seen[src[new]] = True


class Reachability:
    """Which switches deliver to a NIC (hold its /32) under a set of down links."""

    def __init__(self, fabric: Fabric):
        self.fabric = fabric
        lk = fabric.links
        rank = _rank(fabric)
        self.rank = rank
        sw = (rank[lk.src] > 0) & (rank[lk.dst] > 0)
        self.sw_links = np.flatnonzero(sw)
        self.up = rank[lk.dst[self.sw_links]] > rank[lk.src[self.sw_links]]

    def _valley_free(self, targets: np.ndarray, down: np.ndarray) -> np.ndarray:
        """Bool per node: reaches one of ``targets`` going up, then down, over live links."""
        lk = self.fabric.links
        live = ~down[self.sw_links]
        ids, up = self.sw_links[live], self.up[live]
        n = self.fabric.num_nodes
        below = _spread(targets, lk.src[ids[~up]], lk.dst[ids[~up]], n)  # down-only
        return _spread(np.flatnonzero(below), lk.src[ids[up]], lk.dst[ids[up]], n)

    def delivering(self, nic: int, down: np.ndarray) -> np.ndarray:
        """Bool per node: a switch whose traffic for GPU ``nic`` arrives (holds its /32)."""
        lk = self.fabric.links
        into = np.flatnonzero((lk.dst == nic) & (lk.tier == LinkTier.NIC_TOR) & ~down)
        return self._valley_free(lk.src[into], down)

    def entries(self, link: int) -> np.ndarray:
        """ToRs whose traffic may cross ``link`` (a downward link) when nothing is down."""
        lk = self.fabric.links
        none = np.zeros(self.fabric.num_links, bool)
        reach = self._valley_free(np.array([lk.src[link]]), none)
        return np.flatnonzero(reach & (self.rank == 1))


def who_moves(fabric: Fabric, links: np.ndarray, reach: Reachability | None = None) -> np.ndarray:
    """Per directed link of ``links`` (the links one fault takes down, both directions): 0
    sender, 1 withdraw (the network), 2 reselect (only the sender can, on the other plane)."""
    lk, kind = fabric.links, fabric.nodes.kind
    reach = reach or Reachability(fabric)
    down = np.zeros(fabric.num_links, bool)
    down[links] = True
    node_links = np.bincount(np.concatenate([lk.src, lk.dst]), minlength=fabric.num_nodes)
    node_down = np.bincount(
        np.concatenate([lk.src[links], lk.dst[links]]), minlength=fabric.num_nodes
    )
    dead = (node_down >= node_links) & (reach.rank > 0)  # a switch with every link down
    out = np.zeros(len(links), np.int64)
    cache: dict[int, np.ndarray] = {}
    for i, ln in enumerate(np.asarray(links, np.int64)):
        u, v = int(lk.src[ln]), int(lk.dst[ln])
        if kind[u] == NodeKind.GPU or dead[u]:
            continue  # the host moves its own flows; nothing enters a dead switch
        if reach.rank[v] > reach.rank[u]:  # an uplink: u hashes over its other uplinks
            others = (lk.src == u) & ~down & (reach.rank[lk.dst] > reach.rank[u])
            out[i] = 0 if others.any() else 1
            continue
        if kind[u] == NodeKind.CORE and kind[v] == NodeKind.AGG:  # a core -> Agg link
            pod = fabric.nodes.pod
            alt = (lk.src == u) & ~down & (kind[lk.dst] == NodeKind.AGG) & (pod[lk.dst] == pod[v])
            if alt.any():  # the core's carrier loss: it hashes over its other Aggs of the pod
                continue
        nics = [v] if kind[v] == NodeKind.GPU else _nics_below(fabric, v, reach)
        entry = reach.entries(int(ln))
        entry = entry[~dead[entry]]  # nothing enters a dead switch
        out[i] = 1
        for x in nics:
            if x not in cache:
                cache[x] = reach.delivering(x, down)
            if not cache[x][entry].all():
                out[i] = 2
                break
    return out


def _nics_below(fabric: Fabric, node: int, reach: Reachability) -> list[int]:
    """GPUs whose NIC links land on the ToRs below (or at) ``node``."""
    lk = fabric.links
    tors = {node} if reach.rank[node] == 1 else set()
    frontier = {node}
    while frontier and not tors:
        nxt = set()
        for u in frontier:
            for d in lk.dst[(lk.src == u) & (reach.rank[lk.dst] == reach.rank[u] - 1)]:
                nxt.add(int(d))
        tors |= {t for t in nxt if reach.rank[t] == 1}
        frontier = nxt
    m = (lk.tier == LinkTier.NIC_TOR) & np.isin(lk.src, list(tors))
    return sorted({int(x) for x in lk.dst[m] if fabric.nodes.kind[x] == NodeKind.GPU})


def hold_times(
    fabric: Fabric, links: np.ndarray, routing: str, failover: Failover
) -> tuple[np.ndarray, np.ndarray]:
    """(seconds each link's flows wait before moving, who moves them: 0 sender, 1 network,
    2 sender re-selection)."""
    who = who_moves(fabric, links)
    delay = np.array([0.0, failover.withdraw, failover.reselect(routing)])
    return delay[who], who


def cut_off_flows(paths_links: list[np.ndarray], links: np.ndarray, who: np.ndarray) -> np.ndarray:
    """Indices of the flows (each given as its path's link ids) that a fault blackholes until
    their sender re-selects: their path crosses a link of ``links`` with ``who == 2``."""
    blocked = {int(ln) for ln, w in zip(links, who, strict=True) if w == 2}
    return np.array(
        [i for i, p in enumerate(paths_links) if blocked.intersection(map(int, p))], np.int64
    )
