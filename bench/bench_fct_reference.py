"""Packet-level reference: FCT of fat-tree permutations against htsim's on the same flows.

A permutation of 2 MB flows at 100G on k=16 (1,024 hosts) and k=32 (8,192 hosts) fat trees,
routed with the default (hash ECMP, per-switch seeds, Agg offset 10), with `--ecmp-seeds same`
(one CRC, one seed, no offset: polarized) and with `random` (independent choices, the
reference run in the same process). htsim (csg-htsim, RoCE with PFC, per-switch salted hash)
on the k=32 pairs gives a median FCT of 501 us (3.13x the ideal 160 us) and p99 913-926 us
(issue 11's figures). The fluid model has no queues: a flow's FCT is its bytes over its
max-min share, so its distribution is stepped (k flows on a link: k x ideal) where htsim's is
smooth, and its tail is the worst collision where htsim adds queueing and PFC pauses.

    .venv/bin/python bench/bench_fct_reference.py [k ...]
"""

from __future__ import annotations

import sys
import time

import numpy as np

from hpn.engine import simulate
from hpn.routing import router_for
from hpn.routing.ecmp import HashConfig
from hpn.topology import build
from hpn.workload import make_pattern

HTSIM_K32 = {"p50_us": 501.0, "p50_over_ideal": 3.13, "p99_us": (913.0, 926.0)}


def run(k: int, label: str, routing: str | None, hashing=None, seed: int = 1) -> dict:
    f = build("fat-tree", k=k, speed=100e9)
    dag = make_pattern("permutation", f, 2e6, seed=seed)
    t0 = time.perf_counter()
    res = simulate(f, dag, router_for(f, routing, seed=seed, hashing=hashing), seed=seed)
    wall = time.perf_counter() - t0
    ideal = 8 * res.size / res.paths.per_flow_min(f.links.capacity) + res.path_latency
    fct = res.fct * 1e6
    slow = res.fct / ideal
    row = {
        "k": k,
        "routing": label,
        "flows": len(fct),
        "ideal_us": float(np.median(ideal) * 1e6),
        "min": float(fct.min()),
        "p50": float(np.median(fct)),
        "p99": float(np.percentile(fct, 99)),
        "max": float(fct.max()),
        "p50_over_ideal": float(np.median(slow)),
        "p99_over_ideal": float(np.percentile(slow, 99)),
        "wall_s": wall,
    }
    print(
        f"k={k:<3} {label:<22} {row['flows']:>6} flows  FCT us min {row['min']:6.0f}  "
        f"p50 {row['p50']:6.0f}  p99 {row['p99']:6.0f}  max {row['max']:6.0f}  "
        f"p50/ideal {row['p50_over_ideal']:5.2f}  p99/ideal {row['p99_over_ideal']:5.2f}  "
        f"({wall:.1f} s)",
        flush=True,
    )
    return row


def main(ks: list[int]) -> None:
    for k in ks:
        default = run(k, "default (ecmp)", None)
        run(k, "ecmp --ecmp-seeds same", "ecmp", HashConfig.polarized())
        ref = run(k, "random (reference)", "random")
        print(
            f"k={k}: default median / random median = {default['p50'] / ref['p50']:.3f}",
            flush=True,
        )
        if k == 32:
            h = HTSIM_K32
            ratio = default["p50_over_ideal"] / h["p50_over_ideal"]
            print(
                f"k=32 vs htsim: median/ideal {default['p50_over_ideal']:.2f} against "
                f"{h['p50_over_ideal']} (ratio {ratio:.3f}"
                f", must be within 0.90-1.10); p50 {default['p50']:.0f} us against "
                f"{h['p50_us']:.0f} us; p99 {default['p99']:.0f} us against "
                f"{h['p99_us'][0]:.0f}-{h['p99_us'][1]:.0f} us"
            )


if __name__ == "__main__":
    main([int(x) for x in sys.argv[1:]] or [16, 32])
