"""`hpn demo`: the main job on built-in defaults."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hpn.cli.output import kv_table, stdout


def demo(
    out: Annotated[Path, typer.Option("--out", help="Folder for the demo's files.")] = Path(
        "out/demo"
    ),
) -> None:
    """Build the paper's HPN pod and DCN+, print their summaries, draw one HPN segment."""
    import time

    from hpn.cli.topo import summary_rows
    from hpn.topology import build
    from hpn.topology.summary import summarize

    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    pod = build("hpn")
    built = time.perf_counter() - t0
    stdout.print(kv_table(f"HPN pod (built in {built:.2f} s)", summary_rows(summarize(pod))))
    stdout.print(
        kv_table("DCN+ pod (previous generation)", summary_rows(summarize(build("dcn-plus"))))
    )
    try:
        from hpn.topology.draw import draw_segment
    except ImportError:  # pragma: no cover - matplotlib is the `plot` extra
        stdout.print("install the 'plot' extra (matplotlib) to draw the segment")
        return
    picture = draw_segment(pod, out / "hpn-segment.png")
    stdout.print(f"wrote {picture}", highlight=False)
