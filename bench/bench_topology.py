"""Fabric build speed: the 15,360-GPU pod and the 8-pod (122,880-GPU) cluster.

Targets (issue 2): pod <= 1 s, 8 pods <= 5 s on a 2-core machine. The reference in the same
run is a plain networkx construction of the same pod (one add_edge per link), the obvious
alternative to arrays.

    .venv/bin/python bench/bench_topology.py
"""

from __future__ import annotations

import resource
import time
import tracemalloc

from hpn.topology import build


def timed(fn, repeat: int = 3):
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def peak_mb(fn) -> float:
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def networkx_pod(fabric):
    import networkx as nx

    g = nx.MultiDiGraph()
    src, dst = fabric.links.src.tolist(), fabric.links.dst.tolist()
    cap = fabric.links.capacity.tolist()
    for i, (a, b) in enumerate(zip(src, dst, strict=True)):
        g.add_edge(a, b, link=i, capacity=cap[i])
    return g


def main() -> None:
    t_pod, pod = timed(lambda: build("hpn"))
    t_8, big = timed(lambda: build("hpn", pods=8), repeat=2)
    t_nx, _ = timed(lambda: networkx_pod(pod), repeat=1)
    print(
        f"hpn pod      : {pod.num_nodes:>7,} nodes {pod.num_links:>9,} links  "
        f"{t_pod * 1e3:7.1f} ms  peak {peak_mb(lambda: build('hpn')):6.1f} MB  (target 1 s)"
    )
    print(
        f"hpn 8 pods   : {big.num_nodes:>7,} nodes {big.num_links:>9,} links  "
        f"{t_8 * 1e3:7.1f} ms  peak {peak_mb(lambda: build('hpn', pods=8)):6.1f} MB  "
        "(target 5 s)"
    )
    print(
        f"reference: networkx MultiDiGraph of the same pod {t_nx * 1e3:.0f} ms "
        f"-> arrays are {t_nx / t_pod:.0f}x faster"
    )
    print(f"process max RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
