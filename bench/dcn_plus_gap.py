"""Why the flow model's DCN+ AllReduce (448 GPUs, 4 GiB) is above the paper's: variants, one
modelling choice at a time, each with the links that bound it.

For each variant: busbw (GB/s) of AllReduce and of Multi-AllReduce (Fig 17c, the same rail
rings with no NVLink part), and which tier the saturated links that bound the sub-rings are on
(NIC port toward the ToR = ``nic_up``, ToR toward the NIC = ``nic_down``, ToR-Agg, NVLink).
Paper (Fig 17a/17c, hpn-facts.md §11): DCN+ AllReduce 127 / 130 at 1 / 4 GiB, Multi-AllReduce
21.5; HPN 183 / 207 and 48.5 / 49.

- ``contiguous``: the default placement (56 hosts in fabric order: 3.5 segments of 16);
- ``K swaps``: K random transpositions of that order (a host list that mostly follows the
  segments); ``shuffled``: a random order. NCCL chains hosts in rank order, the launcher's host
  list, which need not follow the segments: the more ring edges cross segments, the more QPs
  meet on the Agg->ToR links;
- ``conns 1``: one QP per GPU pair (NCCL's default NCCL_IB_QPS_PER_CONNECTION=1).

``--distribution N``: per level (fabric order with N routing seeds; 4, 8, 16 swaps and random
with N orders), the median and range of busbw, since each run is decided by its slowest
sub-ring. Takes about a second a run once the routing kernels are compiled.

    PYTHONPATH=src .venv/bin/python bench/dcn_plus_gap.py [--presets dcn-plus,hpn] [--seeds 1,2]
        [--swaps 2,4,8,16] [--distribution 10] [--size 1073741824]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from hpn.engine import simulate
from hpn.routing import router_for
from hpn.topology import build
from hpn.topology.fabric import LinkTier, NodeKind
from hpn.workload.collectives import Params
from hpn.workload.collectives.algorithms import add_collective, comm_size
from hpn.workload.collectives.context import Ctx
from hpn.workload.collectives.ops import bandwidths
from hpn.workload.collectives.placement import place

PAPER = {  # Fig 17a / 17c at 1 GiB and 4 GiB (hpn-facts.md §11 rows 5 and 7)
    ("dcn-plus", "allreduce"): {2**30: 127.0, 2**32: 130.0},
    ("dcn-plus", "multi-allreduce"): {2**30: 21.5, 2**32: 21.5},
    ("hpn", "allreduce"): {2**30: 183.0, 2**32: 207.0},
    ("hpn", "multi-allreduce"): {2**30: 48.5, 2**32: 49.0},
}


def paper(preset: str, op: str, size: float) -> float | None:
    return PAPER.get((preset, op), {}).get(int(size))


def bound_tiers(f, res) -> dict[str, int]:
    """Saturated links (peak load = capacity) that carry network flows, by tier/direction."""
    lk = f.links
    sat = res.link_peak_util >= 1 - 1e-6
    used = res.link_bytes > 0
    kind = f.nodes.kind
    names = {
        "nic_up": (lk.tier == LinkTier.NIC_TOR) & (kind[lk.src] == NodeKind.GPU),
        "nic_down": (lk.tier == LinkTier.NIC_TOR) & (kind[lk.dst] == NodeKind.GPU),
        "tor_agg": lk.tier == LinkTier.TOR_AGG,
        "nvlink": lk.tier == LinkTier.NVLINK,
    }
    return {k: int((m & sat & used).sum()) for k, m in names.items()}


def host_order(n: int, seed: int | None, swaps: int | None) -> np.ndarray:
    """Fabric order; with ``seed``: a random order (``swaps=None``) or ``swaps`` random
    transpositions of the fabric order (a host list that mostly follows the segments)."""
    order = np.arange(n)
    if seed is None:
        return order
    rng = np.random.default_rng(seed)
    if swaps is None:
        return rng.permutation(n)
    for _ in range(swaps):
        i, j = rng.choice(n, 2, replace=False)
        order[[i, j]] = order[[j, i]]
    return order


def run(
    preset: str,
    op: str,
    order: int | None,
    conns: int,
    size: float,
    gpus: int,
    swaps: int | None = None,
    route_seed: int = 1,
) -> dict:
    f = build(preset)
    grid = place(f, gpus).gpus
    grid = grid[host_order(len(grid), order, swaps)]
    ctx = Ctx(f)
    s, e = add_collective(ctx, op, grid, size, "ring", Params(conns=conns))
    t0 = time.perf_counter()
    res = simulate(f, ctx.dag, router_for(f, None, seed=route_seed), seed=route_seed)
    t = float(res.task_finish[e] - res.task_start[s])
    busbw = bandwidths(op, size, t, comm_size(op, grid))[1] / 1e9
    seg = f.nodes.segment[grid[:, 0]]
    cross = int((seg != np.roll(seg, -1)).sum())
    return {
        "busbw": busbw,
        "bound": bound_tiers(f, res),
        "cross": cross,
        "hosts": len(grid),
        "wall": time.perf_counter() - t0,
    }


def distribution(a) -> None:
    """Per host-order level (contiguous with N routing seeds; K swaps and shuffled with N
    order seeds), the median and range of busbw: the slowest sub-ring decides each run."""
    levels = [
        ("contiguous", None, None),
        *[(f"{k} swaps", 0, k) for k in (4, 8, 16)],
        ("shuffled", 0, None),
    ]
    for preset in a.presets.split(","):
        for label, base, swaps in levels:
            out = {}
            for op in a.ops.split(","):
                vals, cross = [], []
                for i in range(1, a.distribution + 1):
                    order = None if base is None else base + i
                    r = run(
                        preset,
                        op,
                        order,
                        2,
                        a.size,
                        a.gpus,
                        swaps,
                        route_seed=i if base is None else 1,
                    )
                    vals.append(r["busbw"])
                    cross.append(r["cross"])
                out[op] = (np.median(vals), min(vals), max(vals), np.median(cross))
            print(
                f"{preset:9} {label:11} host edges across segments (median) "
                f"{out[next(iter(out))][3]:.0f}/56  "
                + "  ".join(
                    f"{op} busbw median {m:.1f} [{lo:.1f}, {hi:.1f}] (paper "
                    f"{paper(preset, op, a.size)})"
                    for op, (m, lo, hi, _) in out.items()
                ),
                flush=True,
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", default="dcn-plus,hpn")
    ap.add_argument("--ops", default="allreduce,multi-allreduce")
    ap.add_argument("--seeds", default="1,2", help="seeds of the shuffled host orders")
    ap.add_argument("--size", type=float, default=4 * 2**30)
    ap.add_argument("--gpus", type=int, default=448)
    ap.add_argument("--swaps", default="", help="also: K random swaps of the fabric order")
    ap.add_argument(
        "--distribution",
        type=int,
        default=0,
        help="instead: N seeds per host-order level, median and range",
    )
    a = ap.parse_args()
    if a.distribution:
        distribution(a)
        return
    seeds = [int(x) for x in a.seeds.split(",") if x]
    for preset in a.presets.split(","):
        for op in a.ops.split(","):
            variants = [("contiguous", None, 2), ("contiguous, conns 1", None, 1)]
            variants += [(f"shuffled {s}", s, 2) for s in seeds]
            variants += [(f"shuffled {s}, conns 1", s, 1) for s in seeds]
            variants = [(*v, None) for v in variants]
            for k in [int(x) for x in a.swaps.split(",") if x]:
                variants += [(f"{k} swaps {s}, conns {c}", s, c, k) for c in (2, 1) for s in seeds]
            for label, order, conns, swaps in variants:
                r = run(preset, op, order, conns, a.size, a.gpus, swaps)
                ref = paper(preset, op, a.size)
                vs = r["busbw"] / ref if ref else float("nan")
                print(
                    f"{preset:9} {op:16} {label:22} busbw {r['busbw']:6.1f} GB/s (paper "
                    f"{ref}, model/paper {vs:.2f})  host edges across "
                    f"segments {r['cross']}/{r['hosts']}  saturated links {r['bound']}  "
                    f"({r['wall']:.0f} s)",
                    flush=True,
                )


if __name__ == "__main__":
    main()
