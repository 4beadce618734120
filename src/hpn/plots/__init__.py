"""Plots of runs: PNG (matplotlib) and interactive HTML (plotly), from one ``Chart`` each.

``render_run(run)`` draws every kind the run's tables allow into ``RUN/plots/``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from hpn.errors import InputError
from hpn.plots.chart import Chart
from hpn.plots.kinds import KINDS, available, draw
from hpn.store.run import PLOTS, Run

FORMATS = ("png", "html")

__all__ = ["FORMATS", "KINDS", "Chart", "available", "draw", "render_run", "write_chart"]


def write_chart(chart: Chart, stem: Path, formats: Iterable[str] = FORMATS) -> list[Path]:
    """Write ``STEM.png`` and/or ``STEM.html``."""
    out = []
    for fmt in formats:
        if fmt == "png":
            from hpn.plots.png import draw_png

            out.append(draw_png(chart, stem.with_suffix(".png")))
        elif fmt == "html":
            from hpn.plots.html import draw_html

            out.append(draw_html(chart, stem.with_suffix(".html")))
        else:
            raise InputError("--format", f"choose from {', '.join(FORMATS)}, got {fmt!r}")
    return out


def render_run(
    run: Run, kinds: list[str] | None = None, formats: Iterable[str] = FORMATS
) -> list[Path]:
    """Draw ``kinds`` (default: all the run's tables allow) into ``RUN/plots/``."""
    files: list[Path] = []
    for name in kinds if kinds is not None else available(run):
        files += write_chart(draw(name, [run]), run.path / PLOTS / name, formats)
    return files
