"""Read the kernel's forwarding choices back: the path each (src, dst, source port) takes.

At the source host, ``ip route get DST from SRC ipproto udp sport S dport 4791`` gives the NIC
port its multipath hash picks; at every switch the same query with ``iif`` (the interface the
packet arrives on) gives that switch's seeded choice. The queries of one hop are batched per
namespace; a marker query after each one keeps answers aligned when a query fails (no route).
"""

from __future__ import annotations

import re

import numpy as np

from hpn.lab import netns
from hpn.lab.plan import LabPlan
from hpn.lab.udp import ROCE_PORT
from hpn.routing.base import Paths

_DEV = re.compile(r"\bdev (\S+)")
_MARK = "route get 127.0.0.1"
MAX_HOPS = 8


def _ask(ns: str, queries: list[str]) -> list[str | None]:
    """Egress interface per query (None where the kernel has no route)."""
    lines = []
    for q in queries:
        lines += [q, _MARK]
    out = netns.ip_batch(lines, ns, force=True)
    answers: list[str | None] = []
    chunk: list[str] = []
    for line in out.splitlines():
        if line.startswith("local 127.0.0.1"):
            text = " ".join(chunk)
            m = _DEV.search(text)
            answers.append(m.group(1) if (m and "blackhole" not in text) else None)
            chunk = []
        else:
            chunk.append(line)
    if len(answers) != len(queries):
        raise netns.LabError(f"route get in {ns}: {len(answers)} answers to {len(queries)}")
    return answers


def learn_paths(
    plan: LabPlan, src: np.ndarray, dst: np.ndarray, sport: np.ndarray
) -> tuple[Paths, np.ndarray]:
    """The directed links each flow crosses, as the kernels would forward it now, and a mask
    of the flows that reach their destination (the others' paths end where they stop)."""
    f = plan.fabric
    n = len(src)
    paths: list[list[int]] = [[] for _ in range(n)]
    at = np.asarray(src, np.int64).copy()
    iif: list[str | None] = [None] * n
    active = list(range(n))
    ok = np.zeros(n, bool)
    for _hop in range(MAX_HOPS):
        if not active:
            break
        by_ns: dict[int, list[int]] = {}
        for i in active:
            by_ns.setdefault(int(plan.ns_of_node[at[i]]), []).append(i)
        nxt = []
        for ns, idx in by_ns.items():
            qs = []
            for i in idx:
                q = f"route get {plan.ip(dst[i])} from {plan.ip(src[i])}"
                if iif[i]:
                    q += f" iif {iif[i]}"
                qs.append(q + f" ipproto udp sport {int(sport[i])} dport {ROCE_PORT}")
            for i, dev in zip(idx, _ask(plan.namespaces[ns], qs), strict=True):
                link = plan.link_of_if.get((ns, dev)) if dev else None
                if link is None:
                    continue  # no route, or delivered locally (same host)
                paths[i].append(link)
                at[i] = int(f.links.dst[link])
                if at[i] == dst[i]:
                    ok[i] = True
                    continue
                iif[i] = plan.ifname[link ^ 1]
                nxt.append(i)
        active = nxt
    return Paths.from_lists(paths), ok
