"""`hpn topo ...`: build, summarize, export, import, price and draw fabrics."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from hpn.cli.fabric_opts import fabric_command
from hpn.cli.output import JsonOpt, emit_json, kv_table, stdout
from hpn.cli.store_opts import OutOpt, PlotOpt, check_out, save
from hpn.config import Model, load_toml
from hpn.errors import InputError
from hpn.store import runnable
from hpn.topology import build
from hpn.topology.presets import PRESETS

app = typer.Typer(
    help="Build fabrics: summary, export, import, bill of materials, pictures.",
    no_args_is_help=True,
)


def summary_rows(s: dict) -> list[tuple[str, object]]:
    rows: list[tuple[str, object]] = [
        ("preset", s["preset"]),
        ("pods", s["pods"]),
        ("segments", s["segments"]),
        ("GPUs (active)", s["gpus"]),
        ("backup GPUs", s["backup_gpus"]),
        ("hosts (incl. backup)", s["hosts"]),
    ]
    rows += [(f"{k} switches", v) for k, v in s["switches"].items()]
    rows += [(f"{k} links", v) for k, v in s["links"].items()]
    rows += [
        ("ToR oversubscription", s["tor_oversubscription"]),
        ("Agg oversubscription", s["agg_oversubscription"]),
        ("paths between ToRs", s["paths_between_tors"]),
        ("max segments per pod", s["max_segments_per_pod"]),
        ("max GPUs per pod", s["max_gpus_per_pod"]),
        ("max pods", s["max_pods"]),
    ]
    if "frontend" in s:
        fe = s["frontend"]
        rows += [("frontend NICs", fe["nics"])]
        rows += [(f"frontend {k} switches", v) for k, v in fe["switches"].items()]
    return rows


def run_summary(config: dict):
    """Runnable ``topo summary``: ``{"fabric": {preset, spec fields}}`` -> the summary."""
    from hpn.store.runnable import Outcome
    from hpn.topology import spec_from_table
    from hpn.topology.summary import summarize

    spec = spec_from_table(config.get("fabric"))
    s = summarize(build(spec))
    rows = [("switches", k, v) for k, v in s["switches"].items()]
    rows += [("links", k, v) for k, v in s["links"].items()]
    counts = {"what": [r[0] for r in rows], "tier": [r[1] for r in rows]}
    counts["count"] = [int(r[2]) for r in rows]
    return Outcome(s, {"counts": counts}, {"fabric": spec.model_dump(mode="json")})


@app.command()
@fabric_command
def summary(
    spec: Model,
    json_out: JsonOpt = False,
    out: OutOpt = None,
    plot: PlotOpt = False,
) -> None:
    """Counts, oversubscription, paths and limits of a fabric."""
    check_out(out)
    outcome = runnable.get("topo summary")({"fabric": spec.model_dump(mode="json")})
    save("topo summary", outcome, out, plot, json_out)
    s = outcome.result
    if json_out:
        emit_json(s)
    else:
        stdout.print(kv_table(PRESETS[s["preset"]].summary, summary_rows(s)))


@app.command()
@fabric_command
def export(
    spec: Model,
    out: Annotated[Path, typer.Option("--out", help="File to write.")],
    fmt: Annotated[str, typer.Option("--format", help="json, graphml or simai.")] = "json",
    gpu_type: Annotated[str, typer.Option(help="GPU type in the SimAI header.")] = "H800",
) -> None:
    """Write a fabric as JSON (lossless), GraphML or a SimAI/ns-3 topology file."""
    from hpn.topology.export import FORMATS, write

    if fmt not in FORMATS:
        raise InputError("--format", f"choose from {', '.join(FORMATS)}, got {fmt!r}")
    write(build(spec), fmt, out, gpu_type)
    stdout.print(f"wrote {out} ({fmt})", highlight=False)


@app.command("import")
def import_(
    path: Annotated[Path, typer.Argument(help="A SimAI/ns-3 topology, .json or .graphml file.")],
    fmt: Annotated[str | None, typer.Option("--format", help="json, graphml or simai.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Read a fabric file and print its summary."""
    from hpn.topology.export import read
    from hpn.topology.summary import summarize

    s = summarize(read(path, fmt))
    if json_out:
        emit_json(s)
    else:
        stdout.print(kv_table(f"imported from {path}", summary_rows(s)))


@app.command()
@fabric_command
def bom(
    spec: Model,
    prices: Annotated[
        Path | None, typer.Option(help="TOML with [prices] switch/transceiver/cable tables.")
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Bill of materials: switches, optics, cables, switch power, heat-sink check, cost."""
    from rich.table import Table

    from hpn.config import one_line
    from hpn.topology.bom import Prices, bill_of_materials

    price_model = None
    if prices is not None:
        data = load_toml(prices)
        if "prices" not in data:
            raise InputError(str(prices), "expected a [prices] table")
        from pydantic import ValidationError

        try:
            price_model = Prices(**data["prices"])
        except ValidationError as e:
            raise one_line(e, "prices") from None
    b = bill_of_materials(build(spec), price_model)
    if json_out:
        emit_json(b)
        return
    t = Table(title="switches", title_justify="left")
    for col in ("tier", "chip", "count", "power_w"):
        t.add_column(col, justify="right" if col in ("count", "power_w") else "left")
    for s in b["switches"]:
        t.add_row(s["tier"], s["chip"], f"{s['count']:,}", f"{s['power_w']:,.0f}")
    stdout.print(t)
    t = Table(title="links", title_justify="left")
    for col in ("tier", "speed", "cables", "transceivers"):
        t.add_column(col, justify="right" if col in ("cables", "transceivers") else "left")
    for x in b["links"]:
        t.add_row(x["tier"], x["speed"], f"{x['cables']:,}", f"{x['transceivers']:,}")
    stdout.print(t)
    chip_info = b["chip"]
    fits = [n for n, v in b["thermal"].items() if v["fits"]]
    stdout.print(
        f"chip {chip_info['capacity']}: {chip_info['power_w']:.0f} W"
        + (" (extrapolated)" if chip_info["power_extrapolated"] else "")
        + f"; heat sinks that can cool it: {', '.join(fits) or 'none'}; "
        f"switch power {b['totals']['switch_power_kw']:,} kW",
        highlight=False,
    )
    if "cost" in b:
        stdout.print(json.dumps(b["cost"]))


@app.command()
@fabric_command
def draw(
    spec: Model,
    out: Annotated[Path, typer.Option("--out", help="Picture file (.png, .svg, .pdf).")] = Path(
        "segment.png"
    ),
    segment: Annotated[int, typer.Option(help="Segment index within the pod.")] = 0,
    pod: Annotated[int, typer.Option(help="Pod index.")] = 0,
) -> None:
    """Draw one segment: hosts, ToRs by rail and plane, the Aggs above."""
    from hpn.topology.draw import draw_segment

    draw_segment(build(spec), out, pod=pod, segment=segment)
    stdout.print(f"wrote {out}", highlight=False)
