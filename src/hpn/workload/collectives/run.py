"""nccl-tests-style sweeps: one simulation per size, ``jobs`` identical jobs at once."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from hpn.errors import InputError
from hpn.topology.fabric import Fabric
from hpn.workload.collectives.algorithms import add_collective, comm_size
from hpn.workload.collectives.context import Ctx, Params, nvlink_data_fabric
from hpn.workload.collectives.ops import bandwidths, get_op
from hpn.workload.collectives.placement import place
from hpn.workload.collectives.result import CollectiveResult, SizeResult


def collective_dag(
    fabric: Fabric,
    op: str,
    size: float,
    gpus: int,
    per_host: int | None = None,
    algo: str | None = None,
    params: Params | None = None,
    jobs: int = 1,
    order: str = "fabric",
    order_seed: int = 1,
    first_host: int = 0,
):
    """(ctx, [(start, end) per job], ranks of job 0): ``jobs`` jobs on consecutive hosts from
    ``first_host`` (fabric order), each listing its hosts in ``order``
    (:func:`~.placement.host_order`)."""
    ctx = Ctx(fabric)
    marks, ranks0 = [], None
    first = first_host
    for _ in range(jobs):
        pl = place(fabric, gpus, per_host, first, order, order_seed)
        first += pl.hosts
        marks.append(add_collective(ctx, op, pl.gpus, size, algo, params))
        ranks0 = pl.gpus if ranks0 is None else ranks0
    return ctx, marks, ranks0


def _one(
    fabric, op, size, gpus, per_host, algo, router, seed, params, jobs, order
) -> tuple[SizeResult, np.ndarray]:
    from hpn.engine import simulate

    ctx, marks, ranks = collective_dag(fabric, op, size, gpus, per_host, algo, params, jobs, *order)
    res = simulate(nvlink_data_fabric(fabric, params or Params()), ctx.dag, router, seed=seed)
    n = comm_size(op, ranks)
    times = [float(res.task_finish[e] - res.task_start[s]) for s, e in marks]
    bws = [bandwidths(op, size, t, n) for t in times]
    ch = ctx.choices[0]
    row: SizeResult = {
        "size_bytes": int(size),
        "time_s": float(np.max(times)),
        "algbw_GBps": float(min(b[0] for b in bws)) / 1e9,
        "busbw_GBps": float(min(b[1] for b in bws)) / 1e9,
        "flows": len(res.size),
        "algo": ch.algo,
        "proto": ch.proto,
        "channels": ch.channels,
    }
    if ch.time_us > 0:
        row["predicted_s"] = ch.time_us * 1e-6
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
    host_order: str = "fabric",
    order_seed: int = 1,
    first_host: int = 0,
) -> CollectiveResult:
    """Simulate ``op`` at every size; nccl-tests' algbw/busbw (GB/s = 1e9 bytes/s).

    ``algo``: None or ``"auto"``: NCCL's tuner chooses per size (``params.model="nccl"``);
    else NCCL_ALGO syntax or a non-NCCL algorithm. Every row says what ran. ``routing``: a
    policy name (None: the fabric's default); ``hashing``: its hash settings; ``host_order``
    / ``order_seed``: the launcher's host list (:func:`~.placement.host_order`); ``first_host``:
    the job's first host in fabric order (a job across a segment boundary starts before it)."""
    from hpn.routing import describe, router_for

    t0 = time.perf_counter()
    get_op(op)
    router = router_for(fabric, routing, seed=seed, hashing=hashing)
    rows: list[SizeResult] = []
    p = params or Params()
    if not sizes:
        raise InputError("sizes", "at least one size")
    for size in sizes:
        order = (host_order, order_seed, first_host)
        row, ranks = _one(fabric, op, size, gpus, per_host, algo, router, seed, p, jobs, order)
        rows.append(row)
    return CollectiveResult(
        op=op,
        algo=algo or ("auto" if p.model == "nccl" else get_op(op).default_algo),
        proto=p.proto if p.model == "nccl" else "-",
        model=p.model,
        gpu=p.gpu,
        nccl=p.nccl,
        host_order=host_order,
        order_seed=order_seed,
        routing=router.name,
        routing_detail=describe(router),
        seed=seed,
        gpus=gpus,
        per_host=int(ranks.shape[1]),
        hosts=int(ranks.shape[0]),
        jobs=jobs,
        first_host=first_host,
        results=rows,
        wall_s=time.perf_counter() - t0,
        preset=getattr(fabric.spec, "preset", None),
    )
