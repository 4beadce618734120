"""What ``hpn train`` measured: :class:`TrainResult` and its typed parts (numpy-free, so the
command can name its result without importing the simulator)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

from hpn.result import Result
from hpn.units import format_duration


class Parallel(TypedDict):
    """How a job is split: tensor, pipeline, data and expert parallel degrees, micro-batches."""

    tp: int
    pp: int
    dp: int
    ep: int
    micro_batches: int


class Breakdown(TypedDict):
    """Where one iteration's time goes, s: compute alone (with the pipeline bubble), the most
    time any stage had TP / PP / DP / EP traffic in flight, and communication not hidden."""

    compute_s: float
    tp_s: float
    pp_s: float
    dp_s: float
    ep_s: float
    exposed_comm_s: float


class JobSummary(TypedDict):
    """One job's iteration: its GPUs, split, time, throughput and breakdown."""

    name: str
    gpus: int
    parallel: Parallel
    iteration_s: float
    samples_per_s: float
    tokens_per_s: float
    breakdown: Breakdown


@dataclass
class TrainResult(Result):
    """One iteration of one or more jobs: the first job's figures at the top, every job's in
    ``jobs``; the fabric, routing and the simulation's size and wall time."""

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
