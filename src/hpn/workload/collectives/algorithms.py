"""The registry of collective algorithms, and :func:`add_collective` to put one in a DAG.

Every algorithm builds flows between a start barrier and returns its last tasks and the
number of latency steps. :func:`add_collective` then adds the end barrier, a compute task:

- NCCL model (default): NCCL's tuner (:mod:`.tuning`) picks algorithm, protocol and channels
  for the communicator and size; the flows carry ``bytes / eff`` (the protocol's and
  algorithm's bandwidth efficiency in NCCL's model), a floor task beside them lasts
  ``bytes / cap`` (NCCL's per-channel and LL caps; for Tree over the bus bytes its busiest
  link really carries, :func:`~.tree.link_load`) and the end barrier lasts NCCL's latency.
  The time is ``latency + max(contended flow time, bytes / cap)``: NCCL's formula with its
  link bandwidth replaced by what the flow engine gives the flows on the shared fabric.
- alpha model: the end barrier lasts ``steps * alpha`` (step-by-step forms put alpha on
  each step's flows instead).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from hpn.errors import InputError
from hpn.registry import Registry
from hpn.topology.fabric import LinkTier
from hpn.workload.collectives import tuning as tu
from hpn.workload.collectives.context import Ctx, Params
from hpn.workload.collectives.direct import build_direct, build_pxn
from hpn.workload.collectives.hd import build_hd
from hpn.workload.collectives.hier import build_hier, build_nvls, build_nvlstree
from hpn.workload.collectives.ops import get_op
from hpn.workload.collectives.ring import build_ring
from hpn.workload.collectives.tree import build_tree, link_load


@dataclass(frozen=True)
class Algorithm:
    name: str
    build: Callable[..., tuple[np.ndarray, int]]
    ops: tuple[str, ...]
    summary: str


ALGORITHMS: Registry[Algorithm] = Registry("algorithm", field="algo")


def register(name: str, build, ops: tuple[str, ...], summary: str) -> None:
    ALGORITHMS.add(name, Algorithm(name, build, ops, summary), summary)


register(
    "ring",
    build_ring,
    ("allreduce", "allgather", "reducescatter", "broadcast", "reduce"),
    "NCCL Ring: rail-aware rings, one coupled group per channel and connection",
)
register(
    "tree", build_tree, ("allreduce",), "NCCL Tree: double binary tree over hosts, chains inside"
)
register("hd", build_hd, ("allreduce", "allgather", "reducescatter"), "halving-doubling")
register(
    "hier",
    build_hier,
    ("allreduce", "allgather", "reducescatter"),
    "in-host NVLink ring, per-rail ring across hosts, in-host ring",
)
register(
    "nvls",
    build_nvls,
    ("allreduce", "allgather", "reducescatter"),
    "NCCL NVLS: NVLink SHARP in one host (across hosts it needs CollNet)",
)
register(
    "nvlstree",
    build_nvlstree,
    ("allreduce",),
    "NCCL NVLSTree: NVLink SHARP in the host, a double binary tree per rail across",
)
register("direct", build_direct, ("alltoall", "sendrecv"), "every transfer at once")
register("pxn", build_pxn, ("alltoall",), "PXN: relay over NVLink to the destination's rail")


NCCL_ONLY = ("collnetdirect", "collnetchain", "pat")  # NCCL names with no builder here


def get_algorithm(name: str, op: str) -> Algorithm:
    if name in NCCL_ONLY:
        raise InputError("algo", _why_not(name, None, op))
    algo = ALGORITHMS.get(name)
    if op not in algo.ops:
        ok = [a.name for a in ALGORITHMS.values() if op in a.ops]
        raise InputError("algo", f"{name} does not implement {op}; for {op} use {', '.join(ok)}")
    return algo


def _nic_ports(ctx: Ctx, ranks: np.ndarray) -> int:
    """NIC-ToR ports (bond members) of the first rank's NIC."""
    lk = ctx.fabric.links
    return int(((lk.src == int(ranks[0, 0])) & (lk.tier == LinkTier.NIC_TOR)).sum())


def comm_of(ctx: Ctx, ranks: np.ndarray, p: Params) -> tu.Comm:
    """The communicator NCCL's tuner sees for ``ranks`` (hosts, GPUs per host)."""
    fab = ctx.fabric
    lk = fab.links
    g0 = int(ranks[0, 0])
    nic = lk.capacity[(lk.src == g0) & (lk.tier == LinkTier.NIC_TOR)].sum() / 8e9
    ch = p.channels
    return tu.Comm(
        ranks.size,
        ranks.shape[0],
        tu.GPUS.get(p.gpu),
        float(nic) or 12.0,
        nvlink=bool((ctx.nvlink_up[ranks] >= 0).all()),
        min_channels=ch or 0,
        max_channels=ch or tu.MAXCHANNELS,
        nccl=tu.VERSIONS.get(p.nccl),
        nic_path=p.nic_path,
        cpu=p.cpu,
    )


def _why_not(name: str, c: tu.Comm | None, op: str) -> str:
    if name.startswith("collnet"):
        return f"{name} needs in-network reduction (SHARP switches); this fabric has none"
    if name == "pat":
        return "pat (one GPU per host AllGather/ReduceScatter) is not modelled; use ring"
    if c is not None and name in ("nvls", "nvlstree"):
        if not c.gpu.nvls or not c.nvlink:
            return (
                f"{name} needs NVSwitch with NVLink SHARP (SM90+); "
                f"{c.gpu.name} hosts here have none"
            )
        if name == "nvls" and c.nodes > 1:
            return "nvls across hosts needs CollNet (in-network reduction); use nvlstree or ring"
        if name == "nvlstree" and c.nodes == 1:
            return "nvlstree needs more than one host; use nvls or ring"
    ok = [a.name for a in ALGORITHMS.values() if op in a.ops]
    return f"{name} does not implement {op}; for {op} use {', '.join(ok)}"


def _masks(algo: str | None, p: Params, op: str) -> tuple[list[bool], list[bool]]:
    algos = [True] * len(tu.ALGOS)
    if algo and algo != "auto":
        algos = tu.parse_list(algo, tu.ALGOS, "algo", op)
    protos = [True] * 3
    if p.proto and p.proto != "auto":
        protos = tu.parse_list(p.proto, tu.PROTOS, "proto", op)
    algos[tu.PAT] = False  # no PAT builder: NCCL_ALGO=^PAT
    return algos, protos


def nccl_choice(
    ctx: Ctx, op: str, ranks: np.ndarray, size: float, algo: str | None, p: Params
) -> tu.Choice:
    """NCCL's choice for one collective (forced by ``algo``/``p.proto`` with NCCL_ALGO /
    NCCL_PROTO semantics); one clear line when nothing is left."""
    c = comm_of(ctx, ranks, p)
    tuned = {"allreduce", "allgather", "reducescatter", "broadcast", "reduce"}
    if op not in tuned:  # p2p: no tuner; one NCCL step of Simple
        if p.proto not in ("auto", "simple"):
            raise InputError("proto", f"{op} runs point-to-point with simple, not {p.proto}")
        hw = tu.NET if c.nodes > 1 else tu.NVLINK if c.nvlink else tu.PCI
        v = c.nccl
        lat = v.base_lat[tu.RING][tu.SIMPLE] + v.hw_lat[hw][tu.RING][tu.SIMPLE]
        return tu.Choice(algo or "direct", "simple", p.conns, lat, 0.0, 1.0, float("inf"))
    algos, protos = _masks(algo, p, op)
    try:
        return tu.choose(c, op, size, algos, protos, proto_set=p.proto not in ("auto", ""))
    except InputError:
        asked = [tu.ALGOS[a] for a in range(len(tu.ALGOS)) if algos[a]]
        if algo and algo != "auto" and len(asked) == 1:
            raise InputError("algo", _why_not(asked[0], c, op)) from None
        raise


def add_collective(
    ctx: Ctx,
    op: str,
    ranks: np.ndarray,
    size: float,
    algo: str | None = None,
    params: Params | None = None,
    after=None,
) -> tuple[int, int]:
    """Add one collective over ``ranks`` (hosts, GPUs per host) to ``ctx.dag`` after tasks
    ``after``; returns its (start, end) barrier task ids and appends NCCL's choice to
    ``ctx.choices``. ``multi-allreduce`` runs one AllReduce per local rank across hosts, all
    at once. ``algo``: NCCL_ALGO syntax (None or ``auto``: NCCL's choice), or one of the
    non-NCCL algorithms (hd, hier, direct, pxn)."""
    p = params or Params()
    ranks = np.asarray(ranks, np.int64)
    if ranks.ndim != 2 or ranks.size < 2:
        raise InputError("gpus", f"a collective needs at least 2 ranks, got {ranks.size}")
    if not size >= 0:
        raise InputError("sizes", f"must be >= 0, got {size}")
    o = get_op(op)
    start = ctx.barrier(int(ranks[0, 0]), 0.0, after)
    comms = (
        [ranks[:, i : i + 1] for i in range(ranks.shape[1])] if op == "multi-allreduce" else [ranks]
    )
    base = "allreduce" if op == "multi-allreduce" else op
    if op == "multi-allreduce" and ranks.shape[0] < 2:
        raise InputError("gpus", "multi-allreduce needs at least 2 hosts")
    legacy = algo in ("hd", "hier") or p.model == "alpha"
    if algo in ("direct", "pxn"):
        get_algorithm(algo, base)
    ends, lat = [], 0.0
    for r in comms:
        if legacy:
            a = get_algorithm(algo or o.default_algo, base)
            e, steps = a.build(ctx, base, r, size, p, start)
            ends.append(e)
            lat = 0.0 if p.stepwise else steps * p.alpha
            ctx.choices.append(
                tu.Choice(a.name, "-", p.channels or r.shape[1], lat * 1e6, 0.0, 1.0, 0.0)
            )
            continue
        ch = nccl_choice(ctx, base, r, size, algo, p)
        a = get_algorithm(ch.algo, base)
        fc = ch.channels
        if p.flow_channels is not None:
            fc = max(1, min(fc, p.flow_channels * r.shape[1]))
        conns = p.conns
        if p.flow_channels is not None and ch.algo in ("tree", "nvlstree"):
            # two trees: already two connections per GPU; but never fewer than the NIC's
            # ports, or a merged tree edge rides one port of a bonded NIC where NCCL's
            # many channels spread over all of them
            conns = max(1, p.conns // 2, min(p.conns, _nic_ports(ctx, r)))
        q = replace(p, channels=fc, conns=conns, stepwise=False, eff=ch.eff)
        nvls = ch.algo in ("nvls", "nvlstree")
        e, _ = a.build(ctx, base, r, size if nvls else size / ch.eff, q, start)
        ends.append(e)
        cap = ch.cap_GBps
        if ch.algo == "tree":  # NCCL's cap assumes 2 bus bytes per byte (its .5); the
            cap *= 2 / link_load(*r.shape)  # tree's busiest link carries link_load
        if cap < float("inf") and size > 0:
            ends.append(np.array([ctx.barrier(int(r[0, 0]), size / (cap * 1e9), start)]))
        lat = max(lat, ch.lat_us * 1e-6)
        ctx.choices.append(ch)
    end = ctx.barrier(int(ranks[0, 0]), lat, np.concatenate(ends))
    return start, end


def comm_size(op: str, ranks: np.ndarray) -> int:
    """The rank count nccl-tests' busbw factor uses (per communicator for multi-allreduce)."""
    ranks = np.asarray(ranks)
    return ranks.shape[0] if op == "multi-allreduce" else ranks.size
