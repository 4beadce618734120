"""The iteration a fault timeline repeats: one training iteration as a FlowDAG, with the
samples it trains and the GPUs it runs on.

From a config file: a training job (``hpn.workload.training``: model or AICB file, 1F1B,
gradient buckets), or, with an ``[iteration]`` table, a simple data-parallel step: every GPU
computes ``compute`` seconds, then all of them AllReduce ``allreduce`` bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hpn.config import load_toml
from hpn.engine.dag import FlowDAG
from hpn.errors import InputError
from hpn.failures.config import SimpleStep
from hpn.topology.fabric import Fabric


@dataclass(eq=False)
class Iteration:
    """One iteration: its DAG (all tasks of the iteration), samples, GPUs (node ids);
    ``fabric``: the fabric its flows run on where it is not the one given (NVLink at NCCL's
    data rate, :func:`hpn.workload.collectives.context.nvlink_data_fabric`)."""

    dag: FlowDAG
    samples: float
    gpus: np.ndarray
    name: str = "job"
    info: dict[str, Any] = field(default_factory=dict)
    fabric: Fabric | None = None


def simple_iteration(fabric: Fabric, step: SimpleStep) -> Iteration:
    """Compute then AllReduce, as one DAG."""
    from hpn.workload.collectives import Ctx, Params, add_collective, place
    from hpn.workload.collectives.context import nvlink_data_fabric

    pl = place(fabric, step.gpus, step.per_host, step.first_host)
    ctx = Ctx(fabric)
    comp = ctx.dag.add_compute(pl.ranks, np.full(pl.size, float(step.compute)))
    add_collective(ctx, "allreduce", pl.gpus, float(step.allreduce), step.algo, after=comp)
    samples = step.samples or step.gpus
    data = nvlink_data_fabric(fabric, Params())
    return Iteration(ctx.dag, float(samples), pl.ranks, "dp-step", {"kind": "simple"}, data)


def training_iteration(fabric: Fabric, job, router) -> Iteration:
    """One iteration of a training job config (:class:`hpn.workload.training.JobConfig`)."""
    from hpn.workload.collectives import Ctx
    from hpn.workload.training import make_plan
    from hpn.workload.training.dag import TpTimer, add_job, data_fabric

    plan = make_plan(job)
    ctx = Ctx(fabric)
    m = add_job(ctx, plan, TpTimer(fabric, router))
    info = {"kind": "training", "tp": plan.tp, "pp": plan.pp, "dp": plan.dp}
    data = data_fabric(fabric, [m])
    return Iteration(ctx.dag, float(plan.samples), m.gpus, plan.name, info, data)


def read_config(path: str | Path) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(raw config, its ``[fabric]`` table or None)."""
    data = load_toml(path)
    fabric = data.get("fabric")
    if fabric is not None and not isinstance(fabric, dict):
        raise InputError(f"{path}: fabric", "expected a table")
    return data, fabric


def iteration_from_dict(fabric: Fabric, data: dict[str, Any], router) -> Iteration:
    """From ``{"iteration": {...}}`` (a simple step) or ``{"job": {...}}`` (a training job)."""
    from pydantic import ValidationError

    from hpn.config import one_line

    if ("iteration" in data) == ("job" in data):
        raise InputError("config", "give exactly one of an [iteration] or a [job] table")
    try:
        if "iteration" in data:
            return simple_iteration(fabric, SimpleStep(**(data["iteration"] or {})))
        from hpn.workload.training import JobConfig

        return training_iteration(fabric, JobConfig(**data["job"]), router)
    except ValidationError as e:
        raise one_line(e, "iteration" if "iteration" in data else "job") from None


def iteration_from_config(fabric: Fabric, path: str | Path, router) -> Iteration:
    """The iteration a config file describes: ``[iteration]`` or a training job."""
    data, _ = read_config(path)
    if "iteration" in data:
        extra = set(data) - {"iteration", "fabric"}
        if extra:
            raise InputError(str(path), f"unexpected tables {sorted(extra)} next to [iteration]")
        return iteration_from_dict(fabric, data, router)
    from hpn.workload.training import load_jobs

    jobs, _ = load_jobs(path)
    if len(jobs) != 1:
        raise InputError(str(path), f"hpn fail runs one job, the file has {len(jobs)}")
    return training_iteration(fabric, jobs[0], router)
