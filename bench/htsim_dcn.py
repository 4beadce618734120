"""Packet-level cross-check of the 448-GPU AllReduce (Fig 17a, 4 GiB) on DCN+ and HPN with htsim.

The flow model routes the ring AllReduce (``hpn collective --gpus 448 --sizes 4G``); this script
takes the network edges it routed (one flow per QP: 896 on both fabrics), with the model's own
paths link by link, and replays them in csg-htsim (RoCE data packets, PFC on every switch
ingress port, FIFO egress ports, one priority, no congestion control) through
``bench/htsim/hpn_paths.cpp``. Each QP is paced at its share of its NIC port (the NIC's
scheduler) and at the NVLink share the model gives its sub-ring (``--pace model``: at the
model's max-min rate instead, as an ideal congestion control would hold it). Two modes:

- ``free``: every QP always has data: per-flow rates against the model's max-min rates of the
  same flows (uncoupled);
- ``ring``: each QP is one edge of its pipelined sub-ring, as NCCL's Simple protocol runs it:
  it sends only data its upstream edge has delivered (plus one step per rank of the host) and
  only into free receive buffers (NCCL's 4 MiB per connection per rank), in 512 KiB RDMA
  writes (split over the QPs): the sub-ring's rate (its slowest edge) against the model's.

Rates are measured over ``[warm, end]`` (and each half of it, to show drift) and scaled by the
header overhead (64 B per MTU), so 1.0 means the packet network carries what the fluid model
says. ``--order-seed``/``--swaps`` put the hosts in another rank order (see
``dcn_plus_gap.py``); ``--pfc-high``/``--pfc-low`` set XOFF/XON per ingress port.

    PYTHONPATH=src .venv/bin/python bench/htsim_dcn.py --htsim-src DIR [--presets dcn-plus,hpn]
        [--modes free,ring] [--end-us 9000 --warm-us 3000] [--order-seed 1 --swaps 16]
        [--pace model] [--pfc-high 100000 --pfc-low 80000] [--algo auto --modes free]

``--algo auto`` replays NCCL 2.18.3's own choice instead of the ring (Tree at 256 MiB and
below, NVLSTree above; 7,040 QPs at 4 GiB), free mode only, and reports each coupled group's
(tree channel's) slowest QP against the fluid rate, beside when the model's network and
NVLink flows end (see docs/guide/routing.md, "DCN+ against HPN with NCCL's trees").

``DIR`` is a csg-htsim checkout (github.com/Broadcom/csg-htsim); its ``sim/`` is copied into
``build/htsim`` (git-ignored) and built once (a few minutes), then the driver. One DCN+ run of
6 ms simulated takes 2-6 minutes of one core. Never run by the tests or CI.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from hpn.engine import simulate
from hpn.engine.maxmin import incidence, maxmin_rates
from hpn.routing import router_for
from hpn.topology import build
from hpn.topology.fabric import LinkTier, NodeKind
from hpn.workload.collectives import Params
from hpn.workload.collectives.algorithms import add_collective
from hpn.workload.collectives.context import Ctx, nvlink_data_fabric
from hpn.workload.collectives.ops import bandwidths
from hpn.workload.collectives.placement import place

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dcn_plus_gap import host_order  # noqa: E402  (a sibling bench script)

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build" / "htsim"
DRIVER = Path(__file__).resolve().parent / "htsim" / "hpn_paths.cpp"
PAPER_4G = {"dcn-plus": 130.0, "hpn": 207.0}  # Fig 17a, busbw GB/s (hpn-facts.md §11 row 5)
STEP_WRITE = 512 * 2**10  # NCCL Simple: buffSize 4 MiB / NCCL_STEPS 8 per RDMA write
BUFFER = 4 * 2**20  # NCCL_BUFFSIZE per connection


def build_driver(src: Path) -> Path:
    """libhtsim.a from a csg-htsim checkout (copied into build/htsim), then the driver."""
    lib = BUILD / "sim" / "libhtsim.a"
    if not lib.exists():
        if BUILD.exists():
            shutil.rmtree(BUILD)
        shutil.copytree(src / "sim", BUILD / "sim")
        subprocess.run(
            ["make", "-j2", "libhtsim.a"], cwd=BUILD / "sim", check=True, stdout=subprocess.DEVNULL
        )
    exe = BUILD / "hpn_paths"
    if not exe.exists() or exe.stat().st_mtime < DRIVER.stat().st_mtime:
        subprocess.run(
            [
                "g++",
                "-O3",
                "-std=c++11",
                "-I",
                str(BUILD / "sim"),
                "-o",
                str(exe),
                str(DRIVER),
                str(lib),
            ],
            check=True,
        )
    return exe


def routed(
    preset: str,
    size: float,
    gpus: int,
    seed: int,
    conns: int,
    order=None,
    swaps=None,
    algo: str = "ring",
    nccl: str = "2.18.3",
):
    """The model's run of the AllReduce (hosts in fabric order, or ``host_order``'s):
    ``algo="ring"`` the ring of the study below; ``"auto"`` NCCL ``nccl``'s own choice (Tree,
    NVLSTree at 448 GPUs) with NVLink at NCCL's data rate, as ``hpn collective`` runs it."""
    f = build(preset)
    grid = place(f, gpus).gpus
    grid = grid[host_order(len(grid), order, swaps)]
    ctx = Ctx(f)
    if algo == "ring":
        marks = add_collective(ctx, "allreduce", grid, size, "ring", Params(conns=conns))
        res = simulate(f, ctx.dag, router_for(f, None, seed=seed), seed=seed)
    else:
        p = Params(conns=conns, nccl=nccl)
        marks = add_collective(ctx, "allreduce", grid, size, None if algo == "auto" else algo, p)
        res = simulate(nvlink_data_fabric(f, p), ctx.dag, router_for(f, None, seed=seed), seed=seed)
    return f, ctx.dag.tasks, res, marks


def edges_of(f, tasks, res):
    """Network flows (QPs) in ring order per sub-ring, their paths and the caps the model
    puts on them: NIC-port share and the NVLink share of their sub-ring."""
    P, lk = res.paths, f.links
    n = len(P)
    hop_flow = P.flow_of_hop
    tier = lk.tier[P.links]
    net = np.zeros(n, bool)
    net[hop_flow[tier == LinkTier.NIC_TOR]] = True
    load = np.bincount(P.links, minlength=len(lk.src))  # flows per link (all of them)
    share = lk.capacity[P.links] / load[P.links]
    nv_share = np.full(n, np.inf)
    m = tier == LinkTier.NVLINK
    np.minimum.at(nv_share, hop_flow[m], share[m])
    group = tasks.group
    nv_group = np.full(group.max() + 1, np.inf)
    np.minimum.at(nv_group, group, nv_share)
    ids = np.flatnonzero(net)
    first = P.links[P.offsets[ids]]
    port_share = lk.capacity[first] / np.bincount(first, minlength=len(lk.src))[first]
    cap = np.minimum(port_share, nv_group[group[ids]])
    return ids, cap


def write_input(path: Path, f, res, ids, cap, tasks, mode: str, steps: dict, sim: dict) -> None:
    P, lk = res.paths, f.links
    used = np.unique(np.concatenate([P[i] for i in ids]))
    local = {int(link): j for j, link in enumerate(used)}
    host = f.nodes.kind[lk.src[used]] == NodeKind.GPU
    grp = tasks.group[ids]
    up = np.full(len(ids), -1)
    down = np.full(len(ids), -1)
    if mode == "ring":
        for g in np.unique(grp):
            k = np.flatnonzero(grp == g)  # flows of a sub-ring are in ring order
            up[k] = np.roll(k, 1)
            down[k] = np.roll(k, -1)
    lines = [
        f"params {sim['mtu']} {sim['end_us']} {sim['warm_us']} {sim['pfc_high']} "
        f"{sim['pfc_low']} {steps['gate']}",
        f"links {len(used)}",
    ]
    lines += [
        f"{lk.capacity[link]:.0f} {int(round(lk.latency[link] * 1e12))} {int(h)}"
        for link, h in zip(used, host, strict=True)
    ]
    lines.append(f"flows {len(ids)}")
    for j, i in enumerate(ids):
        hops = [local[int(link)] for link in P[i]]
        lines.append(
            f"{cap[j]:.0f} {grp[j] if mode == 'ring' else -1} {up[j]} {down[j]} "
            f"{steps['allow']} {steps['credit']} {len(hops)} " + " ".join(map(str, hops))
        )
    path.write_text("\n".join(lines) + "\n")


def fluid_free(f, res, ids, cap) -> np.ndarray:
    """Max-min rates of the same flows, uncoupled, each capped at its pacing rate."""
    P, lk = res.paths, f.links
    rows = np.concatenate([np.full(P.lengths[i], j) for j, i in enumerate(ids)])
    cols = np.concatenate([P[i] for i in ids])
    nl = len(lk.src)
    rows = np.concatenate([rows, np.arange(len(ids))])
    cols = np.concatenate([cols, nl + np.arange(len(ids))])
    a = incidence(rows, cols, len(ids), nl + len(ids))
    return maxmin_rates(a, np.concatenate([lk.capacity, cap]))


def run_one(exe: Path, preset: str, mode: str, args) -> dict:
    t0 = time.perf_counter()
    f, tasks, res, marks = routed(
        preset,
        args.size,
        args.gpus,
        args.seed,
        args.conns,
        args.order_seed,
        args.swaps,
        args.algo,
        args.nccl,
    )
    if args.algo != "ring" and mode == "ring":
        raise SystemExit("error: --modes: ring mode replays ring order; use free with --algo")
    ids, cap = edges_of(f, tasks, res)
    if args.pace == "model":  # as if congestion control held every QP at its max-min share
        cap = np.minimum(cap, res.mean_rate[ids])
    per_qp = args.size / (args.gpus * 8 * args.conns)  # bytes per ring step per QP
    steps = {
        "allow": int(8 * per_qp),  # one step per rank of the host between network edges
        "credit": int(8 * BUFFER / args.conns),  # a receive buffer per rank of the host
        "gate": int(STEP_WRITE / args.conns),
    }
    sim = {
        "mtu": args.mtu,
        "end_us": args.end_us,
        "warm_us": args.warm_us,
        "pfc_high": args.pfc_high,
        "pfc_low": args.pfc_low,
    }
    work = BUILD / "runs"
    work.mkdir(parents=True, exist_ok=True)
    tag = "" if args.order_seed is None else f"-order{args.order_seed}-{args.swaps}"
    tag += "" if args.algo == "ring" else f"-{args.algo}"
    tag += "-paced" if args.pace == "model" else ""
    inp = work / f"{preset}-{mode}{tag}.in"
    write_input(inp, f, res, ids, cap, tasks, mode, steps, sim)
    t1 = time.perf_counter()
    out = subprocess.run([str(exe), str(inp)], check=True, capture_output=True, text=True)
    t2 = time.perf_counter()
    got = np.array(
        [[float(x) for x in ln.split()] for ln in out.stdout.splitlines() if ln and ln[0].isdigit()]
    )
    window = (args.end_us - args.warm_us) * 1e-6
    wire = (args.mtu + 64) / args.mtu
    pkt_rate = 8 * got[:, 1] / window * wire  # bit/s on the wire, as the fluid model counts
    model = res.mean_rate[ids] if mode == "ring" else fluid_free(f, res, ids, cap)
    ratio = pkt_rate / model
    grp = tasks.group[ids]
    # in the long run a pipelined sub-ring streams at its slowest edge (its faster edges only
    # fill the buffers in front of it); each half of the window on its own shows drift
    half = window / 2
    first = 8 * got[:, 4] / half * wire
    second = 8 * (got[:, 1] - got[:, 4]) / half * wire
    gs = np.unique(grp)
    ring_rate = np.array([pkt_rate[grp == g].min() for g in gs])
    ring_halves = [np.array([h[grp == g].min() for g in gs]) for h in (first, second)]
    np.savez(
        work / f"{preset}-{mode}{tag}.npz",
        ids=ids,
        cap=cap,
        model=model,
        htsim=pkt_rate,
        first=first,
        second=second,
        paused_us=got[:, 3],
        group=grp,
    )
    agg = np.array([(f.links.tier[res.paths[i]] == LinkTier.TOR_AGG).any() for i in ids])
    paused = got[:, 3]
    slow = ratio < 0.95
    row = {
        "preset": preset,
        "mode": mode,
        "flows": len(ids),
        "model_gbps": np.unique(np.round(model / 1e9, 1)).tolist(),
        "htsim_p50": float(np.median(pkt_rate) / 1e9),
        "htsim_min": float(pkt_rate.min() / 1e9),
        "ratio_p50": float(np.median(ratio)),
        "ratio_min": float(ratio.min()),
        "below_95pct": int((ratio < 0.95).sum()),
        "subring_min_gbps": float(ring_rate.min() / 1e9),
        "subring_p50_gbps": float(np.median(ring_rate) / 1e9),
        "subring_min_halves_gbps": [float(h.min() / 1e9) for h in ring_halves],
        "slow_cross_agg": int((slow & agg).sum()),
        "cross_agg": int(agg.sum()),
        "paused_qps": int((paused > 0).sum()),
        "paused_us_max": float(paused.max()),
        "export_s": t1 - t0,
        "htsim_s": t2 - t1,
    }
    if args.algo != "ring":  # coupled groups (a tree channel's QPs) run at their slowest QP
        t0 = res.task_start[marks[0]]
        net = np.zeros(len(res.size), bool)
        net[ids] = True
        row["group_min_gbps"] = float(ring_rate.min() / 1e9)
        fluid = np.array([model[grp == g].min() for g in gs])
        row["group_ratio_min"] = float((ring_rate / fluid).min())
        row["group_ratio_p50"] = float(np.median(ring_rate / fluid))
        row["network_end_ms"] = float((res.finish[net].max() - t0) * 1e3)
        row["other_end_ms"] = float((res.finish[~net].max() - t0) * 1e3)
        row["total_ms"] = float((res.task_finish[marks[1]] - t0) * 1e3)
        # were every tree channel to move its bytes at its slowest QP's htsim rate throughout
        t_net = max(float((8 * res.size[ids][grp == g] / pkt_rate[grp == g]).max()) for g in gs)
        tail = row["total_ms"] - max(row["network_end_ms"], row["other_end_ms"])
        row["network_htsim_ms"] = t_net * 1e3
        t_all = (max(row["network_htsim_ms"], row["other_end_ms"]) + tail) * 1e-3
        row["busbw_htsim_rate"] = bandwidths("allreduce", args.size, t_all, args.gpus)[1] / 1e9
        row["busbw_model"] = (
            bandwidths("allreduce", args.size, row["total_ms"] * 1e-3, args.gpus)[1] / 1e9
        )
    if mode == "ring":  # busbw if every sub-ring ran at its htsim rate for the whole 4 GiB
        n = args.gpus
        t_model = float(res.makespan)
        slowest = ring_rate.min()
        edge_bytes = 2 * (n - 1) / n * args.size / (8 * args.conns)
        row["busbw_model"] = 2 * (n - 1) / n * args.size / t_model / 1e9
        row["busbw_htsim_rate"] = (
            2
            * (n - 1)
            / n
            * args.size
            / (8 * edge_bytes / slowest + t_model - 8 * edge_bytes / model.min())
            / 1e9
        )
        row["paper"] = PAPER_4G.get(preset)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--htsim-src", type=Path, required=True, help="csg-htsim checkout")
    ap.add_argument("--presets", default="dcn-plus,hpn")
    ap.add_argument("--modes", default="free,ring")
    ap.add_argument("--gpus", type=int, default=448)
    ap.add_argument("--size", type=float, default=4 * 2**30)
    ap.add_argument("--conns", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1, help="routing seed")
    ap.add_argument(
        "--algo", default="ring", help="ring (the study), auto (NCCL's choice) or NCCL_ALGO"
    )
    ap.add_argument("--nccl", default="2.18.3", help="NCCL release of --algo auto's tuner")
    ap.add_argument("--order-seed", type=int, default=None, help="hosts in a random order")
    ap.add_argument("--swaps", type=int, default=None, help="... or K random swaps")
    ap.add_argument(
        "--pace",
        choices=["share", "model"],
        default="share",
        help="QP rate: its NIC-port/NVLink share (no congestion control), or the model's rate",
    )
    ap.add_argument("--mtu", type=int, default=4096)
    ap.add_argument("--end-us", type=int, default=3000)
    ap.add_argument("--warm-us", type=int, default=1000)
    ap.add_argument("--pfc-high", type=int, default=100_000, help="XOFF bytes per ingress")
    ap.add_argument("--pfc-low", type=int, default=80_000, help="XON bytes per ingress")
    args = ap.parse_args()
    exe = build_driver(args.htsim_src)
    for preset in args.presets.split(","):
        for mode in args.modes.split(","):
            r = run_one(exe, preset, mode, args)
            print(
                f"{preset:9} {mode:5} {r['flows']} QPs  model {r['model_gbps']} Gb/s  "
                f"htsim p50 {r['htsim_p50']:.1f} min {r['htsim_min']:.1f}  "
                f"htsim/model p50 {r['ratio_p50']:.3f} min {r['ratio_min']:.3f} "
                f"(<0.95: {r['below_95pct']})  sub-ring min {r['subring_min_gbps']:.1f} "
                f"p50 {r['subring_p50_gbps']:.1f}  ({r['htsim_s']:.0f} s htsim)\n{'':9} "
                f"slow QPs crossing an Agg: {r['slow_cross_agg']} of {r['cross_agg']}; QPs "
                f"whose NIC port PFC paused: {r['paused_qps']} (max {r['paused_us_max']:.0f} us "
                f"of {args.end_us - args.warm_us}); slowest sub-ring per half of the window "
                f"{r['subring_min_halves_gbps'][0]:.1f}, {r['subring_min_halves_gbps'][1]:.1f}",
                flush=True,
            )
            if "group_min_gbps" in r:
                print(
                    f"{'':9} {args.algo}: slowest coupled group (tree channel) htsim/fluid "
                    f"{r['group_ratio_min']:.3f} (median {r['group_ratio_p50']:.3f}); the "
                    f"model's network flows end at {r['network_end_ms']:.2f} ms, the others "
                    f"(NVLink) at {r['other_end_ms']:.2f}, the collective at "
                    f"{r['total_ms']:.2f}; at htsim's rates the network part would take "
                    f"{r['network_htsim_ms']:.1f} ms: busbw {r['busbw_htsim_rate']:.1f} "
                    f"(model {r['busbw_model']:.1f}"
                    + (f", paper {PAPER_4G.get(preset)})" if args.gpus == 448 else ")"),
                    flush=True,
                )
            if mode == "ring":
                print(
                    f"{'':9} busbw 4 GiB: model {r['busbw_model']:.1f}, at htsim's slowest "
                    f"sub-ring {r['busbw_htsim_rate']:.1f}, paper {r['paper']}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
