"""``hpn topo ...``: summarize, export, import, price and draw fabrics."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from hpn.app.base import OMIT, Command, FileInput, Outcome, Result
from hpn.app.common import FabricSpec, fabric_field
from hpn.config import FilePath, Model
from hpn.errors import InputError

if TYPE_CHECKING:  # the domain is imported when a command runs (a fast ``hpn --help``)
    from hpn.topology.bom import BomCost, BomTotals, ChipFigures, HeatSinkFit, LinkRow, SwitchRow
    from hpn.topology.summary import Frontend


class FabricConfig(Model):
    """A command that needs only a fabric: ``[fabric]``."""

    fabric: FabricSpec = fabric_field()


@dataclass
class SummaryResult(Result):
    preset: str
    pods: int
    segments: int
    gpus: int
    backup_gpus: int
    hosts: int
    switches: dict[str, int]
    links: dict[str, int]
    tor_oversubscription: float | None
    agg_oversubscription: float | None
    paths_between_tors: int | None
    max_segments_per_pod: int | None
    max_gpus_per_pod: int | None
    max_pods: int | None
    nodes: int
    directed_links: int
    frontend: Frontend | None = field(default=None, metadata=OMIT)

    def heading(self) -> str:
        from hpn.topology.presets import PRESETS

        return PRESETS.summary(self.preset) if self.preset in PRESETS else self.preset

    def rows(self) -> list[tuple[str, Any]]:
        rows: list[tuple[str, Any]] = [
            ("preset", self.preset),
            ("pods", self.pods),
            ("segments", self.segments),
            ("GPUs (active)", self.gpus),
            ("backup GPUs", self.backup_gpus),
            ("hosts (incl. backup)", self.hosts),
        ]
        rows += [(f"{k} switches", v) for k, v in self.switches.items()]
        rows += [(f"{k} links", v) for k, v in self.links.items()]
        rows += [
            ("ToR oversubscription", self.tor_oversubscription),
            ("Agg oversubscription", self.agg_oversubscription),
            ("paths between ToRs", self.paths_between_tors),
            ("max segments per pod", self.max_segments_per_pod),
            ("max GPUs per pod", self.max_gpus_per_pod),
            ("max pods", self.max_pods),
        ]
        if self.frontend is not None:
            fe = self.frontend
            rows += [("frontend NICs", fe["nics"])]
            rows += [(f"frontend {k} switches", v) for k, v in fe["switches"].items()]
        return rows


def summary(cfg: FabricConfig) -> Outcome[SummaryResult]:
    """Counts, oversubscription, paths and limits of a fabric."""
    from hpn.topology import build
    from hpn.topology.summary import summarize

    s = summarize(build(cfg.fabric))
    rows = [("switches", k, v) for k, v in s["switches"].items()]
    rows += [("links", k, v) for k, v in s["links"].items()]
    counts: dict[str, list[Any]] = {"what": [r[0] for r in rows], "tier": [r[1] for r in rows]}
    counts["count"] = [int(r[2]) for r in rows]
    return Outcome(SummaryResult.from_dict(s), {"counts": counts})


# --- import --------------------------------------------------------------------------------


class ReadOptions(Model):
    """The ``[read]`` table of ``hpn topo import``."""

    path: FilePath = Field(
        description="a SimAI/ns-3 topology, .json or .graphml file",
        json_schema_extra={"flag": None},
    )
    format: str | None = Field(None, description="json, graphml or simai (default: from the file)")


class ImportConfig(Model):
    """``hpn topo import``: ``[read]``."""

    read: ReadOptions


@dataclass
class ImportResult(SummaryResult):
    def heading(self) -> str:
        return "imported fabric"


def import_(cfg: ImportConfig) -> Outcome[ImportResult]:
    """Read a fabric file and summarize it."""
    from hpn.topology.export import read
    from hpn.topology.summary import summarize

    o = cfg.read
    return Outcome(ImportResult.from_dict(summarize(read(o.path, o.format))))


# --- export, draw --------------------------------------------------------------------------


@dataclass
class WroteResult(Result):
    """A file a command wrote."""

    wrote: str
    format: str | None = field(default=None, metadata=OMIT)

    def lines(self) -> list[str]:
        return [f"wrote {self.wrote}" + (f" ({self.format})" if self.format else "")]


class ExportOptions(Model):
    """The ``[export]`` table."""

    out: FilePath = Field(description="file to write")
    format: str = Field("json", description="json, graphml or simai")
    gpu_type: Literal["A100", "A800", "H100", "H800"] = Field(
        "H800", description="GPU type in the SimAI header (the types SimAI's ns-3 reader knows)"
    )


class ExportConfig(Model):
    """``hpn topo export``: ``[fabric]`` and ``[export]``."""

    fabric: FabricSpec = fabric_field()
    export: ExportOptions


def export(cfg: ExportConfig) -> Outcome[WroteResult]:
    """Write a fabric as JSON (lossless), GraphML or a SimAI/ns-3 topology file."""
    from hpn.topology import build
    from hpn.topology.export import FORMATS, write

    o = cfg.export
    if o.format not in FORMATS:
        raise InputError("--format", f"choose from {', '.join(FORMATS)}, got {o.format!r}")
    from hpn.store.record import check_out_file

    check_out_file(Path(o.out))
    write(build(cfg.fabric), o.format, Path(o.out), o.gpu_type)
    return Outcome(WroteResult(o.out, o.format))


class DrawOptions(Model):
    """The ``[draw]`` table."""

    out: FilePath = Field("segment.png", description="picture file (.png, .svg, .pdf)")
    segment: int = Field(0, ge=0, description="segment index within the pod")
    pod: int = Field(0, ge=0, description="pod index")


class DrawConfig(Model):
    """``hpn topo draw``: ``[fabric]`` and ``[draw]``."""

    fabric: FabricSpec = fabric_field()
    draw: DrawOptions = Field(default_factory=DrawOptions)


def draw(cfg: DrawConfig) -> Outcome[WroteResult]:
    """Draw one segment: hosts, ToRs by rail and plane, the Aggs above."""
    from hpn.store.record import check_out_file
    from hpn.topology import build
    from hpn.topology.draw import draw_segment

    o = cfg.draw
    check_out_file(Path(o.out), suffixes=(".png", ".svg", ".pdf"))
    draw_segment(build(cfg.fabric), Path(o.out), pod=o.pod, segment=o.segment)
    return Outcome(WroteResult(o.out))


# --- bom -----------------------------------------------------------------------------------


class BomConfig(Model):
    """``hpn topo bom``: ``[fabric]`` and optional ``[prices]``."""

    fabric: FabricSpec = fabric_field()
    prices: dict[str, Any] | None = Field(
        None, description="switch/transceiver/cable price tables (see Prices)"
    )


@dataclass
class BomResult(Result):
    switches: list[SwitchRow]
    links: list[LinkRow]
    totals: BomTotals
    chip: ChipFigures
    thermal: dict[str, HeatSinkFit]
    cost: BomCost | None = field(default=None, metadata=OMIT)

    def lines(self) -> list[str]:
        out = ["switches:", f"{'tier':10s} {'chip':10s} {'count':>10s} {'power_w':>12s}"]
        out += [
            f"{s['tier']:10s} {s['chip']:10s} {s['count']:>10,} {s['power_w']:>12,.0f}"
            for s in self.switches
        ]
        out += ["links:", f"{'tier':10s} {'speed':10s} {'cables':>10s} {'transceivers':>12s}"]
        out += [
            f"{x['tier']:10s} {x['speed']:10s} {x['cables']:>10,} {x['transceivers']:>12,}"
            for x in self.links
        ]
        c = self.chip
        fits = [n for n, v in self.thermal.items() if v["fits"]]
        out.append(
            f"chip {c['capacity']}: {c['power_w']:.0f} W"
            + (" (extrapolated)" if c["power_extrapolated"] else "")
            + f"; heat sinks that can cool it: {', '.join(fits) or 'none'}; "
            f"switch power {self.totals['switch_power_kw']:,} kW"
        )
        if self.cost is not None:
            cur = self.cost.get("currency", "")
            parts = [
                f"{k} {v:,.0f}" for k, v in self.cost.items() if k not in ("currency", "total")
            ]
            out.append(f"cost ({cur}): {', '.join(parts)}; total {self.cost['total']:,.0f}")
        return out


def bom(cfg: BomConfig) -> Outcome[BomResult]:
    """Bill of materials: switches, optics, cables, switch power, heat-sink check, cost."""
    from pydantic import ValidationError

    from hpn.config import one_line
    from hpn.topology import build
    from hpn.topology.bom import Prices, bill_of_materials

    prices = None
    if cfg.prices is not None:
        try:
            prices = Prices(**cfg.prices)
        except ValidationError as e:
            raise one_line(e, "prices") from None
    return Outcome(BomResult.from_dict(bill_of_materials(build(cfg.fabric), prices)))


def _read_path(path: Path) -> dict[str, Any]:
    return {"read": {"path": str(path)}}


def load_prices(path: Path) -> dict[str, Any]:
    """A ``--prices`` file: its ``[prices]`` table."""
    from hpn.config import load_toml

    data = load_toml(path)
    if "prices" not in data:
        raise InputError(str(path), "expected a [prices] table")
    return {"prices": data["prices"]}


SUMMARY = Command("topo summary", FabricConfig, summary, flags=("fabric",))
IMPORT = Command(
    "topo import",
    ImportConfig,
    import_,
    flags=("read",),
    stored=False,
    files=(FileInput("path", "A SimAI/ns-3 topology, .json or .graphml file.", _read_path),),
)
EXPORT = Command("topo export", ExportConfig, export, flags=("fabric", "export"), stored=False)
DRAW = Command("topo draw", DrawConfig, draw, flags=("fabric", "draw"), stored=False)
BOM = Command(
    "topo bom",
    BomConfig,
    bom,
    flags=("fabric",),
    stored=False,
    files=(
        FileInput(
            "prices", "TOML with [prices] switch/transceiver/cable tables.", load_prices, False
        ),
    ),
)
