"""Pool simulator speed: one hour of a 100-model trace at 0.1 req/s per model (target
<= 10 s), and the goodput and capacity searches (target <= 60 s each).

    .venv/bin/python bench/bench_pool.py [--quick]
"""

from __future__ import annotations

import sys
import time

from hpn.pool.mixes import production
from hpn.pool.search import capacity, goodput
from hpn.pool.simulate import simulate
from hpn.pool.traces import market


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def main() -> None:
    quick = "--quick" in sys.argv
    duration = 600.0 if quick else 3600.0
    trace, t_gen = timed(lambda: market(100, 0.1, duration, seed=0))
    print(f"trace: {len(trace)} requests over {duration:.0f} s, generated in {t_gen:.2f} s")
    pools = {
        "aegaeon": {"prefill_gpus": 12, "decode_gpus": 20},
        "serverless": {"gpus": 32},
        "serverless-artifact": {"gpus": 32},
        "muxserve": {"gpus": 32},
        "dedicated": {"gpus": 32},
    }
    for policy, pool in pools.items():
        res, dt = timed(lambda p=policy, k=pool: simulate(trace, p, "h800", **k))
        print(
            f"simulate {policy:19s} 100 models x 0.1 req/s, {duration / 3600:.2g} h, 32 H800: "
            f"{dt:6.2f} s (target 10 s: {dt / 10:.2f}x)  attainment {res.slo_attainment:.3f}"
        )
    out, dt = timed(
        lambda: goodput("aegaeon", 0.1, 300, gpu="h800", prefill_gpus=6, decode_gpus=10)
    )
    print(
        f"goodput  aegaeon 6P+10D H800, 300 s traces: {dt:6.2f} s (target 60 s: {dt / 60:.2f}x)"
        f"  max_models {out['max_models']}"
    )
    out, dt = timed(lambda: capacity(production(), "aegaeon", 1800))
    print(
        f"capacity aegaeon production mix, 1800 s:    {dt:6.2f} s (target 60 s: {dt / 60:.2f}x)"
        f"  gpus {out['gpus']}"
    )


if __name__ == "__main__":
    main()
