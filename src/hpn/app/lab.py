"""``hpn lab up | status | down | traffic | fail | repair | export | configs``: the fabric for
real in Linux network namespaces (:mod:`hpn.lab`, ``docs/guide/lab.md``). Needs root
(``configs`` and ``export`` do not). A way into a running lab: :mod:`hpn.app.lab_tools`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from hpn.app.base import OMIT, Command, Outcome, Result
from hpn.app.common import FabricSpec, fabric_field
from hpn.app.limits import bounded
from hpn.config import Bytes, Model, Rate
from hpn.routing.config import DEFAULT_SEEDS

RATE_MAX = 10e9
"""A connection's payload rate at most, bit/s: above every lab link (capacity x rate scale,
at most 400G x 1e-2 = 4 Gbit/s)."""

if TYPE_CHECKING:  # the lab is imported when a command runs (a fast ``hpn --help``)
    from hpn.lab.fail import DirectionSummary, ModelCheck
    from hpn.lab.measure import LinkComparison, PortBalance
    from hpn.lab.select import SelectionInfo


class LabName(Model):
    """The ``[lab]`` table: which lab."""

    name: str = Field(
        "0", description="lab name: 1-4 lowercase letters or digits; its names carry hl<name>"
    )


class LabOptions(LabName):
    """The ``[lab]`` table of ``lab up`` / ``lab configs``: scale-down and control plane."""

    hosts_per_segment: int = Field(2, ge=1, le=32, description="hosts per segment (ToR pair)")
    rails: int = Field(1, ge=1, le=8, description="NICs (GPUs) per host")
    aggs_per_plane: int = Field(2, ge=1, le=16, description="Aggs per plane (ToR uplinks)")
    rate_scale: float = Field(1e-3, gt=0, le=1e-2, description="link rate = capacity x this")
    control: Literal["bgp", "static"] = Field("bgp", description="BGP (FRR) or static routes")
    ecmp_seeds: Literal["same", "tier", "switch"] = Field(
        DEFAULT_SEEDS, description="kernel hash seed per switch (same: polarization)"
    )
    seed: int = Field(0, ge=0, le=2**31 - 1, description="base of the hash seeds")
    bfd: bool = Field(False, description="BFD on every BGP session (off: the paper is silent)")
    bfd_interval_ms: int = Field(300, ge=10, le=10_000, description="BFD tx/rx interval, ms")
    bfd_multiplier: int = Field(3, ge=2, le=255, description="BFD detect multiplier")


class UpOptions(LabOptions):
    replace: bool = Field(False, description="rebuild a lab of this name that is up")


class UpConfig(Model):
    """``hpn lab up``: ``[fabric]`` (2 segments unless set) and ``[lab]``."""

    fabric: FabricSpec = fabric_field()
    lab: UpOptions = Field(default_factory=UpOptions)


class ConfigsOptions(LabOptions):
    out: str = Field(
        "lab-configs", min_length=1, description="directory for the per-switch configurations"
    )


class ExportOptions(LabOptions):
    out: str = Field("lab-export", min_length=1, description="directory to write the files into")
    format: Literal["containerlab", "frr", "json"] = Field(
        "containerlab", description="containerlab topology, FRR configs, or one JSON document"
    )


class ExportConfig(Model):
    fabric: FabricSpec = fabric_field()
    lab: ExportOptions = Field(default_factory=ExportOptions)


class ConfigsConfig(Model):
    fabric: FabricSpec = fabric_field()
    lab: ConfigsOptions = Field(default_factory=ConfigsOptions)


class NameConfig(Model):
    """``hpn lab status`` / ``hpn lab down``: ``[lab]``."""

    lab: LabName = Field(default_factory=LabName)


class TrafficOptions(LabName):
    """The ``[lab]`` table of ``lab traffic``."""

    pattern: str = Field(
        "polarization",
        description="polarization (Fig 13 job), permutation, all-to-all, incast or rail-ring",
    )
    matrix: str | None = Field(None, description="a traffic matrix file (htsim or CSV) instead")
    size: Bytes = bounded(
        "256kB", "bytes per pattern flow, split over its connections", unit="B", gt=0, le=2**30
    )
    connections: int = Field(4, ge=1, le=64, description="connections per pattern flow")
    routing: Literal["ecmp", "hpn"] = Field("ecmp", description="ecmp, or HPN path selection")
    rate: Rate = bounded(
        "2Mbps", "payload rate of every connection, bit/s", unit="bps", gt=0, le=RATE_MAX
    )
    payload: int = Field(1000, ge=64, le=1400, description="UDP payload bytes per packet")
    senders: int = Field(2, ge=1, description="peers each NIC sends to (polarization)")
    seed: int = Field(0, ge=0, description="seed for the pattern and source ports")


class TrafficConfig(Model):
    lab: TrafficOptions = Field(default_factory=TrafficOptions)


class FailOptions(LabName):
    """The ``[lab]`` table of ``lab fail``."""

    target: str = Field(
        "link:host=0,nic=0,port=0",
        description="link:host=H,nic=N,port=P | tor:segment=S,rail=R,plane=P | "
        "flap:host=H,nic=N,port=P,period=0.4,count=3 | uplink:segment=S,rail=R,plane=P,"
        "uplink=U | agg:plane=P,index=I | core:index=I | silent:<link or uplink keys>,"
        "dir=both|down|up | gray:<same>,loss=0.1",
    )
    repair: float = Field(2.0, ge=0.2, le=60, description="seconds until repair")
    before: float = Field(1.0, ge=0.2, le=10, description="seconds of traffic before failing")
    after: float | None = Field(
        None, ge=0.2, le=10, description="seconds of traffic after repair (default 1, ToR 3)"
    )
    connections: int = Field(4, ge=1, le=16, description="connections each way per NIC")
    routing: Literal["ecmp", "hpn"] = Field(
        "ecmp", description="ecmp, or hpn (hosts re-run path selection every --probe s)"
    )
    rate: Rate = bounded(
        "1Mbps", "payload rate of every connection, bit/s", unit="bps", gt=0, le=RATE_MAX
    )
    payload: int = Field(500, ge=64, le=1400, description="UDP payload bytes per packet")
    probe: float = Field(0.1, ge=0.02, le=5, description="re-selection period with hpn, s")
    seed: int = Field(0, ge=0, description="seed for source ports")


class FailConfig(Model):
    lab: FailOptions = Field(default_factory=FailOptions)


def lab_spec(fabric: Any, lab: LabOptions):
    """The lab spec from a validated fabric spec (fields the user set) and ``[lab]``."""
    from hpn.errors import InputError
    from hpn.lab.plan import LabSpec

    fields = fabric.model_dump(exclude_unset=True)
    preset = fields.pop("preset", getattr(fabric, "preset", "hpn"))
    if preset not in ("hpn", "rail-only", "fat-tree"):
        raise InputError("preset", f"the lab builds hpn, rail-only or fat-tree, not {preset}")
    extra: dict[str, Any] = {}
    if preset == "fat-tree":
        extra["k"] = fields.pop("k", 4)
    else:
        extra["segments"] = fields.pop("segments", None) or 2
    opts = lab.model_dump(include=set(LabOptions.model_fields))
    return LabSpec(preset=preset, fabric=fields, **extra, **opts)


class LabTables(Result):
    """Key figures: the scalar fields, then one table per flat dict field."""

    def rows(self) -> list[tuple[str, Any]]:
        return [(k, v) for k, v in self.to_json().items() if not isinstance(v, dict | list)]

    def sections(self) -> list[tuple[str, list[tuple[str, Any]]]]:
        out = [(self.heading(), self.rows())]
        for k, v in self.to_json().items():
            if isinstance(v, dict) and v and not any(isinstance(x, dict) for x in v.values()):
                out.append((k.replace("_", " "), list(v.items())))
        return out


@dataclass
class StatusResult(LabTables):
    name: str
    status: str
    namespaces: int
    prefix: str | None = field(default=None, metadata=OMIT)
    preset: str | None = field(default=None, metadata=OMIT)
    control: str | None = field(default=None, metadata=OMIT)
    ecmp_seeds: str | None = field(default=None, metadata=OMIT)
    rate_scale: float | None = field(default=None, metadata=OMIT)
    namespaces_expected: int | None = field(default=None, metadata=OMIT)
    hosts: int | None = field(default=None, metadata=OMIT)
    switches: int | None = field(default=None, metadata=OMIT)
    nics: int | None = field(default=None, metadata=OMIT)
    links: int | None = field(default=None, metadata=OMIT)
    link_rates_bps: list[int] | None = field(default=None, metadata=OMIT)
    processes: int | None = field(default=None, metadata=OMIT)
    built_s: float | None = field(default=None, metadata=OMIT)
    converge_s: float | None = field(default=None, metadata=OMIT)
    subnets: list[str] | None = field(default=None, metadata=OMIT)
    links_down: list[str] | None = field(default=None, metadata=OMIT)
    links_dropping: list[str] | None = field(default=None, metadata=OMIT)
    bgp_sessions: int | None = field(default=None, metadata=OMIT)
    bgp_established: int | None = field(default=None, metadata=OMIT)
    routes: dict[str, int] | None = field(default=None, metadata=OMIT)
    link_state: list[dict[str, Any]] | None = field(default=None, metadata=OMIT)
    sessions: list[dict[str, Any]] | None = field(default=None, metadata=OMIT)

    title = "hpn lab"

    def rows(self) -> list[tuple[str, Any]]:
        rows = super().rows()
        if self.links_down is not None:
            rows.append(("links down", ", ".join(self.links_down) or "none"))
        if self.sessions:
            bad = [f"{x['switch']}:{x['peer']} {x['state']}" for x in self.sessions
                   if x["state"] != "Established"]  # fmt: skip
            rows.append(("BGP sessions not established", ", ".join(bad) or "none"))
        return rows


@dataclass
class ExportResult(LabTables):
    out: str
    format: str
    files: list[str]
    nodes: int
    links: int

    title = "hpn lab export"


@dataclass
class RepairResult(LabTables):
    name: str
    links_repaired: list[str]
    drops_removed: list[str]
    converge_s: float | None
    took_s: float

    title = "hpn lab repair"


@dataclass
class DownResult(LabTables):
    name: str
    prefix: str
    removed: dict[str, int]
    left: int

    title = "hpn lab down"


@dataclass
class TrafficResult(LabTables):
    lab: str
    preset: str
    dual_plane: bool | None
    dual_tor: bool
    control: str
    ecmp_seeds: str
    pattern: str
    routing: str
    seed: int
    flows: int
    connections: int
    size_bytes: float
    rate_bps_per_flow: float
    payload_bytes: int
    packets_sent: int
    packets_received: int
    packets_lost: int
    send_errors: int
    duration_s: float
    flows_routed: int
    paths_predicted_as_kernel: int  # model paths (--ecmp-hash linux) as ip route get
    flows_unroutable: int
    selection: SelectionInfo
    fct_s: dict[str, float | None]
    makespan_s: float
    links_used: int
    control_bytes_floor: float
    measured: PortBalance
    model: PortBalance
    model_vs_measured: LinkComparison

    title = "hpn lab traffic"


@dataclass
class FailResult(LabTables):
    lab: str
    target: str
    kind: str
    dual_tor: bool
    dual_plane: bool
    control: str
    routing: str
    links_down: list[str]
    nics: list[str]
    failed_at_s: float
    repaired_at_s: float
    packet_interval_s: float
    events: list[dict[str, Any]]  # what each scheduled action did, as it reported it
    loop_stall_max_s: float
    to_nic: DirectionSummary
    from_nic: DirectionSummary
    model: ModelCheck
    flows_keep_going: bool
    nic_cut_off: bool

    title = "hpn lab fail"


@dataclass
class ConfigsResult(LabTables):
    out: str
    switches: int
    files: list[str]
    asns: dict[str, int]

    title = "hpn lab configs"


def up(cfg: UpConfig) -> Outcome:
    from hpn.lab import service

    spec = lab_spec(cfg.fabric, cfg.lab)
    return Outcome(StatusResult.from_dict(service.up(spec, replace=cfg.lab.replace)))


def export(cfg: ExportConfig) -> Outcome:
    from hpn.lab.export import export as run_export

    spec = lab_spec(cfg.fabric, cfg.lab)
    return Outcome(ExportResult.from_dict(run_export(spec, cfg.lab.out, cfg.lab.format)))


def repair(cfg: NameConfig) -> Outcome:
    from hpn.lab import service

    return Outcome(RepairResult.from_dict(service.repair(cfg.lab.name)))


def status(cfg: NameConfig) -> Outcome:
    from hpn.lab import service

    return Outcome(StatusResult.from_dict(service.status(cfg.lab.name)))


def down(cfg: NameConfig) -> Outcome:
    from hpn.lab import service

    return Outcome(DownResult.from_dict(service.down(cfg.lab.name)))


def traffic(cfg: TrafficConfig) -> Outcome:
    from hpn.lab import service

    t = cfg.lab
    tables: dict = {}
    out = service.traffic(
        t.name,
        t.pattern,
        float(t.size),
        t.connections,
        t.routing,
        float(t.rate),
        t.payload,
        t.seed,
        t.senders,
        t.matrix,
        tables=tables,
    )
    return Outcome(TrafficResult.from_dict(out), tables)


def fail(cfg: FailConfig) -> Outcome:
    from hpn.lab import service

    f = cfg.lab
    out = service.fail(
        f.name,
        f.target,
        f.repair,
        f.before,
        f.after,
        f.connections,
        f.routing,
        float(f.rate),
        f.payload,
        f.seed,
        f.probe,
    )
    return Outcome(FailResult.from_dict(out))


def configs(cfg: ConfigsConfig) -> Outcome:
    from hpn.lab import service

    spec = lab_spec(cfg.fabric, cfg.lab)
    return Outcome(ConfigsResult.from_dict(service.configs(spec, cfg.lab.out)))


UP = Command("lab up", UpConfig, up, flags=("fabric", "lab"), stored=False)
STATUS = Command("lab status", NameConfig, status, flags=("lab",), stored=False)
DOWN = Command("lab down", NameConfig, down, flags=("lab",), stored=False)
TRAFFIC = Command("lab traffic", TrafficConfig, traffic, flags=("lab",))
FAIL = Command("lab fail", FailConfig, fail, flags=("lab",))
EXPORT = Command("lab export", ExportConfig, export, flags=("fabric", "lab"), stored=False)
REPAIR = Command("lab repair", NameConfig, repair, flags=("lab",), stored=False)
CONFIGS = Command("lab configs", ConfigsConfig, configs, flags=("fabric", "lab"), stored=False)
