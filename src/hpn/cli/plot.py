"""`hpn plot RUN...`: draw a run's plots, or one chart over several runs."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from hpn.cli.output import JsonOpt, emit_json, stdout


def plot(
    runs: Annotated[list[str], typer.Argument(help="Run ids, id prefixes, folders or 'latest'.")],
    kind: Annotated[
        list[str] | None,
        typer.Option("--kind", help="Plot kind (repeatable); default: all a run allows."),
    ] = None,
    fmt: Annotated[str, typer.Option("--format", help="png, html or both.")] = "both",
    x: Annotated[str | None, typer.Option(help="xy: config field on x, e.g. pool.rate.")] = None,
    y: Annotated[str | None, typer.Option(help="xy: result figure on y.")] = None,
    by: Annotated[str | None, typer.Option(help="xy: config field, one line per value.")] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Folder (default: RUN/plots, or ROOT/plots).")
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Link utilization per tier, FCT CDF, busbw vs size, timeline, fault, SLO vs load, xy."""
    from hpn.errors import InputError
    from hpn.plots import FORMATS, available, draw, write_chart
    from hpn.plots.kinds import xy
    from hpn.store import check_folder, open_run, runs_root

    formats = FORMATS if fmt == "both" else (fmt,)
    if fmt not in (*FORMATS, "both"):
        raise InputError("--format", f"choose from png, html, both; got {fmt!r}")
    opened = [open_run(r) for r in runs]
    kinds = list(kind or [])
    if x or y:
        if not (x and y):
            raise InputError("--x/--y", "xy needs both --x CONFIG.FIELD and --y RESULT.FIGURE")
        kinds = [k for k in kinds if k != "xy"]
    elif not kinds:
        kinds = sorted(set.intersection(*(set(available(r)) for r in opened)))
        if not kinds:
            raise InputError("--kind", "these runs have no tables a plot kind draws; try --x/--y")
    if out is None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        out = opened[0].path / "plots" if len(opened) == 1 else runs_root() / "plots" / stamp
    check_folder(out, "--out")  # before drawing: a file in the way, read-only, no space
    files: list[Path] = []
    if x and y:
        files += write_chart(xy(opened, x, y, by), out / "xy", formats)
    for k in kinds:
        files += write_chart(draw(k, opened), out / k, formats)
    if json_out:
        emit_json({"files": [str(f) for f in files]})
    else:
        for f in files:
            stdout.print(str(f), highlight=False, soft_wrap=True)
