"""`hpn reproduce [hpn|aegaeon|all]`: the papers' claims beside the model, in one report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hpn.cli.output import JsonOpt, emit_json, stderr, stdout
from hpn.cli.store_opts import folder_name


def reproduce(
    paper: Annotated[str, typer.Argument(help="hpn, aegaeon or all.")] = "all",
    quick: Annotated[bool, typer.Option("--quick", help="The quick subset (CI).")] = False,
    only: Annotated[
        str | None, typer.Option("--only", help="Claim ids, comma-separated (ID* a prefix).")
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", help="Report folder (default: a new run folder).", parser=folder_name
        ),
    ] = None,
    executor: Annotated[
        str, typer.Option(help="Where claims run: inline, processes or dask (LocalCluster).")
    ] = "inline",
    workers: Annotated[int, typer.Option(help="Processes or dask workers.")] = 2,
    list_: Annotated[bool, typer.Option("--list", help="List the claims and exit.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Every claim of both papers the model covers: paper vs model, band, verdict, figure."""
    from hpn.app import command
    from hpn.reproduce import select

    if list_:
        for c in select(paper, quick, only):
            stdout.print(f"{c.id:34s} {c.source:24s} {c.title}", highlight=False, soft_wrap=True)
        return
    cmd = command("reproduce")
    data: dict = {"reproduce": {"paper": paper, "quick": quick, "only": only}}
    data["reproduce"] |= {"executor": executor, "workers": workers}
    if out is not None:
        data["reproduce"]["out"] = str(out)
    cfg = cmd.parse(data)

    def mapper(fn, tasks):
        from hpn.sweep.executors import run_calls

        return run_calls(fn, tasks, executor, workers)

    outcome = cmd.run(
        cfg,
        say=lambda m: stderr.print(f"> {m}", highlight=False, markup=False),
        mapper=mapper,
    )
    if json_out:
        emit_json(outcome.result.to_json())
        return
    for line in outcome.result.lines():
        stdout.print(line, highlight=False, soft_wrap=True)
