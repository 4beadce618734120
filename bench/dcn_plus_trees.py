"""Why DCN+ is slower than HPN in Fig 17a with NCCL's own choice (Tree, NVLSTree): per-link
demand against capacity, and the hash settings that could make the network bind.

For each hash variant (``VARIANTS``): AllReduce busbw at Fig 17a's sizes on 448 GPUs (NCCL
2.18.3's tuner, the command's defaults otherwise) beside the paper's; with ``--links``, per
tier and direction at 256 MiB (Tree LL128) and 4 GiB (NVLSTree Simple): links used, flows on
the busiest link, peak and mean load / capacity, saturated links, the busiest ToR's total
uplink load, and how the flows toward each receiving NIC split over its two ToR ports.

    PYTHONPATH=src .venv/bin/python bench/dcn_plus_trees.py [--presets dcn-plus,hpn]
        [--variants default,polarized] [--links] [--conns 2]

About a second a run once the routing kernels are compiled (the first run compiles them).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from hpn.engine import simulate
from hpn.routing import router_for
from hpn.topology import build
from hpn.topology.fabric import Fabric, LinkTier, NodeKind
from hpn.workload.collectives import Params
from hpn.workload.collectives.context import nvlink_data_fabric
from hpn.workload.collectives.ops import bandwidths
from hpn.workload.collectives.run import collective_dag, sweep

SIZES = [2**20, 2**22, 2**24, 2**26, 2**28, 2**30, 2**32]
PAPER = {  # Fig 17a busbw, GB/s (hpn-facts.md §11 row 5)
    "dcn-plus": [8, 20, 47, 103, 125, 127, 130],
    "hpn": [10, 27, 54, 105, 145, 183, 207],
}
ZERO = {f"{t}{o}": 0 for t in ("tor", "agg", "core") for o in ("_offset", "_lag_offset")}
VARIANTS: dict[str, dict[str, Any] | None] = {
    # the model's default: a seed per switch, Agg offset 10, LAG offsets 8/2/8
    "default": None,
    # Fig 13's mechanism alone: one CRC and seed at every tier (the Agg's choice of the
    # destination's ToR follows the source ToR's uplink), LAG members from other bits
    "tiers-alike": {"seeds": "same", **ZERO, "tor_lag_offset": 8, "agg_lag_offset": 2},
    # within each switch only: the LAG member from the same bits as the neighbour
    "lag-alike": {"tor_lag_offset": 0, "agg_lag_offset": 10, "core_lag_offset": 0},
    # both: every switch and every LAG takes the same bits of one CRC (HashConfig.polarized)
    "polarized": {"seeds": "same"},
    # polarized, but parallel links are one flat ECMP group (routed links, no LAG)
    "polarized-flat": {"seeds": "same", "lag": False},
    # polarized switches, RoCE LAG at the host (QPs round robin over the NIC's two ports)
    "polarized-rr": {"seeds": "same", "bond_hash": "rr"},
}


def tier_masks(f: Fabric) -> dict[str, np.ndarray]:
    """Directed links by tier and direction (``nic_up``: NIC port -> ToR, ...)."""
    lk, kind = f.links, f.nodes.kind
    return {
        "nic_up": (lk.tier == LinkTier.NIC_TOR) & (kind[lk.src] == NodeKind.GPU),
        "nic_down": (lk.tier == LinkTier.NIC_TOR) & (kind[lk.dst] == NodeKind.GPU),
        "tor_up": (lk.tier == LinkTier.TOR_AGG) & (kind[lk.src] == NodeKind.TOR),
        "agg_down": (lk.tier == LinkTier.TOR_AGG) & (kind[lk.dst] == NodeKind.TOR),
        "nvlink": lk.tier == LinkTier.NVLINK,
    }


def link_report(preset: str, size: float, hashing: dict | None, conns: int) -> None:
    """Per-tier demand vs capacity of one AllReduce (NCCL 2.18.3's choice at ``size``)."""
    f = build(preset)
    p = Params(nccl="2.18.3", conns=conns)
    ctx, marks, _ = collective_dag(f, "allreduce", size, 448, params=p)
    ch = ctx.choices[0]
    res = simulate(nvlink_data_fabric(f, p), ctx.dag, router_for(f, None, seed=1, hashing=hashing))
    s, e = marks[0]
    bw = bandwidths("allreduce", size, res.task_finish[e] - res.task_start[s], 448)[1] / 1e9
    lk, paths = f.links, res.paths
    net = lk.tier[paths.links] != LinkTier.NVLINK
    on_net = np.zeros(len(res.size), bool)
    on_net[paths.flow_of_hop[net]] = True  # flows through a NIC port (the rest: NVLink only)
    t0 = res.task_start[s]
    print(
        f"  {size / 2**20:.0f} MiB {ch.algo} {ch.proto} {ch.channels} ch: busbw {bw:.1f}; "
        f"network flows end {(res.finish[on_net].max() - t0) * 1e3:.2f} ms, NVLink-only flows "
        f"{(res.finish[~on_net].max() - t0) * 1e3:.2f} ms, collective "
        f"{(res.task_finish[e] - t0) * 1e3:.2f} ms"
    )
    flows = np.bincount(paths.links[net], minlength=len(lk.src))
    used_all = res.link_bytes > 0
    mean = res.link_mean_util
    for name, m in tier_masks(f).items():
        used = m & used_all
        if not used.any():
            print(f"    {name:9} unused")
            continue
        extra = ""
        if name == "tor_up":  # the busiest ToR's whole uplink load (1:1: 64 x 400G)
            tor = lk.src[used]
            load = np.bincount(tor, weights=8 * res.link_bytes[used])
            cap = np.bincount(lk.src[m], weights=lk.capacity[m], minlength=len(load))
            top = load.argmax()
            extra = f"  busiest ToR's uplinks {load[top] / (cap[top] * res.makespan):.3f}"
        print(
            f"    {name:9} {used.sum():4d} links  flows/link max {flows[used].max():3d}  "
            f"peak {res.link_peak_util[used].max():.3f}  "
            f"saturated {(res.link_peak_util[used] >= 1 - 1e-6).sum():3d}  mean util max "
            f"{mean[used].max():.3f} avg {mean[used].mean():.3f}{extra}"
        )
    down = tier_masks(f)["nic_down"]
    per = np.zeros((f.num_nodes, 2))
    np.add.at(per, (lk.dst[down], lk.port[down]), flows[down])
    per = np.sort(per[per.sum(1) > 0], 1)[:, ::-1]
    worst = per[np.argmax(per[:, 0] / per.sum(1))]
    share = per[:, 0] / per.sum(1)
    print(
        f"    flows toward a NIC on its busier ToR port: median share {np.median(share):.2f}, "
        f"worst {worst[0]:.0f} of {worst.sum():.0f}"
    )


def curves(preset: str, names: list[str], conns: int) -> None:
    f = build(preset)
    ref = PAPER[preset]
    print(f"{preset}: busbw GB/s at " + " ".join(f"{s / 2**20:>6.0f}M" for s in SIZES))
    print(f"  {'paper':15}" + "".join(f"{b:8.1f}" for b in ref))
    for n in names:
        t = time.process_time()
        p = Params(nccl="2.18.3", conns=conns)
        r = sweep(f, "allreduce", SIZES, 448, params=p, hashing=VARIANTS[n], seed=1)
        bw = [x["busbw_GBps"] for x in r.results]
        near = sum(abs(b / q - 1) <= 0.2 for b, q in zip(bw, ref, strict=True))
        algos = ",".join(dict.fromkeys(x["algo"] for x in r.results))
        print(
            f"  {n:15}"
            + "".join(f"{b:8.1f}" for b in bw)
            + f"   within 20 %: {near}/7 ({algos}; {time.process_time() - t:.0f} s CPU)",
            flush=True,
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", default="dcn-plus,hpn")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--conns", type=int, default=2, help="QPs per GPU pair (NCCL 2.18.3: 1)")
    ap.add_argument("--links", action="store_true", help="also the per-link report")
    a = ap.parse_args()
    names = a.variants.split(",")
    for n in names:
        if n not in VARIANTS:
            ap.error(f"--variants: unknown {n!r}; choose from {', '.join(VARIANTS)}")
    for preset in a.presets.split(","):
        curves(preset, names, a.conns)
        if a.links:
            for n in names:
                print(f" {preset} {n}: per-link demand vs capacity")
                for size in (2**28, 2**32):
                    link_report(preset, size, VARIANTS[n], a.conns)


if __name__ == "__main__":
    main()
