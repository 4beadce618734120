"""The registry of collective algorithms, and :func:`add_collective` to put one in a DAG.

Every algorithm builds flows between a start barrier and returns its last tasks and the
number of latency steps; :func:`add_collective` adds the end barrier, a compute task lasting
``steps * alpha`` (the alpha-beta model's latency term; step-by-step forms put alpha on each
step's flows instead).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from hpn.errors import InputError
from hpn.registry import Registry
from hpn.workload.collectives.context import Ctx, Params
from hpn.workload.collectives.direct import build_direct, build_pxn
from hpn.workload.collectives.hd import build_hd
from hpn.workload.collectives.hier import build_hier, build_nvls
from hpn.workload.collectives.ops import get_op
from hpn.workload.collectives.ring import build_ring
from hpn.workload.collectives.tree import build_tree


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
    ("allreduce", "allgather", "reducescatter", "broadcast"),
    "rail-aware rings, one coupled group per channel and connection",
)
register("tree", build_tree, ("allreduce",), "NCCL double binary tree over hosts")
register("hd", build_hd, ("allreduce", "allgather", "reducescatter"), "halving-doubling")
register(
    "hier",
    build_hier,
    ("allreduce", "allgather", "reducescatter"),
    "in-host NVLink ring, per-rail ring across hosts, in-host ring",
)
register("nvls", build_nvls, ("allreduce",), "in-switch (NVLS) reduction in the host, rails across")
register("direct", build_direct, ("alltoall", "sendrecv"), "every transfer at once")
register("pxn", build_pxn, ("alltoall",), "PXN: relay over NVLink to the destination's rail")


def get_algorithm(name: str, op: str) -> Algorithm:
    algo = ALGORITHMS.get(name)
    if op not in algo.ops:
        ok = [a.name for a in ALGORITHMS.values() if op in a.ops]
        raise InputError("algo", f"{name} does not implement {op}; for {op} use {', '.join(ok)}")
    return algo


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
    ``after``; returns its (start, end) barrier task ids. ``multi-allreduce`` runs one
    AllReduce per local rank across hosts, all at once."""
    p = params or Params()
    ranks = np.asarray(ranks, np.int64)
    if ranks.ndim != 2 or ranks.size < 2:
        raise InputError("gpus", f"a collective needs at least 2 ranks, got {ranks.size}")
    if not size >= 0:
        raise InputError("sizes", f"must be >= 0, got {size}")
    o = get_op(op)
    name = algo or o.default_algo
    start = ctx.barrier(int(ranks[0, 0]), 0.0, after)
    if op == "multi-allreduce":
        a = get_algorithm(name, "allreduce")
        if ranks.shape[0] < 2:
            raise InputError("gpus", "multi-allreduce needs at least 2 hosts")
        ends, steps = [], 0
        for i in range(ranks.shape[1]):
            e, steps = a.build(ctx, "allreduce", ranks[:, i : i + 1], size, p, start)
            ends.append(e)
        last = np.concatenate(ends)
    else:
        a = get_algorithm(name, op)
        last, steps = a.build(ctx, op, ranks, size, p, start)
    end = ctx.barrier(int(ranks[0, 0]), 0.0 if p.stepwise else steps * p.alpha, last)
    return start, end


def comm_size(op: str, ranks: np.ndarray) -> int:
    """The rank count nccl-tests' busbw factor uses (per communicator for multi-allreduce)."""
    ranks = np.asarray(ranks)
    return ranks.shape[0] if op == "multi-allreduce" else ranks.size
