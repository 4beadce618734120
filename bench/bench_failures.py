"""Failures speed: Monte Carlo trials per second (3K-GPU job, 12 months, per design) against
a plain-Python loop over the same events measured in this run, and one ``hpn fail`` run
(LLaMa-7B on 256 GPUs, a NIC-ToR link down 90 s; target <= 10 s).

    .venv/bin/python bench/bench_failures.py [--quick]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from hpn.failures import Recovery, run_fail
from hpn.failures.montecarlo import MONTH_S, Rates, exposure, reliability
from hpn.failures.workload import iteration_from_config
from hpn.routing import make_router
from hpn.topology import build
from hpn.workload.collectives import place

ROOT = Path(__file__).resolve().parents[1]


def python_reference(links: int, trials: int, months: float, seed: int) -> float:
    """Single-ToR crashes per month, one event at a time in Python (the reference loop)."""
    rng = np.random.default_rng(seed)
    rate, rec, r = Rates(), Recovery(), 0
    span = months * MONTH_S
    for _ in range(trials):
        for _ in range(rng.poisson(rate.link_per_month * links * months)):
            start = rng.uniform(0, span)
            rep = rate.link_repair * np.exp(rate.repair_sigma * rng.standard_normal())
            r += rep > rec.timeout and start + rec.timeout < span
    return r / trials / months


def main() -> None:
    quick = "--quick" in sys.argv
    trials = 2000 if quick else 20_000
    for design, kw in (("single-tor", {"dual_tor": False}), ("dual-tor", {}), ("stacked", {})):
        f = build("hpn", **kw)
        ex = exposure(f, place(f, 3072).ranks)
        t = time.perf_counter()
        r = reliability(ex, design, 12.0, trials, seed=0)
        dt = time.perf_counter() - t
        print(
            f"reliability {design:10s} 3072 GPUs x 12 months: {trials / dt:10,.0f} trials/s "
            f"({dt:.2f} s)  crashes/month {r['crashes_per_month']['mean']:.3g}"
        )
        if design == "single-tor":
            n = max(trials // 20, 100)
            t = time.perf_counter()
            python_reference(ex.links, n, 12.0, 0)
            ref = n / (time.perf_counter() - t)
            print(
                f"  plain-Python event loop (links only): {ref:10,.0f} trials/s "
                f"-> vectorized {trials / dt / ref:.1f}x"
            )
    f = build("hpn", segments=1)
    router = make_router("hpn", seed=0)
    t = time.perf_counter()
    it = iteration_from_config(f, ROOT / "examples/failures/llama-7b-256.toml", router)
    res, _ = run_fail(
        f, it, ["link:host=12,nic=3,port=0,at=30s,repair=90s"], router=router, routing="hpn"
    )
    dt = time.perf_counter() - t
    print(
        f"hpn fail LLaMa-7B 256 GPUs, link down 90 s: {dt:.2f} s (target 10 s: {dt / 10:.2f}x), "
        f"{res['iterations']} iterations from {res['simulations']} simulations, "
        f"loss {res['throughput_loss']:.2%}"
    )


if __name__ == "__main__":
    main()
