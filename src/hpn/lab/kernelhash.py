"""The lab's paths from its kernels' route tables and Linux's multipath hash.

The hash itself lives in the routing layer (:mod:`hpn.routing.linuxhash`, ``--ecmp-hash
linux``); here it walks the route tables the namespaces hold now (``ip -j route show table
all``, read once), hop by hop, instead of asking ``ip route get`` per flow and hop. The model
routes the same flows on its own fabric with ``hashing={"tor_hash": "linux", ...}``; both are
checked against ``ip route get`` (``tests/lab/test_kernelhash.py``).
"""

from __future__ import annotations

import ipaddress

import numpy as np

from hpn.routing.linuxhash import flow_hash, select


def _hash(src: str, dst: str, sport: int, dport: int, seed: int) -> int:
    a = np.array([int(ipaddress.IPv4Address(src))], np.uint32)
    b = np.array([int(ipaddress.IPv4Address(dst))], np.uint32)
    return int(flow_hash(a, b, sport, dport, 17, seed)[0])


class KernelTables:
    """Every namespace's routes as the kernel holds them now (``ip -j route show table
    all``, read once), to walk flows hop by hop with :func:`flow_hash` instead of asking
    ``ip route get`` per flow and hop."""

    def __init__(self, plan):
        import json

        from hpn.lab import netns

        self.plan = plan
        self.routes: list[list[tuple[int, int, str, list[str]]]] = []  # (net, len, table, devs)
        for ns in plan.namespaces:
            data = json.loads(netns.run(["ip", "-n", ns, "-j", "route", "show", "table", "all"]))
            rows = []
            for r in data:
                if r.get("type", "unicast") not in ("unicast", "blackhole"):
                    continue
                dst = r.get("dst", "")
                dst = "0.0.0.0/0" if dst == "default" else dst if "/" in dst else dst + "/32"
                try:
                    net = ipaddress.IPv4Network(dst)
                except ValueError:
                    continue
                devs = (
                    []
                    if r.get("type") == "blackhole"
                    else [h["dev"] for h in r.get("nexthops", [])] or [r.get("dev", "")]
                )
                table = str(r.get("table", "main"))
                rows.append((int(net.network_address), net.prefixlen, table, devs))
            self.routes.append(rows)

    def egress(self, ns: int, src: str, dst: str, sport: int, dport: int = 4791) -> str | None:
        """The interface the namespace's kernel sends this flow by (None: no route)."""
        plan = self.plan
        table = "main"
        if plan.ns_role[ns] == "host":
            node = next((n for n in plan.nodes_in_ns[ns] if plan.ip(n) == src), None)
            if node is not None:
                table = str(plan.table_of(node))
        d = int(ipaddress.IPv4Address(dst))
        best = None
        for net, plen, tbl, devs in self.routes[ns]:
            if tbl != table:
                continue
            mask = ((1 << 32) - 1) ^ ((1 << (32 - plen)) - 1) if plen else 0
            if d & mask == net and (best is None or plen > best[0]):
                best = (plen, devs)
        if best is None or not best[1]:
            return None
        devs = best[1]
        if len(devs) == 1:
            return devs[0]
        seed = int(plan.kernel_seed[plan.nodes_in_ns[ns][0]])
        return devs[int(select(np.array([_hash(src, dst, sport, dport, seed)]), len(devs))[0])]


def predict_paths(plan, src, dst, sport, tables: KernelTables | None = None):
    """(Paths, reached) as :func:`hpn.lab.learn.learn_paths` gives them, computed from the
    kernels' route tables and the kernel's hash instead of asked flow by flow."""
    from hpn.routing.base import Paths

    tables = tables or KernelTables(plan)
    f = plan.fabric
    out, ok = [], np.zeros(len(src), bool)
    for i in range(len(src)):
        at, path = int(src[i]), []
        s, d = plan.ip(int(src[i])), plan.ip(int(dst[i]))
        for _ in range(8):
            ns = int(plan.ns_of_node[at])
            dev = tables.egress(ns, s, d, int(sport[i]))
            link = plan.link_of_if.get((ns, dev)) if dev else None
            if link is None:
                break
            path.append(link)
            at = int(f.links.dst[link])
            if at == int(dst[i]):
                ok[i] = True
                break
        out.append(path)
    return Paths.from_lists(out), ok


def model_router(plan):
    """The model's router for this lab: ``ecmp`` with ``--ecmp-hash linux`` on every tier
    (hosts too), the lab's seed and seed policy: its paths are the model's own."""
    from hpn.routing import router_for

    hashing = {f"{t}_hash": "linux" for t in ("tor", "agg", "core")}
    return router_for(
        plan.fabric, "ecmp", seed=plan.spec.seed, hashing={**hashing, "seeds": plan.spec.ecmp_seeds}
    )


def model_paths(plan, src, dst, sport):
    """(Paths, reached): the model's own routing of these flows (:func:`model_router`)."""
    paths = model_router(plan).route_sports(plan.fabric, src, dst, sport)
    f = plan.fabric
    ends = paths.offsets[1:] - 1
    ok = (paths.lengths > 0) & (f.links.dst[paths.links[np.maximum(ends, 0)]] == np.asarray(dst))
    return paths, ok
