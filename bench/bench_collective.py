"""Collective sweep speed: AllReduce over 448 GPUs (56 hosts) at 7 sizes, HPN and DCN+.

Target (issue 5): a 448-GPU sweep over 7 sizes <= 10 s. The reference measured in the same
run is the step-by-step form of one ring AllReduce on 16 GPUs (one flow per ring step): the
ratio shows what modelling a ring as one coupled group buys per flow simulated.

    .venv/bin/python bench/bench_collective.py
"""

from __future__ import annotations

import time

from hpn.topology import build
from hpn.workload.collectives import Params, sweep

SIZES = [2**20 * x for x in (1, 4, 16, 64, 256, 1024, 4096)]


def main() -> None:
    rows = []
    for preset, routing in (("hpn", "hpn"), ("hpn", "ecmp"), ("dcn-plus", "ecmp")):
        f = build(preset)
        t0 = time.perf_counter()
        out = sweep(f, "allreduce", SIZES, 448, routing=routing, seed=1)
        wall = time.perf_counter() - t0
        flows = sum(r["flows"] for r in out.results)
        rows.append((preset, routing, wall, flows, out.results[-1]["busbw_GBps"]))
        print(
            f"448-GPU allreduce sweep, {preset:8s} {routing:5s}: {wall:6.2f} s "
            f"({flows:,} flows; busbw at 4 GiB {out.results[-1]['busbw_GBps']:.1f} GB/s)"
        )
    seg = build("hpn", segments=1)
    t0 = time.perf_counter()
    ref = sweep(
        seg, "allreduce", [2**26], 16, routing="ecmp", params=Params(stepwise=True, model="alpha")
    )
    ref_wall = time.perf_counter() - t0
    per_flow_ref = ref_wall / ref.results[0]["flows"]
    per_flow = rows[0][2] / rows[0][3]
    print(
        f"reference: 16-GPU step-by-step ring, {ref.results[0]['flows']:,} flows, {ref_wall:.2f} s"
    )
    print(
        f"seconds per simulated flow, coupled 448-GPU sweep / step-by-step: "
        f"{per_flow / per_flow_ref:.2f}"
    )
    worst = max(r[2] for r in rows)
    print(f"target <= 10 s per sweep: {'met' if worst <= 10 else 'MISSED'} (worst {worst:.2f} s)")


if __name__ == "__main__":
    main()
