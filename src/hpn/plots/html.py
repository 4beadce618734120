"""Drawing a ``Chart`` as interactive HTML with plotly; its JavaScript inline (no CDN)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np

from hpn.plots.chart import Chart
from hpn.store.atomic import write_text


def figure(chart: Chart):
    """A plotly ``Figure`` of the chart."""
    import plotly.graph_objects as go

    fig = go.Figure()
    if chart.kind == "heatmap":
        z = chart.z if chart.z is not None else np.zeros((0, 0))
        fig.add_trace(
            go.Heatmap(
                z=chart.z,
                x=chart.x,
                y=chart.rows,
                colorbar={"title": chart.zlabel},
                zmin=0,
                zmax=max(1.0, float(np.nanmax(z)) if z.size else 1),
            )
        )
    elif chart.kind == "gantt":
        seen: set[str] = set()
        for g in dict.fromkeys(b.group for b in chart.bars):
            bs = [b for b in chart.bars if b.group == g]
            fig.add_trace(
                go.Bar(
                    y=[b.row for b in bs],
                    x=[b.end - b.start for b in bs],
                    base=[b.start for b in bs],
                    orientation="h",
                    name=g,
                    showlegend=g not in seen,
                )
            )
            seen.add(g)
        fig.update_layout(barmode="overlay")
        fig.update_yaxes(autorange="reversed")
    elif chart.kind == "bar":
        for ln in chart.lines:
            fig.add_trace(go.Bar(x=chart.categories, y=ln.y, name=ln.name))
    else:
        for ln in chart.lines:
            shape = {"shape": "hv"} if ln.step else {}
            mode = "lines" if ln.step else "lines+markers"
            fig.add_trace(go.Scatter(x=ln.x, y=ln.y, name=ln.name, mode=mode, line=shape))
    for x, label, level in chart.marker_levels():
        fig.add_vline(
            x=x,
            line_dash="dash",
            line_color="red",
            annotation_text=label,
            annotation_yshift=-18 * level,
        )
    fig.update_layout(
        title=chart.title,
        xaxis_title=chart.xlabel,
        yaxis_title=chart.ylabel,
        template="plotly_white",
        margin={"l": 60, "r": 20, "t": 50, "b": 50},
        height=420,
    )
    if chart.log_x:
        fig.update_xaxes(type="log")
    if chart.log_y:
        fig.update_yaxes(type="log")
    if chart.xticks:
        fig.update_xaxes(
            tickvals=[v for v, _ in chart.xticks], ticktext=[t for _, t in chart.xticks]
        )
    if chart.y_from_zero:
        fig.update_yaxes(rangemode="tozero")
    return fig


@cache
def plotly_js() -> str:
    """plotly.js as shipped inside the plotly package."""
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def div(chart: Chart) -> str:
    """An HTML fragment for the chart, without plotly.js (include it once per page)."""
    return figure(chart).to_html(full_html=False, include_plotlyjs=False)


def draw_html(chart: Chart, path: Path) -> Path:
    """A standalone HTML file with plotly.js inline: opens offline."""
    return write_text(path, figure(chart).to_html(full_html=True, include_plotlyjs=True))
