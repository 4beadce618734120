"""Validated parameters of ``hpn fail`` and ``hpn reliability`` (CLI, runnables, configs).

Defaults are the paper's where it gives a figure (P §2.3, §9.3) and marked [assumed] where it
does not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field, field_validator

from hpn.config import Duration, Model, Size, positive
from hpn.failures.checkpoint import Recovery

HOUR = 3600.0  # failover timings (withdrawal, probe, search, re-selection) at most
DAY = 24 * HOUR  # a timeout, checkpoint write, restart or flap at most
MONTH = 30 * DAY  # a checkpoint interval or repair at most (P: 2-4 h; repairs take hours)

if TYPE_CHECKING:
    from hpn.failures.failover import Failover
    from hpn.failures.montecarlo import Rates


class RecoveryCfg(Model):
    timeout: Duration = Field(
        "60s", le=DAY, description="a cut-off longer than this crashes the job (<= 24h)"
    )
    checkpoint_interval: Duration = Field(
        "3h", le=MONTH, description="checkpoint every (P: 2-4 h; <= 720h)"
    )
    checkpoint_cost: Duration = Field(
        "100s", le=DAY, description="time to write one (P: ~100 s; <= 24h)"
    )
    restart: Duration = Field(
        "10min", le=DAY, description="crash to training again [assumed] (<= 24h)"
    )

    def recovery(self, since: float | None = None) -> Recovery:
        return Recovery(
            self.timeout, self.checkpoint_interval, self.checkpoint_cost, self.restart, since
        )


class FailoverCfg(Model):
    """Who moves flows off a down link, and when (:mod:`hpn.failures.failover`)."""

    routing: str | None = Field(
        None, description="routing policy (default: the fabric's, hpn on HPN presets, else ecmp)"
    )
    withdraw: Duration = Field(
        "140ms", le=HOUR, description="BGP withdrawal to re-routed traffic [lab-measured] (<= 1h)"
    )
    probe: Duration = Field(
        "100ms",
        gt=0,
        le=HOUR,
        description="HPN re-selection probe period [assumed, lab] (> 0, <= 1h)",
    )
    path_search: Duration = Field(
        "200ms", le=HOUR, description="HPN path search after a failed probe [lab-measured] (<= 1h)"
    )
    ecmp_reselect: Duration | None = Field(
        None, le=HOUR, description="when plain ECMP moves a blackholed flow (default: never; <= 1h)"
    )

    def failover(self) -> Failover:
        import math

        from hpn.failures.failover import Failover

        r = math.inf if self.ecmp_reselect is None else self.ecmp_reselect
        return Failover(self.withdraw, self.probe, self.path_search, r)


class FailCfg(RecoveryCfg, FailoverCfg):
    faults: list[str] = Field(
        default_factory=list,
        description="fault specs KIND:key=value,... (see docs/guide/failures.md)",
        json_schema_extra={"flag": "--fault"},
    )
    stacked: bool = Field(False, description="stacked dual-ToR: a ToR fault kills the pair")
    seed: int = Field(0, ge=0, le=2**63 - 1)
    duration: Duration | None = Field(None, description="simulated time (default: to repair)")
    since_checkpoint: Duration | None = Field(
        None, description="age of the last checkpoint at time 0 (default: half an interval)"
    )

    _positive = field_validator("duration")(positive)


class ReliabilityCfg(RecoveryCfg, FailoverCfg):
    gpus: int = Field(3072, ge=1, description="GPUs of the job")
    first_host: int = Field(0, ge=0, description="first host of the job")
    months: float = Field(12.0, gt=0, le=1200)
    trials: int = Field(10_000, ge=1, le=10_000_000)
    seed: int = Field(0, ge=0, le=2**63 - 1)
    stacked: bool = False
    link_rate: float = Field(
        0.00057, ge=0, le=1, description="NIC-ToR link failures per link-month"
    )
    tor_rate: float = Field(0.00051, ge=0, le=1, description="ToR failures per ToR-month")
    flaps_per_day: float = Field(
        5000.0, ge=0, le=1e7, description="link flaps per day, cluster-wide"
    )
    fleet_links: float = Field(200_000.0, ge=1, description="links they spread over [assumed]")
    flap_down: Duration = Field("10s", le=DAY, description="outage per flap [assumed] (<= 24h)")
    link_repair: Duration = Field(
        "1h", le=MONTH, description="median link repair [assumed] (<= 720h)"
    )
    tor_repair: Duration = Field(
        "2h", le=MONTH, description="median ToR repair [assumed] (<= 720h)"
    )
    repair_sigma: float = Field(1.0, ge=0, le=5, description="lognormal shape of repairs")
    stacked_pair: float = Field(1.0, ge=0, le=1, description="ToR faults killing the pair")
    degraded_loss: float | None = Field(
        None, ge=0, le=1, description="throughput lost on one port (default 1 / host ports)"
    )
    price: float | None = Field(None, ge=0, description="price per GPU-hour")

    def rates(self) -> Rates:
        from hpn.failures.montecarlo import Rates

        return Rates(
            self.link_rate,
            self.tor_rate,
            self.flaps_per_day,
            self.fleet_links,
            self.flap_down,
            self.link_repair,
            self.tor_repair,
            self.repair_sigma,
            self.stacked_pair,
        )


class SimpleStep(Model):
    """``[iteration]``: compute on every GPU, then one AllReduce over all of them."""

    gpus: int = Field(16, ge=2, description="GPUs of the job")
    per_host: int | None = Field(None, ge=1, description="GPUs per host (default all)")
    first_host: int = Field(0, ge=0, description="first host (active hosts, fabric order)")
    compute: Duration = Field("100ms", description="compute per iteration")
    allreduce: Size = Field("1GB", description="gradient bytes AllReduced per iteration")
    algo: str = Field(
        "auto", description="AllReduce algorithm: auto (NCCL's tuner) or NCCL_ALGO syntax"
    )
    samples: int | None = Field(None, ge=1, description="samples per iteration (default gpus)")
