"""nccl-tests-style sweeps: one simulation per size, ``jobs`` identical jobs at once."""

from __future__ import annotations

import time
from typing import Any, NotRequired, TypedDict

import numpy as np

from hpn.errors import InputError
from hpn.topology.fabric import Fabric
from hpn.workload.collectives.algorithms import ALGORITHMS, add_collective, comm_size
from hpn.workload.collectives.context import Ctx, Params
from hpn.workload.collectives.ops import bandwidths, get_op
from hpn.workload.collectives.placement import place


class SizeResult(TypedDict):
    """One size of a sweep: nccl-tests' figures (GB/s = 1e9 bytes/s) of the slowest job."""

    size_bytes: int
    time_s: float
    algbw_GBps: float
    busbw_GBps: float
    flows: int
    per_job_busbw_GBps: NotRequired[list[float]]  # with several jobs
    mean_busbw_GBps: NotRequired[float]
    algo: NotRequired[str]  # with ``algo="auto"``: the fastest algorithm at this size


def collective_dag(
    fabric: Fabric,
    op: str,
    size: float,
    gpus: int,
    per_host: int | None = None,
    algo: str | None = None,
    params: Params | None = None,
    jobs: int = 1,
):
    """(ctx, [(start, end) per job], ranks of job 0): ``jobs`` jobs on consecutive hosts."""
    ctx = Ctx(fabric)
    marks, ranks0 = [], None
    first = 0
    for _ in range(jobs):
        pl = place(fabric, gpus, per_host, first_host=first)
        first += pl.hosts
        marks.append(add_collective(ctx, op, pl.gpus, size, algo, params))
        ranks0 = pl.gpus if ranks0 is None else ranks0
    return ctx, marks, ranks0


def _implements(a, op: str) -> bool:
    return (op == "multi-allreduce" and "allreduce" in a.ops) or op in a.ops


def _one(
    fabric, op, size, gpus, per_host, algo, router, seed, params, jobs
) -> tuple[SizeResult, np.ndarray]:
    from hpn.engine import simulate

    ctx, marks, ranks = collective_dag(fabric, op, size, gpus, per_host, algo, params, jobs)
    res = simulate(fabric, ctx.dag, router, seed=seed)
    n = comm_size(op, ranks)
    times = [float(res.task_finish[e] - res.task_start[s]) for s, e in marks]
    bws = [bandwidths(op, size, t, n) for t in times]
    row: SizeResult = {
        "size_bytes": int(size),
        "time_s": float(np.max(times)),
        "algbw_GBps": float(min(b[0] for b in bws)) / 1e9,
        "busbw_GBps": float(min(b[1] for b in bws)) / 1e9,
        "flows": len(res.size),
    }
    if jobs > 1:
        row["per_job_busbw_GBps"] = [b[1] / 1e9 for b in bws]
        row["mean_busbw_GBps"] = float(np.mean([b[1] for b in bws])) / 1e9
    return row, ranks


def sweep(
    fabric: Fabric,
    op: str,
    sizes: list[float],
    gpus: int,
    per_host: int | None = None,
    algo: str | None = None,
    routing: str | None = None,
    seed: int = 0,
    params: Params | None = None,
    jobs: int = 1,
    hashing: Any = None,
) -> dict[str, Any]:
    """Simulate ``op`` at every size; nccl-tests' algbw/busbw (GB/s = 1e9 bytes/s).

    ``algo="auto"``: per size, the fastest algorithm implementing ``op`` (as NCCL's tuner picks
    one per size; here by simulating each). ``routing``: a policy name (None: the fabric's
    default); ``hashing``: its hash settings."""
    from hpn.routing import describe, router_for

    t0 = time.perf_counter()
    get_op(op)
    router = router_for(fabric, routing, seed=seed, hashing=hashing)
    rows: list[SizeResult] = []
    auto = algo == "auto"
    names = [a.name for a in ALGORITHMS.values() if _implements(a, op)] if auto else [algo]
    for size in sizes:
        best: tuple[SizeResult, np.ndarray, str | None] | None = None
        for name in names:
            try:
                row, ranks = _one(
                    fabric, op, size, gpus, per_host, name, router, seed, params, jobs
                )
            except InputError:
                if not auto:
                    raise
                continue  # e.g. hd on a rank count that is not a power of two
            if best is None or row["time_s"] < best[0]["time_s"]:
                best = (row, ranks, name)
        if best is None:
            raise InputError("algo", f"no algorithm implements {op} on {gpus} GPUs")
        row, ranks, best_name = best
        if auto and best_name is not None:  # auto: every name is an algorithm's
            row["algo"] = best_name
        rows.append(row)
    return {
        "op": op,
        "algo": algo or get_op(op).default_algo,
        "routing": router.name,
        "routing_detail": describe(router),
        "seed": seed,
        "gpus": gpus,
        "per_host": int(ranks.shape[1]),
        "hosts": int(ranks.shape[0]),
        "jobs": jobs,
        "results": rows,
        "wall_s": time.perf_counter() - t0,
    }
