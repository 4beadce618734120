"""``hpn fail`` (a job's iterations across injected faults) and ``hpn reliability`` (Monte Carlo
over months of failures)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field, model_validator

from hpn.app.base import OMIT, Command, FileInput, Outcome, Result
from hpn.app.common import FabricSpec, Progress, RoutingTable, fabric_field, routing_field
from hpn.config import Model
from hpn.errors import InputError
from hpn.failures.config import FailCfg, ReliabilityCfg, SimpleStep
from hpn.failures.result import FailResult
from hpn.workload.training.config import JobConfig

if TYPE_CHECKING:  # imported when the command runs (a fast ``hpn --help``)
    from hpn.failures.montecarlo import ExpectedEvents, ExposureCounts, Stats


class FailConfig(Model):
    """``hpn fail``: ``[fabric]``, ``[fail]`` and the job: ``[iteration]`` or ``[job]``."""

    fabric: FabricSpec = fabric_field()
    routing: RoutingTable = routing_field()
    fail: FailCfg = Field(default_factory=FailCfg)
    iteration: SimpleStep | None = Field(None, description="a simple data-parallel step")
    job: JobConfig | None = Field(None, description="a training job (one iteration)")

    @model_validator(mode="after")
    def _one_job(self) -> FailConfig:
        if (self.iteration is None) == (self.job is None):
            raise InputError("config", "give exactly one of an [iteration] or a [job] table")
        return self


def fail(cfg: FailConfig, progress: Progress | None = None) -> Outcome[FailResult]:
    """Run a job's iterations across injected faults: throughput, halts, crashes."""
    from hpn.failures import run_fail
    from hpn.failures.workload import simple_iteration, training_iteration
    from hpn.routing.config import command_router
    from hpn.topology import build

    c = cfg.fail
    if not c.faults:
        raise InputError(
            "--fault", "give at least one fault, e.g. link:host=0,nic=0,at=10s,repair=30s"
        )
    fabric = build(cfg.fabric)
    router = command_router(fabric, c.routing, c.seed, cfg.routing)
    if cfg.iteration is not None:
        it = simple_iteration(fabric, cfg.iteration)
    else:
        it = training_iteration(fabric, cfg.job, router)
    res, tables = run_fail(
        fabric,
        it,
        list(c.faults),
        stacked=c.stacked,
        routing=c.routing,
        seed=c.seed,
        recovery=c.recovery(c.since_checkpoint),
        duration=c.duration,
        router=router,
        failover=c.failover(),
        progress=progress,
    )
    warnings = [
        f"fault {f!r} takes down nothing the job uses: its loss is 0 by construction"
        for f in _untouched(fabric, it.gpus, list(c.faults), c.stacked)
    ]
    return Outcome(res, tables, wall_s=res.wall_s, warnings=warnings)


def _untouched(fabric: Any, gpus: Any, faults: list[str], stacked: bool) -> list[str]:
    """The faults whose links are all away from the job: no NIC link of its GPUs and, when it
    spans segments, no link of its ToRs or of the Aggs above them (and, across pods, of the
    cores above those)."""
    import numpy as np

    from hpn.failures import parse_fault
    from hpn.failures.semantics import design_of, fault_down_links
    from hpn.topology.fabric import LinkTier

    lk, nd = fabric.links, fabric.nodes
    gpus = np.asarray(gpus)
    switches = np.empty(0, np.int64)
    if len(np.unique(nd.segment[gpus] + 1_000_000 * nd.pod[gpus])) > 1:  # it crosses tier 2
        tors = np.unique(lk.dst[np.isin(lk.src, gpus) & (lk.tier == LinkTier.NIC_TOR)])
        aggs = np.unique(lk.dst[np.isin(lk.src, tors) & (lk.tier == LinkTier.TOR_AGG)])
        switches = np.concatenate([tors, aggs])
        if len(np.unique(nd.pod[gpus])) > 1:
            cores = np.unique(lk.dst[np.isin(lk.src, aggs) & (lk.tier == LinkTier.AGG_CORE)])
            switches = np.concatenate([switches, cores])
    design = design_of(fabric, stacked)
    out = []
    for text in faults:
        down = fault_down_links(fabric, parse_fault(text), design)
        nic = lk.tier[down] == LinkTier.NIC_TOR
        at_gpus = np.isin(lk.src[down], gpus) | np.isin(lk.dst[down], gpus)
        above = np.isin(lk.src[down], switches) & np.isin(lk.dst[down], switches)
        if not (at_gpus & nic).any() and not (above & ~nic).any():
            out.append(text)
    return out


def load_job_file(path: Path) -> dict[str, Any]:
    """``hpn fail``'s job file: an ``[iteration]`` table or one training job, maybe ``[fabric]``."""
    from hpn.failures.workload import read_config
    from hpn.workload.training import load_jobs

    data, fabric = read_config(path)
    if "iteration" in data:
        extra = set(data) - {"iteration", "fabric"}
        if extra:
            raise InputError(str(path), f"unexpected tables {sorted(extra)} next to [iteration]")
        return dict(data)
    jobs, _ = load_jobs(path)
    if len(jobs) != 1:
        raise InputError(str(path), f"hpn fail runs one job, the file has {len(jobs)}")
    out: dict[str, Any] = {"job": jobs[0]}
    if fabric is not None:
        out["fabric"] = fabric
    return out


# --- reliability ---------------------------------------------------------------------------


class ReliabilityConfig(Model):
    """``hpn reliability``: ``[fabric]`` and ``[reliability]``."""

    fabric: FabricSpec = fabric_field()
    reliability: ReliabilityCfg = Field(default_factory=ReliabilityCfg)


@dataclass
class ReliabilityResult(Result):
    preset: str
    design: str
    routing: str
    gpus: int
    months: float
    trials: int
    seed: int
    exposure: ExposureCounts
    expected_per_month: ExpectedEvents
    crashes_per_month: Stats
    halted_hours_per_month: Stats
    degraded_hours_per_month: Stats
    restart_and_lost_work_hours_per_month: Stats
    goodput_loss_fraction: Stats
    degraded_loss: float
    blackhole_s: dict[str, float]  # per link and ToR failure (hpn.failures.montecarlo.Holds)
    checkpoint_overhead_fraction: float
    gpu_hours_lost_per_month: Stats
    rates: dict[str, float]  # the fields of hpn.failures.montecarlo.Rates
    recovery: dict[str, float | None]  # the fields of hpn.failures.checkpoint.Recovery
    price_per_gpu_hour: float | None = field(default=None, metadata=OMIT)
    cost_per_month: Stats | None = field(default=None, metadata=OMIT)

    title = "hpn reliability"

    def rows(self) -> list[tuple[str, Any]]:
        def s(x: Stats, fmt: str = ".3g") -> str:
            return f"{x['mean']:{fmt}} (p50 {x['p50']:{fmt}}, p99 {x['p99']:{fmt}})"

        ex = self.exposure
        rows: list[tuple[str, Any]] = [
            ("fabric / design", f"{self.preset} / {self.design} / {self.routing}"),
            ("job", f"{self.gpus} GPUs, {self.months:g} months x {self.trials} trials"),
            (
                "blackhole per failure",
                f"link {self.blackhole_s['link']:.3g} s, ToR {self.blackhole_s['tor']:.3g} s",
            ),
            ("exposure", f"{ex['nic_tor_links']} NIC-ToR links, {ex['tors']} ToRs"),
            ("crashes per month", s(self.crashes_per_month)),
            ("halted hours per month", s(self.halted_hours_per_month)),
            ("degraded hours per month", s(self.degraded_hours_per_month)),
            ("goodput loss", s(self.goodput_loss_fraction)),
            ("GPU-hours lost per month", s(self.gpu_hours_lost_per_month, ".4g")),
        ]
        if self.cost_per_month is not None:
            rows.append(("cost per month", s(self.cost_per_month, ",.0f")))
        return rows


def reliability(
    cfg: ReliabilityConfig, progress: Progress | None = None
) -> Outcome[ReliabilityResult]:
    """Monte Carlo of failures over months: crashes, degraded hours, goodput loss, cost."""
    from hpn.errors import InputError
    from hpn.failures.montecarlo import exposure, holds
    from hpn.failures.montecarlo import reliability as run
    from hpn.failures.semantics import design_of
    from hpn.routing import ROUTERS, default_policy
    from hpn.topology import build
    from hpn.workload.collectives import place

    c, spec = cfg.reliability, cfg.fabric
    fabric = build(spec)
    design = design_of(fabric, c.stacked)
    ranks = place(fabric, c.gpus, first_host=c.first_host).ranks
    ex = exposure(fabric, ranks)
    routing = c.routing or default_policy(fabric)
    if routing not in ROUTERS:
        raise InputError("routing", f"unknown policy {routing!r}; choose from {', '.join(ROUTERS)}")
    hold = holds(fabric, ranks, routing, c.failover()) if design != "single-tor" else None
    r = run(
        ex,
        design,
        c.months,
        c.trials,
        c.seed,
        c.rates(),
        c.recovery(),
        c.degraded_loss,
        c.price,
        progress,
        hold,
    )
    return Outcome(ReliabilityResult.from_dict({"preset": spec.preset, "routing": routing, **r}))


FAIL = Command(
    "fail",
    FailConfig,
    fail,
    flags=("fabric", "fail", "routing"),
    files=(FileInput("config", "Job config: a training job or [iteration].", load_job_file),),
    progress=True,
)
RELIABILITY = Command(
    "reliability", ReliabilityConfig, reliability, flags=("fabric", "reliability"), progress=True
)
