"""`hpn sweep SWEEP.toml`: run a grid of configs of any runnable command, resumably."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hpn.cli.output import JsonOpt, emit_json, kv_table, stderr, stdout


def sweep(
    path: Annotated[Path, typer.Argument(help="Sweep file (TOML): command, base, grid, zip.")],
    workers: Annotated[int, typer.Option(help="Processes (or dask workers) in parallel.")] = 1,
    dask: Annotated[
        str | None,
        typer.Option(help="Run on dask: 'local' (a LocalCluster on 127.0.0.1) or tcp://HOST:PORT."),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Run every point of a sweep; completed points are reused when run again (kill-safe)."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from hpn.sweep import load_sweep, run_sweep

    spec = load_sweep(path)
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=stderr.real,
        transient=True,
    )
    task = bar.add_task(f"sweep {spec.name}", total=None)
    first: list[int] = []

    def progress(done: int, total: int) -> None:
        if not first:  # reused points do not count towards the ETA
            first.append(done)
            bar.reset(task, total=total - done, completed=0)
        bar.update(task, completed=done - first[0])

    with bar:
        out = run_sweep(
            spec, workers=workers, dask=dask, source=path.read_text(), progress=progress
        )
    if json_out:
        emit_json(out)
    else:
        rows = [(k, v) for k, v in out.items() if k != "errors"]
        rows += [(f"failed: {k}", v) for k, v in out["errors"].items()]
        stdout.print(kv_table(f"sweep {out['sweep']}", rows))
    if out["failed"]:
        raise typer.Exit(1)
