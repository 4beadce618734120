"""Event-loop speed: `Sim.run` of a permutation with the compiled loop of quiet departure
batches (`hpn.engine.steps.run_quiet`) against the loop taking every batch in Python, in the
same process, alternating.

The case is `hpn traffic --preset hpn --pods 8 --pattern permutation --size 2MB` (default
HPN routing, 122,880 flows, 10,010 rate computations, 362 samples). The flows are routed once
and the paths shared by every run (routing is not what is measured). Printed: each variant's
median `Sim.run` wall and CPU time over the repeats, and their ratio; both give the same
results (`tests/engine/test_fused.py`).

    .venv/bin/python bench/bench_loop.py              # 8 pods, 3 repeats
    .venv/bin/python bench/bench_loop.py --pods 2 --repeat 5
"""

from __future__ import annotations

import argparse
import statistics
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pods", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    import hpn.engine.sim as sim
    from hpn.app.traffic import TrafficConfig
    from hpn.routing.config import command_router
    from hpn.store.engine_tables import sample_interval
    from hpn.topology import build
    from hpn.workload import make_pattern

    cfg = TrafficConfig.model_validate(
        {
            "fabric": {"preset": "hpn", "pods": args.pods},
            "traffic": {"pattern": "permutation", "size": "2MB"},
        }
    )  # what the CLI builds
    fabric = build(cfg.fabric)
    t = cfg.traffic
    router = command_router(fabric, t.routing, t.seed, cfg.routing)
    dag = make_pattern("permutation", fabric, 2e6, seed=t.seed)
    interval = sample_interval(fabric, dag)
    dag.validate(fabric.num_nodes, cycles=False)
    paths = sim.route_flows(fabric, router, dag.tasks)
    route, sim.route_flows = sim.route_flows, lambda *a: paths  # no capacity events: not mutated
    times: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    stats = {}
    try:
        for _ in range(args.repeat):
            for fused in (True, False):
                sim.Sim.fused = fused
                s = sim.Sim(fabric, dag, router, None, interval, None, None)
                w, c = time.perf_counter(), time.process_time()
                s.run()
                times[fused].append((time.perf_counter() - w, time.process_time() - c))
                stats[fused] = s.result(0.0).stats["rate_computations"]
    finally:
        sim.Sim.fused, sim.route_flows = True, route
    assert stats[True] == stats[False]
    med = {f: [statistics.median(x[i] for x in times[f]) for i in (0, 1)] for f in times}
    print(
        f"hpn {args.pods} pods permutation, {dag.num_flows} flows, {stats[True]} rate computations"
    )
    for f, label in ((True, "compiled loop"), (False, "Python loop")):
        print(f"  {label:14} Sim.run wall {med[f][0]:.3f} s  cpu {med[f][1]:.3f} s")
    print(f"  ratio (Python / compiled): wall {med[False][0] / med[True][0]:.2f}x"
          f"  cpu {med[False][1] / med[True][1]:.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
