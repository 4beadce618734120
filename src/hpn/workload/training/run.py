"""Simulate one iteration of one or more jobs on a fabric and summarize each job."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from hpn.engine.dag import FLOW
from hpn.topology.fabric import Fabric
from hpn.workload.collectives import Ctx
from hpn.workload.training.config import JobConfig
from hpn.workload.training.dag import JobMarks, TpTimer, add_job, data_fabric
from hpn.workload.training.planner import make_plan
from hpn.workload.training.result import Breakdown, JobSummary, Parallel, TrainResult


def union_length(start: np.ndarray, end: np.ndarray) -> float:
    """Total length of the union of intervals."""
    if not len(start):
        return 0.0
    o = np.argsort(start)
    s, e = start[o], np.maximum.accumulate(end[o])
    gaps = np.maximum(s[1:] - e[:-1], 0.0)
    return float(e[-1] - s[0] - gaps.sum())


def _kind_time(res, kinds, marks: JobMarks, kind: str) -> float:
    """The most time any one stage had ``kind`` traffic in flight."""
    best = 0.0
    for (k, _), ranges in marks.kinds.items():
        if k != kind:
            continue
        t = np.concatenate([np.arange(a, b) for a, b in ranges])
        t = t[kinds[t] == FLOW]
        best = max(best, union_length(res.task_start[t], res.task_finish[t]))
    return best


def iteration_dag(
    fabric: Fabric, jobs: list[JobConfig], router: Any
) -> tuple[Ctx, list[JobMarks], Fabric]:
    """One iteration of every job as one DAG (the collectives' context, each job's task marks)
    and the fabric it runs on: NVLink at NCCL's data rate, as ``hpn collective`` runs it."""
    ctx = Ctx(fabric)
    timer = TpTimer(fabric, router)
    marks = [add_job(ctx, make_plan(j), timer) for j in jobs]
    return ctx, marks, data_fabric(fabric, marks)


def train(
    fabric: Fabric,
    jobs: list[JobConfig],
    routing: str | None = None,
    seed: int = 0,
    hashing: Any = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[TrainResult, dict[str, Any]]:
    """(result, tables): per job iteration time, throughput and breakdown; a timeline table.
    ``routing``: a policy name (None: the fabric's default); ``hashing``: its hash settings;
    ``progress(tasks_done, tasks_total)``: called by the engine after every batch of events
    of the iteration's simulation."""
    from hpn.engine import simulate
    from hpn.routing import describe, router_for

    t0 = time.perf_counter()
    router = router_for(fabric, routing, seed=seed, hashing=hashing)
    ctx, marks, data = iteration_dag(fabric, jobs, router)
    built = time.perf_counter()
    res = simulate(data, ctx.dag, router, seed=seed, progress=progress)
    kinds = ctx.dag.tasks.kind
    out_jobs: list[JobSummary] = []
    rows = []
    for m in marks:
        ref = Ctx(fabric)
        rm = add_job(ref, m.plan, None, comm=False)
        rres = simulate(data, ref.dag, router)
        compute = float(rres.task_finish[rm.lo : rm.hi].max())
        it = float(res.task_finish[m.lo : m.hi].max())
        pl = m.plan
        out_jobs.append(
            JobSummary(
                name=pl.name,
                gpus=pl.tp * pl.pp * pl.dp,
                parallel=Parallel(
                    tp=pl.tp, pp=pl.pp, dp=pl.dp, ep=pl.ep, micro_batches=pl.micro_batches
                ),
                iteration_s=it,
                samples_per_s=pl.samples / it,
                tokens_per_s=pl.tokens / it,
                breakdown=Breakdown(
                    compute_s=compute,
                    tp_s=m.tp_s,
                    pp_s=_kind_time(res, kinds, m, "pp"),
                    dp_s=_kind_time(res, kinds, m, "dp"),
                    ep_s=_kind_time(res, kinds, m, "ep"),
                    exposed_comm_s=max(it - compute, 0.0),
                ),
            )
        )
        for row, group, a, b in m.timeline:
            ids = np.arange(a, b + 1)
            rows.append(
                (
                    f"{pl.name} {row}" if len(marks) > 1 else row,
                    group,
                    float(res.task_start[ids].min()),
                    float(res.task_finish[ids].max()),
                )
            )
    first = out_jobs[0]
    result = TrainResult(
        preset=getattr(fabric.spec, "preset", None),
        routing=router.name,
        routing_detail=describe(router),
        seed=seed,
        iteration_s=first["iteration_s"],  # the first job's figures, at the top
        samples_per_s=first["samples_per_s"],
        tokens_per_s=first["tokens_per_s"],
        gpus=first["gpus"],
        breakdown=first["breakdown"],
        jobs=out_jobs,
        flows=ctx.dag.num_flows,
        tasks=ctx.dag.num_tasks,
        build_s=built - t0,
        wall_s=time.perf_counter() - t0,
    )
    tables = {
        "timeline": {
            k: [r[i] for r in rows] for i, k in enumerate(("row", "group", "start_s", "end_s"))
        }
    }
    return result, tables
