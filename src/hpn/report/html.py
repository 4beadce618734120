"""The HTML report: one page, one section per run, plots inline and interactive."""

from __future__ import annotations

import html
import json
import time
from collections.abc import Iterable
from pathlib import Path

from hpn.plots.chart import Chart
from hpn.store.dotted import flatten
from hpn.store.run import Run, open_run

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}
h1{font-size:1.6em}h2{border-top:1px solid #ddd;padding-top:1em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:2px 8px}
td.v{text-align:right;font-variant-numeric:tabular-nums}details{margin:.5em 0}
.muted{color:#777}
"""


def _fmt(v: object) -> str:
    return f"{v:.4g}" if isinstance(v, float) else html.escape(str(v))


def _kv(d: dict) -> str:
    rows = "".join(
        f"<tr><th>{html.escape(k)}</th><td class=v>{_fmt(v)}</td></tr>" for k, v in d.items()
    )
    return f"<table>{rows}</table>"


def write_html(
    runs: Iterable[Run | str | Path],
    path: str | Path,
    *,
    title: str = "hpn report",
    charts: Iterable[Chart] = (),
    intro: str = "",
) -> Path:
    """Write the report of ``runs`` (Run objects, ids or folders) to ``path``; returns it.

    ``charts``: extra charts drawn first (e.g. comparisons across the runs).
    """
    from hpn.plots import available, draw
    from hpn.plots.html import div, plotly_js
    from hpn.store.atomic import write_text

    opened = [r if isinstance(r, Run) else open_run(r) for r in runs]
    parts = [
        f"<!doctype html><html><head><meta charset=utf-8><title>{html.escape(title)}</title>",
        f"<style>{_CSS}</style><script>{plotly_js()}</script></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f"<p class=muted>{time.strftime('%Y-%m-%d %H:%M:%S')} · {len(opened)} run(s)</p>",
        f"<p>{html.escape(intro)}</p>" if intro else "",
    ]
    parts += [div(c) for c in charts]
    for r in opened:
        parts.append(f"<h2 id='{html.escape(r.id)}'>{html.escape(r.command)}: ")
        parts.append(f"{html.escape(r.label)}</h2><p class=muted>{html.escape(str(r.path))}</p>")
        parts.append(_kv(flatten(r.result)))
        cfg = json.dumps(r.config, indent=2)
        parts.append(f"<details><summary>config</summary><pre>{html.escape(cfg)}</pre></details>")
        parts += [div(draw(k, [r])) for k in available(r)]
    parts.append("</body></html>")
    return write_text(Path(path), "\n".join(parts))
