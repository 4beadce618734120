"""NCCL's curves on the model vs the paper (issue 24): busbw by size as NCCL's tuner runs them.

Prints, on defaults (``--algo auto --proto auto``, H800), for HPN and DCN+ at 448 GPUs:
Fig 17a AllReduce, Fig 17b AllGather, Fig 17c Multi-AllReduce, Fig 19 dual-plane vs
single-plane (4 GiB AllReduce over 2 segments) and the 1 MiB AllReduce latency scaling
448 -> 3,584 GPUs; each row the model's busbw, the paper's (docs: hpn-facts.md), the ratio,
and what ran (algorithm/protocol/channels). ``--nccl`` picks the tuner's release: 2.18.3
(default here: the paper's, hpn-facts.md) or 2.30.7 (``hpn collective``'s default).
``--no-nvls`` adds the run with NCCL_ALGO=^nvls,nvlstree; ``--phb`` Fig 17a with the NICs
behind the CPU's host bridge, where NCCL's default turns LL128 off (``--nic-path``: the
path of every run). Tree rows add the pipeline fill of NCCL's chunking and the time NCCL's
tree correction factor charges, NVLSTree rows their fill (``pipeline.py``; checks, not part
of the time), and where the fill is not already charged (``fill_us``: Tree beyond its
correction, NVLSTree) the busbw and ratio with it added. Fig 19 runs the fabric's routing
and ECMP. Nothing here is fitted to the paper.

    .venv/bin/python bench/bench_nccl_curves.py [--nccl 2.18.3|2.30.7] [--no-nvls] [--phb]
        [--nic-path pxb] [--quick]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np

from hpn.engine import simulate
from hpn.routing import router_for
from hpn.topology import build
from hpn.workload.collectives import Ctx, Params, add_collective, bandwidths, place, sweep
from hpn.workload.collectives import tuning as tu
from hpn.workload.collectives.context import nvlink_data_fabric
from hpn.workload.collectives.pipeline import fill_us, nvlstree_pipeline, tree_pipeline

M = 2**20
FIG17A = {  # size: (DCN+, HPN) GB/s (paper Fig 17a)
    M: (8, 10), 4 * M: (20, 27), 16 * M: (47, 54), 64 * M: (103, 105),
    256 * M: (125, 145), 1024 * M: (127, 183), 4096 * M: (130, 207),
}  # fmt: skip
FIG17B = {256 * M: (70, 90), 1024 * M: (138, 145), 4096 * M: (142, 148)}
FIG17C = {64 * M: (20, 36), 256 * M: (18.5, 48), 1024 * M: (21.5, 48.5), 4096 * M: (21.5, 49)}
FIG19 = {4: (60, 90), 8: (55, 90), 16: (56, 90), 32: (55, 90)}  # hosts: (single, dual plane)


def _fmt(size: float) -> str:
    return f"{size / 2**30:g}G" if size >= 2**30 else f"{size / M:g}M"


def curve(title: str, op: str, table: dict, algo: str | None, params: Params) -> list[float]:
    print(f"\n## {title} ({op}, 448 GPUs, algo {algo or 'auto'})")
    head = f"{'size':>6} | {'fabric':8} {'model':>7} {'paper':>6} {'ratio':>6}"
    print(f"{head}  ran  [tree: fill/corr us; nvlstree: fill us]  +fill: busbw (ratio) with it")
    comm = tu.Comm(448, 56, tu.GPUS.get(params.gpu), 50.0, nccl=tu.VERSIONS.get(params.nccl))
    ratios = []
    for i, preset in ((1, "hpn"), (0, "dcn-plus")):
        out = sweep(build(preset), op, list(table), 448, algo=algo, seed=1, params=params)
        for r in out.results:
            paper = table[r["size_bytes"]][i]
            ratio = r["busbw_GBps"] / paper
            ratios.append(ratio)
            ran = f"{r['algo']}/{r['proto']}/{r['channels']}ch"
            size, nch = float(r["size_bytes"]), r["channels"]
            if r["algo"] == "tree" and op == "allreduce":
                pl = tree_pipeline(comm, tu.PROTOS.index(r["proto"]), size, nch)
                ran += f"  [{pl.fill_us:.1f}/{pl.correction_us:.1f}]"
            if r["algo"] == "nvlstree" and op == "allreduce":
                ran += f"  [{nvlstree_pipeline(comm, size, nch).fill_us:.1f}]"
            fill = fill_us(comm, op, r["algo"], r["proto"], size, nch)
            if fill:
                bus = r["busbw_GBps"] * r["time_s"] / (r["time_s"] + fill * 1e-6)
                ran += f"  +fill {fill:.1f} us: {bus:.1f} ({bus / paper:.2f})"
            print(
                f"{_fmt(r['size_bytes']):>6} | {preset:8} {r['busbw_GBps']:7.1f} {paper:6.1f} "
                f"{ratio:6.2f}  {ran}"
            )
    return ratios


def fig19(params: Params, routing: str | None) -> None:
    """busbw and algbw of each plane design; the ratios compare the paper's GB/s with algbw
    (see docs/guide/training.md, "Fig 19": the paper's axis is read as algbw)."""
    print(f"\n## Fig 19: 4 GiB AllReduce over 2 segments, single- vs dual-plane (HPN, {routing})")
    print(f"{'hosts':>5} | single busbw algbw paper | dual busbw algbw paper | ran, algbw/paper")
    for hosts, (p1, p2) in FIG19.items():
        got = []
        for dual in (False, True):
            f = build("hpn", segments=2, dual_plane=dual)
            per_seg = 128
            pl = place(f, hosts * 8, first_host=per_seg - hosts // 2)
            ctx = Ctx(f)
            s, e = add_collective(ctx, "allreduce", pl.gpus, 4 * 2**30, None, params)
            res = simulate(nvlink_data_fabric(f, params), ctx.dag, router_for(f, routing, seed=1))
            t = float(res.task_finish[e] - res.task_start[s])
            alg, bus = bandwidths("allreduce", 4 * 2**30, t, pl.size)
            got.append((bus / 1e9, alg / 1e9, ctx.choices[0]))
        (b1, a1, c1), (b2, a2, _) = got
        print(
            f"{hosts:>5} | {b1:12.1f} {a1:5.1f} {p1:5.1f} | {b2:10.1f} {a2:5.1f} {p2:5.1f} | "
            f"{c1.algo}/{c1.proto}/{c1.channels}ch, {a1 / p1:.2f} {a2 / p2:.2f}"
        )


def scaling(params: Params) -> None:
    print("\n## 1 MiB AllReduce time, 448 vs 3,584 GPUs (HPN)")
    f = build("hpn")
    times = []
    for gpus in (448, 3584):
        r = sweep(f, "allreduce", [M], gpus, seed=1, params=params).results[0]
        times.append(r["time_s"])
        ran = f"{r['algo']}/{r['proto']}/{r['channels']}ch"
        print(f"{gpus:>5} GPUs: {r['time_s'] * 1e6:8.1f} us  {ran}")
    print(f"ratio 3584/448 = {times[1] / times[0]:.2f} (target <= 2; a flat ring: 8)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-nvls", action="store_true", help="also NCCL_ALGO=^nvls,nvlstree")
    ap.add_argument("--quick", action="store_true", help="Fig 17a only")
    ap.add_argument("--nccl", default="2.18.3", help="NCCL release (default: the paper's)")
    ap.add_argument("--nic-path", default="pxb", help="GPU-NIC PCIe path (default pxb: LL128 on)")
    ap.add_argument(
        "--phb", action="store_true", help="also Fig 17a with the NIC behind the CPU (LL128 off)"
    )
    a = ap.parse_args()
    t0 = time.perf_counter()
    p = Params(nccl=a.nccl, nic_path=a.nic_path)
    print(f"# NCCL {a.nccl} tuner, H800, GPU-NIC path {a.nic_path}")
    variants: list[str | None] = [None] + (["^nvls,nvlstree"] if a.no_nvls else [])
    for algo in variants:
        r = np.array(curve("Fig 17a", "allreduce", FIG17A, algo, p))
        print(f"within 20 %: {int((abs(r - 1) <= 0.2).sum())}/{len(r)}")
    if a.phb:
        r = np.array(curve("Fig 17a, GPU-NIC path phb", "allreduce", FIG17A, None,
                           replace(p, nic_path="phb")))  # fmt: skip
        print(f"within 20 %: {int((abs(r - 1) <= 0.2).sum())}/{len(r)}")
    if not a.quick:
        curve("Fig 17b", "allgather", FIG17B, None, p)
        curve("Fig 17c", "multi-allreduce", FIG17C, None, p)
        for routing in (None, "ecmp"):
            fig19(p, routing)
        scaling(p)
    print(f"\nwall {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
