"""Drawing a ``Chart`` as a PNG with matplotlib (Agg, no display needed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hpn.plots.chart import Chart
from hpn.store.atomic import write_with


def _colors(names: list[str]) -> dict[str, object]:
    import matplotlib

    cmap = matplotlib.colormaps["tab10"]
    return {n: cmap(i % 10) for i, n in enumerate(dict.fromkeys(names))}


def draw_png(chart: Chart, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=110)
    try:
        if chart.kind == "heatmap":
            z = chart.z if chart.z is not None else np.zeros((0, 0))
            xs = chart.x if chart.x is not None else np.arange(z.shape[1])
            mesh = ax.pcolormesh(
                np.arange(len(xs) + 1),
                np.arange(len(chart.rows) + 1),
                z,
                vmin=0,
                vmax=max(1.0, float(np.nanmax(z)) if z.size else 1),
            )
            step = max(1, len(xs) // 8)
            ax.set_xticks(np.arange(len(xs))[::step] + 0.5, [f"{v:.3g}" for v in xs[::step]])
            ax.set_yticks(np.arange(len(chart.rows)) + 0.5, chart.rows)
            fig.colorbar(mesh, ax=ax, label=chart.zlabel)
        elif chart.kind == "gantt":
            rows = list(dict.fromkeys(b.row for b in chart.bars))
            colors = _colors([b.group for b in chart.bars])
            for b in chart.bars:
                ax.barh(rows.index(b.row), b.end - b.start, left=b.start, color=colors[b.group])
            ax.set_yticks(range(len(rows)), rows)
            ax.invert_yaxis()
            handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in colors.values()]
            ax.legend(handles, list(colors), loc="best", fontsize="small")
        elif chart.kind == "bar":
            n = max(len(chart.lines), 1)
            w = 0.8 / n
            for i, ln in enumerate(chart.lines):
                ax.bar(ln.x + (i - (n - 1) / 2) * w, ln.y, w, label=ln.name)
            ax.set_xticks(range(len(chart.categories)), chart.categories, rotation=30, ha="right")
        else:
            for ln in chart.lines:
                if ln.step:
                    ax.step(ln.x, ln.y, where="post", label=ln.name)
                else:
                    ax.plot(ln.x, ln.y, marker="o", ms=3, label=ln.name)
        for x, label, level in chart.marker_levels():
            ax.axvline(x, color="red", ls="--", lw=1)
            ax.annotate(
                label,
                (x, 1 - 0.25 * level),
                xycoords=("data", "axes fraction"),
                rotation=90,
                va="top",
                ha="right",
                fontsize="small",
                color="red",
            )
        if chart.log_x:
            ax.set_xscale("log")
        if chart.log_y:
            ax.set_yscale("log")
        if chart.xticks:
            ax.set_xticks([v for v, _ in chart.xticks], [t for _, t in chart.xticks])
            ax.minorticks_off()
        if chart.y_from_zero:
            ax.set_ylim(
                bottom=0, top=max(ax.get_ylim()[1], 1.05 if chart.meta.get("relative") else 0)
            )
        if chart.kind in ("line", "bar") and len(chart.lines) > 1:
            ax.legend(fontsize="small")
        ax.set(title=chart.title, xlabel=chart.xlabel, ylabel=chart.ylabel)
        ax.grid(alpha=0.3)
        fig.tight_layout()
        return write_with(path, lambda p: fig.savefig(p, format="png"))
    finally:
        plt.close(fig)
