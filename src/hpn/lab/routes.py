"""Routes of a lab: the hosts' source-based multipath defaults, and the switches' equal-cost
next hops toward every ToR-pair subnet (the static-route mode, and what BGP must converge to).

A switch's next hops toward subnet ``s`` are its neighbours one hop closer to the ToRs of
``s`` (hop distances by BFS on the switch graph), in link order: the same equal-cost sets the
model's shortest-path walk hands to its hash. A ToR reaches the NICs it serves through their
own link (a /32 per NIC, as HPN's ARP-learned host routes) and holds a blackhole for its own
subnet, so a NIC whose link is down is not looped through the fabric.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from hpn.lab.plan import ENDPOINT_KINDS, LabPlan
from hpn.topology.fabric import NodeKind


def switch_next_hops(plan: LabPlan) -> dict[tuple[int, int], list[int]]:
    """(switch node, subnet index) -> directed links toward it (empty: it is local)."""
    f = plan.fabric
    lk, kind = f.links, f.nodes.kind
    sw_links = [int(ln) for ln in plan.links if kind[lk.dst[ln]] not in ENDPOINT_KINDS]
    sw_links = [ln for ln in sw_links if kind[lk.src[ln]] not in ENDPOINT_KINDS]
    out_of: dict[int, list[int]] = {}
    for ln in sw_links:
        out_of.setdefault(int(lk.src[ln]), []).append(ln)
    hops: dict[tuple[int, int], list[int]] = {}
    for s, (_, tors) in enumerate(plan.subnets):
        dist = {t: 0 for t in tors}
        q = deque(tors)
        while q:  # links are symmetric: walk outward from the subnet's ToRs
            u = q.popleft()
            for ln in out_of.get(u, []):
                v = int(lk.dst[ln])
                if v not in dist:
                    dist[v] = dist[u] + 1
                    q.append(v)
        for u, d in dist.items():
            if d == 0:
                hops[(u, s)] = []
                continue
            hops[(u, s)] = sorted(
                ln for ln in out_of.get(u, []) if dist.get(int(lk.dst[ln]), -1) == d - 1
            )
    return hops


def _multipath(plan: LabPlan, links: list[int]) -> str:
    peer = [f"nexthop via {plan.link_ip(ln ^ 1)} dev {plan.ifname[ln]}" for ln in links]
    if len(peer) == 1:
        return peer[0].removeprefix("nexthop ")
    return " ".join(peer)


def host_commands(plan: LabPlan, ns: int) -> list[str]:
    """A host namespace: NIC addresses on lo, one rule and table per NIC (multipath default
    over its ports: the host's own L4 hash picks the port, as a bond would)."""
    cmds = []
    for node in plan.nodes_in_ns[ns]:
        if not plan.nic_ip[node]:
            continue
        table = plan.table_of(node)
        cmds.append(f"addr add {plan.ip(node)}/32 dev lo")
        cmds.append(f"rule add from {plan.ip(node)} lookup {table} pref {table}")
        ports = plan.nic_ports(node)
        if ports:
            cmds.append(
                f"route replace default table {table} src {plan.ip(node)} {_multipath(plan, ports)}"
            )
    return cmds


def host_routes_to_nic(plan: LabPlan, tor: int) -> list[tuple[int, int]]:
    """(NIC node, directed ToR -> NIC link) for every NIC a ToR serves."""
    f = plan.fabric
    out = []
    for ln in f.out_links(tor):
        ln = int(ln)
        if ln in plan.ifname and f.nodes.kind[f.links.dst[ln]] in ENDPOINT_KINDS:
            out.append((int(f.links.dst[ln]), ln))
    return out


def static_commands(plan: LabPlan, ns: int, hops: dict) -> list[str]:
    """A switch namespace's static routes (``replace``: re-applying them is harmless)."""
    (node,) = plan.nodes_in_ns[ns]
    cmds = []
    for s, (net, _) in enumerate(plan.subnets):
        links = hops.get((node, s))
        if links is None:
            continue
        if not links:
            cmds.append(f"route replace blackhole {plan.cidr(net)}")
        else:
            cmds.append(f"route replace {plan.cidr(net)} {_multipath(plan, links)}")
    if plan.fabric.nodes.kind[node] == NodeKind.TOR:
        for nic, ln in host_routes_to_nic(plan, node):
            cmds.append(
                f"route replace {plan.ip(nic)}/32 via {plan.link_ip(ln ^ 1)} dev {plan.ifname[ln]}"
            )
    return cmds


def expected_kernel_routes(plan: LabPlan, hops: dict) -> dict[int, dict[str, set[str]]]:
    """Per switch namespace: prefix -> set of egress interfaces a converged lab has
    (``{"blackhole"}`` for a ToR's own subnet)."""
    out: dict[int, dict[str, set[str]]] = {}
    for ns, role in enumerate(plan.ns_role):
        if role == "host":
            continue
        (node,) = plan.nodes_in_ns[ns]
        routes: dict[str, set[str]] = {}
        for s, (net, _) in enumerate(plan.subnets):
            links = hops.get((node, s))
            if links is not None:
                routes[plan.cidr(net)] = {plan.ifname[ln] for ln in links} or {"blackhole"}
        out[ns] = routes
    return out


def nic_link_of(plan: LabPlan) -> np.ndarray:
    """Per directed link: 1 where it is a NIC port link (either direction)."""
    f = plan.fabric
    kind = f.nodes.kind
    m = np.isin(kind[f.links.src], ENDPOINT_KINDS) | np.isin(kind[f.links.dst], ENDPOINT_KINDS)
    return m
