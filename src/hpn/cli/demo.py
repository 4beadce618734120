"""`hpn demo`: the main job on built-in defaults."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hpn.cli.output import kv_table, stderr, stdout
from hpn.cli.store_opts import folder_name


def demo(
    out: Annotated[
        Path,
        typer.Option("--out", help="Folder for the report and picture.", parser=folder_name),
    ] = Path("out/demo"),
) -> None:
    """HPN against DCN+: fabrics, a collective sweep, a training iteration, a serving pool."""
    from hpn.demo import run_demo
    from hpn.store.record import check_folder, check_out

    check_folder(out, "--out")  # before any work: a file in the way, a read-only folder
    check_out(None)  # the store the demo's runs go to
    d = run_demo(out, say=lambda msg: stderr.print(f"> {msg}", highlight=False))
    stdout.print(kv_table(f"hpn demo ({d.wall_s:.0f} s, {len(d.runs)} runs stored)", d.figures))
    stdout.print(f"report: {d.report}", highlight=False)
    for line in d.claims:
        stdout.print(line, highlight=False, soft_wrap=True)
    stdout.print(f"picture of one HPN segment: {out / 'hpn-segment.png'}", highlight=False)
    stdout.print("browse the runs: .venv/bin/hpn dash  ->  http://127.0.0.1:8765/", highlight=False)
