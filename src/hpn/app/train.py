"""``hpn train``: one iteration of one or more LLM training jobs on a fabric."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from hpn.app.base import Command, FileInput, Outcome
from hpn.app.common import FabricSpec, Progress, RoutingTable, fabric_field, routing_field
from hpn.config import Model
from hpn.workload.training.config import JobConfig
from hpn.workload.training.result import TrainResult

__all__ = ["COMMAND", "TrainConfig", "TrainOptions", "TrainResult", "load_job_file", "run"]


class TrainOptions(Model):
    """The ``[train]`` table."""

    routing: str | None = Field(
        None, description="routing policy (default: the fabric's: hpn on HPN presets, else ecmp)"
    )
    seed: int = Field(1, ge=0, le=2**63 - 1, description="seed for the routing")


class TrainConfig(Model):
    """``hpn train``: ``[fabric]``, ``[train]`` and one ``[[job]]`` table per job."""

    fabric: FabricSpec = fabric_field()
    routing: RoutingTable = routing_field()
    train: TrainOptions = Field(default_factory=TrainOptions)
    job: list[JobConfig] = Field(min_length=1, description="the jobs, placed one after another")


def run(cfg: TrainConfig, progress: Progress | None = None) -> Outcome[TrainResult]:
    """Simulate one training iteration (1F1B) and report throughput and where time goes."""
    from hpn.topology import build
    from hpn.workload.training import train

    t = cfg.train
    res, tables = train(
        build(cfg.fabric),
        list(cfg.job),
        t.routing,
        t.seed,
        hashing=cfg.routing.hashing(),
        progress=progress,
    )
    return Outcome(res, tables, wall_s=res.wall_s)


def load_job_file(path: Path) -> dict[str, Any]:
    """A job TOML (one job, or ``[[job]]`` tables, and maybe ``[fabric]``) as config tables."""
    from hpn.workload.training import load_jobs

    jobs, fabric = load_jobs(path)
    data: dict[str, Any] = {"job": jobs}
    if fabric is not None:
        data["fabric"] = fabric
    return data


COMMAND = Command(
    "train",
    TrainConfig,
    run,
    flags=("fabric", "train", "routing"),
    files=(FileInput("config", "Job TOML: one job, or [[job]] tables.", load_job_file),),
    progress=True,
)
