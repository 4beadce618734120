"""Flow engine speed: permutations at scale, with scaling figures.

Targets (issue 3), on a 2-core machine, wall time of pattern + routing + simulation (the
fabric build and imports excluded) and the process's peak RSS:

- 8,192-host permutation, 2 MB per flow, k=32 fat tree at 100G, ECMP: <= 1.6 s, <= 300 MB;
- 15,360-GPU HPN pod, permutation over all GPU NICs, ECMP: <= 5 s.

The targets are checked with the issue's ECMP: shortest paths with a seeded per-flow choice,
registered as ``random``; the hash-faithful ``ecmp`` (CRC of 5-tuples, same seed everywhere)
is shown too: it polarizes on a fat tree, so it has many more distinct finish times.

Each case runs in a fresh interpreter so its peak RSS is its own. The reference measured in
the same run is a plain-Python progressive-filling (one loop iteration per flow and link) on
the first rate allocation of the 1K-flow case: the ratio shows what vectorizing buys.

    .venv/bin/python bench/bench_engine.py           # all cases
    .venv/bin/python bench/bench_engine.py --quick   # skip the 120K-flow points
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time

CASES = {
    "ft-k16": ("fat-tree", {"k": 16, "speed": 100e9}),
    "ft-k32": ("fat-tree", {"k": 32, "speed": 100e9}),
    "ft-k40": ("fat-tree", {"k": 40, "speed": 100e9}),
    "ft-k78": ("fat-tree", {"k": 78, "speed": 100e9}),
    "hpn-1pod": ("hpn", {}),
    "hpn-8pod": ("hpn", {"pods": 8}),
}


def run_case(name: str, routing: str) -> dict:
    from hpn.engine import simulate
    from hpn.routing import make_router
    from hpn.topology import build
    from hpn.workload import make_pattern

    preset, kw = CASES[name]
    fabric = build(preset, **kw)
    t0 = time.perf_counter()
    dag = make_pattern("permutation", fabric, 2e6, seed=1)
    t1 = time.perf_counter()
    res = simulate(fabric, dag, make_router(routing, seed=1))
    t2 = time.perf_counter()
    import numpy as np

    return {
        "case": name,
        "routing": routing,
        "flows": dag.num_flows,
        "links": fabric.num_links,
        "wall_s": t2 - t0,
        "pattern_s": t1 - t0,
        "simulate_s": t2 - t1,
        "rate_computations": res.stats["rate_computations"],
        "batches": res.stats["batches"],
        "fct_p50_us": float(np.median(res.fct)) * 1e6,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def naive_maxmin(paths: list[list[int]], cap: dict[int, float]) -> list[float]:
    """Progressive filling with Python loops: the obvious reference."""
    rate = [0.0] * len(paths)
    frozen = [False] * len(paths)
    rem = dict(cap)
    while not all(frozen):
        count: dict[int, int] = {}
        for i, p in enumerate(paths):
            if not frozen[i]:
                for lk in p:
                    count[lk] = count.get(lk, 0) + 1
        level = min(rem[lk] / c for lk, c in count.items())
        tight = {lk for lk, c in count.items() if rem[lk] / c <= level * (1 + 1e-9)}
        for i, p in enumerate(paths):
            if not frozen[i] and any(lk in tight for lk in p):
                frozen[i], rate[i] = True, level
                for lk in p:
                    rem[lk] -= level
    return rate


def reference_ratio() -> dict:
    import numpy as np

    from hpn.engine.maxmin import incidence, maxmin_rates
    from hpn.routing import make_router
    from hpn.topology import build
    from hpn.workload import make_pattern

    f = build("fat-tree", k=16, speed=100e9)
    t = make_pattern("permutation", f, 2e6, seed=1).tasks
    p = make_router("random", seed=1).route(f, t.src, t.dst)
    cap = f.links.capacity / 8
    t0 = time.perf_counter()
    for _ in range(5):
        a = incidence(p.flow_of_hop, p.links, len(p), f.num_links)
        fast = maxmin_rates(a, cap)
    t_fast = (time.perf_counter() - t0) / 5
    lists = [p[i].tolist() for i in range(len(p))]
    t0 = time.perf_counter()
    slow = naive_maxmin(lists, {int(lk): float(cap[lk]) for lk in np.unique(p.links)})
    t_slow = time.perf_counter() - t0
    assert np.allclose(fast, slow, rtol=1e-9)
    return {"flows": len(p), "vectorized_s": t_fast, "naive_s": t_slow, "ratio": t_slow / t_fast}


def main() -> None:
    if len(sys.argv) > 3 and sys.argv[1] == "--case":
        print(json.dumps(run_case(sys.argv[2], sys.argv[3])))
        return
    quick = "--quick" in sys.argv
    names = ["ft-k16", "ft-k32", "ft-k40", "hpn-1pod"] + ([] if quick else ["ft-k78", "hpn-8pod"])
    runs = [(n, "random") for n in names] + [("ft-k32", "ecmp"), ("hpn-1pod", "ecmp")]
    rows = []
    for name, routing in runs:
        out = subprocess.run(
            [sys.executable, __file__, "--case", name, routing],
            capture_output=True,
            text=True,
            check=True,
        )
        rows.append(json.loads(out.stdout))
    print(
        f"{'case':10} {'routing':8} {'flows':>8} {'links':>8} {'wall s':>7} {'sim s':>7}"
        f" {'batches':>7} {'rates':>6} "
        f"{'p50 FCT us':>10} {'RSS MB':>7} {'us/flow':>8}"
    )
    for r in rows:
        print(
            f"{r['case']:10} {r['routing']:8} {r['flows']:8,} {r['links']:8,} {r['wall_s']:7.2f} "
            f"{r['simulate_s']:7.2f} {r['batches']:7} {r['rate_computations']:6} "
            f"{r['fct_p50_us']:10.1f} "
            f"{r['peak_rss_mb']:7.0f} {1e6 * r['wall_s'] / r['flows']:8.1f}"
        )
    ft = [r for r in rows if r["case"].startswith("ft-") and r["routing"] == "random"]
    base = ft[0]
    print("\nscaling (fat tree, vs the 1K-flow case in this run):")
    for r in ft[1:]:
        grow = r["flows"] / base["flows"]
        print(
            f"  {r['flows']:>7,} flows: x{grow:5.1f} flows -> "
            f"x{r['wall_s'] / base['wall_s']:5.1f} time"
        )
    ref = reference_ratio()
    print(
        f"\nmax-min on the first allocation of {ref['flows']:,} flows: vectorized "
        f"{ref['vectorized_s'] * 1e3:.1f} ms vs plain Python {ref['naive_s'] * 1e3:.0f} ms "
        f"(x{ref['ratio']:.0f})"
    )
    k32 = next(r for r in rows if r["case"] == "ft-k32")  # seeded per-flow ECMP ("random")
    pod = next(r for r in rows if r["case"] == "hpn-1pod")
    print(
        f"\ntargets: k=32 fat tree {k32['wall_s']:.2f} s (<= 1.6), {k32['peak_rss_mb']:.0f} MB "
        f"(<= 300); HPN pod {pod['wall_s']:.2f} s (<= 5)"
    )


if __name__ == "__main__":
    main()
