"""``hpn train``: one iteration of one or more LLM training jobs on a fabric."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field

from hpn.app.base import Command, FileInput, Outcome, Result
from hpn.app.common import FabricSpec, Progress, RoutingTable, fabric_field, routing_field
from hpn.config import Model
from hpn.units import format_duration
from hpn.workload.training.config import JobConfig

if TYPE_CHECKING:  # the domain is imported when the command runs (a fast ``hpn --help``)
    from hpn.workload.training.run import Breakdown, JobSummary


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


@dataclass
class TrainResult(Result):
    preset: str | None
    routing: str
    routing_detail: str
    seed: int
    iteration_s: float
    samples_per_s: float
    tokens_per_s: float
    gpus: int
    breakdown: Breakdown
    jobs: list[JobSummary]
    flows: int
    tasks: int
    build_s: float
    wall_s: float

    def sections(self) -> list[tuple[str, list[tuple[str, Any]]]]:
        """One key-figure table per job."""
        d = format_duration
        out = []
        for j in self.jobs:
            b, par = j["breakdown"], j["parallel"]
            rows = [
                ("fabric", f"{self.preset} (routing {self.routing}, seed {self.seed})"),
                ("GPUs", j["gpus"]),
                ("parallelism", ", ".join(f"{k}={v}" for k, v in par.items())),
                ("iteration", d(j["iteration_s"])),
                ("samples/s", f"{j['samples_per_s']:,.1f}"),
                ("tokens/s", f"{j['tokens_per_s']:,.0f}"),
                ("compute only (incl. bubble)", d(b["compute_s"])),
                ("exposed communication", d(b["exposed_comm_s"])),
                (
                    "TP / PP / DP / EP in flight",
                    " / ".join(d(x) for x in (b["tp_s"], b["pp_s"], b["dp_s"], b["ep_s"])),
                ),
            ]
            out.append((f"hpn train: {j['name']}", rows))
        return out

    def footer(self) -> str | None:
        return f"{self.flows:,} flows, wall time {self.wall_s:.2f} s"


def run(cfg: TrainConfig, progress: Progress | None = None) -> Outcome[TrainResult]:
    """Simulate one training iteration (1F1B) and report throughput and where time goes."""
    from hpn.topology import build
    from hpn.workload.training import train

    t = cfg.train
    result, tables = train(
        build(cfg.fabric),
        list(cfg.job),
        t.routing,
        t.seed,
        hashing=cfg.routing.hashing(),
        progress=progress,
    )
    res = TrainResult.from_dict(result)
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
