"""The dashboard's HTML pages: server-rendered tables; charts and the explorer drawn by JS."""

from __future__ import annotations

import json
import time
from html import escape
from typing import Any
from urllib.parse import quote

from hpn.store.dotted import flatten
from hpn.store.headline import headline
from hpn.store.run import Run


def _fmt(v: Any) -> str:
    return escape(f"{v:.4g}" if isinstance(v, float) else "" if v is None else str(v))


def page(title: str, body: str, *, plotly: bool = False) -> str:
    js = '<script src="/static/plotly.min.js"></script>' if plotly else ""
    return (
        f"<!doctype html><html><head><meta charset=utf-8><title>{escape(title)} · hpn</title>"
        f'<link rel=stylesheet href="/static/dash.css">{js}'
        '<script defer src="/static/dash.js"></script></head><body>'
        '<nav><b>hpn</b> <a href="/">runs</a> <a href="/fabric">fabric</a> '
        f'<a href="/new">new run</a></nav><main><h1>{escape(title)}</h1>{body}</main>'
        "</body></html>"
    )


def _table(head: list[str], rows: list[list[str]], cls: str = "") -> str:
    th = "".join(f"<th>{h}</th>" for h in head)
    trs = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table class="{cls}"><thead><tr>{th}</tr></thead><tbody>{trs}</tbody></table>'


def _run_link(rid: str) -> str:
    return f'<a class=run href="/runs/{quote(rid)}">{escape(rid)}</a>'


def runs_page(rows: list[dict[str, Any]], root: str) -> str:
    body = [f"<p class=muted>{len(rows)} run(s) in {escape(root)}. Tick two to compare.</p>"]
    body.append("<button id=compare-btn disabled>compare selected</button>")
    trs = []
    for r in rows:
        top = headline(r["command"], r["figures"])
        figs = ", ".join(f"{escape(k)}={_fmt(v)}" for k, v in top.items())
        created = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r["created"]))
        tick = f'<input type=checkbox class=pick value="{escape(r["id"])}">'
        trs.append(
            [
                tick,
                _run_link(r["id"]),
                escape(r["command"])
                + (f"<br><small>{escape(r['label'])}</small>" if r.get("label") else ""),
                escape(r["status"]),
                created,
                _fmt(r["wall_s"]),
                f"<small>{figs}</small>",
            ]
        )
    body.append(
        _table(["", "run", "command", "status", "created", "wall (s)", "figures"], trs, "runs")
    )
    return page("runs", "".join(body))


def _charts(run_id: str, kinds: list[str]) -> str:
    return "".join(
        f'<div class=chart data-chart="/api/runs/{quote(run_id)}/charts/{quote(k)}"></div>'
        for k in kinds
    )


def busbw_table(t: dict[str, Any]) -> str:
    """The nccl-tests table of a collective run: per fabric and size, time, algbw, busbw."""
    from hpn.plots.kinds import size_text

    cols = [c for c in ("time_s", "algbw_gbps", "busbw_gbps") if c in t]
    head = ["fabric", "size"] + [
        {"time_s": "time (s)", "algbw_gbps": "algbw (GB/s)", "busbw_gbps": "busbw (GB/s)"}[c]
        for c in cols
    ]
    n = len(t["size_bytes"])
    fabric = t["fabric"] if "fabric" in t else [""] * n
    rows = [
        [escape(str(fabric[i])), escape(size_text(t["size_bytes"][i]))]
        + [_fmt(float(t[c][i])) for c in cols]
        for i in range(n)
    ]
    return "<h2>bus bandwidth</h2>" + _table(head, rows, "busbw")


def run_page(r: Run, kinds: list[str]) -> str:
    figs = [[escape(k), _fmt(v)] for k, v in flatten(r.result).items()]
    cfg = [[escape(k), _fmt(v)] for k, v in flatten(r.config, depth=4).items()]
    body = [f"<p class=muted>{escape(r.command)} · {escape(str(r.path))}</p>"]
    if isinstance(r.config.get("fabric"), dict):
        body.append(f'<p><a id=explore href="/fabric?run={quote(r.id)}">explore its fabric</a></p>')
    body.append("<div class=cols><section><h2>result</h2>")
    body.append(_table(["figure", "value"], figs, "figures"))
    body.append("</section><section><h2>config</h2>")
    body.append(_table(["field", "value"], cfg, "config") + "</section></div>")
    if "busbw" in r.tables:
        body.append(busbw_table(r.table("busbw")))
    if kinds:
        body.append("<h2>plots</h2>" + _charts(r.id, kinds))
    files = [
        f'<a href="/api/runs/{quote(r.id)}/files/plots/{quote(p.name)}">{escape(p.name)}</a>'
        for p in r.plots
    ]
    if files:
        body.append("<p>files: " + " · ".join(files) + "</p>")
    return page(f"run {r.id}", "".join(body), plotly=bool(kinds))


def compare_page(a: Run, b: Run, c: dict[str, Any], ka: list[str], kb: list[str]) -> str:
    head = ["", _run_link(a.id), _run_link(b.id)]
    cfg = [[escape(k), _fmt(v[0]), _fmt(v[1])] for k, v in c["config"].items()]
    figs = []
    for k, v in c["figures"].items():
        cls = " class=diff" if k in c["differing_figures"] else ""
        figs.append([f"<span{cls}>{escape(k)}</span>", _fmt(v[0]), _fmt(v[1])])
    body = [
        "<h2>config fields that differ</h2>",
        _table(head, cfg, "config-diff") if cfg else "<p>none</p>",
        "<h2>figures</h2>",
        _table(head, figs, "figures"),
    ]
    for name, per in c.get("tables", {}).items():
        keys = list(dict.fromkeys(k for p in per if p for k in p))
        rows = [[escape(k), _fmt((per[0] or {}).get(k)), _fmt((per[1] or {}).get(k))] for k in keys]
        body += [f"<h2>table {escape(name)}</h2>", _table(head, rows, "tables")]
    if ka or kb:
        body.append(
            f"<h2>plots</h2><div class=cols><section>{_charts(a.id, ka)}</section>"
            f"<section>{_charts(b.id, kb)}</section></div>"
        )
    return page(f"{a.id} vs {b.id}", "".join(body), plotly=bool(ka or kb))


def fabric_page(presets: list[str], preset: str, run: str | None, view: str = "segment") -> str:
    opts = "".join(
        f"<option{' selected' if p == preset else ''}>{escape(p)}</option>" for p in presets
    )
    src = f"run {escape(run)}" if run else f"preset <b id=source>{escape(preset)}</b>"
    data = json.dumps({"preset": preset, "run": run, "view": view})
    body = (
        f"<p class=muted>Fabric of {src}. Click a switch for its ports"
        f"{' and their utilization in the run' if run else ''}; in the pod view, click a "
        "segment's host box to open that segment.</p>"
        "<div class=controls><span id=view-toggle>view "
        "<button type=button id=view-pod data-view=pod>pod</button>"
        "<button type=button id=view-segment data-view=segment>segment</button></span> "
        f"<label>preset <select id=preset {'disabled' if run else ''}>"
        f"{opts}</select></label> <label>pod <select id=pod></select></label> "
        "<label id=segment-label>segment <select id=segment></select></label> "
        "<span id=counts class=muted></span></div>"
        f"<div id=fabric data-src='{escape(data)}'></div>"
        "<div id=legend class=muted>tiers: Aggs (plane 1 blue, plane 2 orange) · ToRs by rail, "
        "dual-ToR pairs side by side · hosts (backup hosts hollow) · pod view: a block of ToRs "
        "per segment (rails down, planes across) over a box counting its active + backup "
        "hosts; links bundled per segment and plane</div>"
        "<section id=switch></section>"
    )
    return page("fabric explorer", body)


def new_page() -> str:
    body = (
        "<p class=muted>Start a run of any registered command; sizes are bounded. The run is "
        "stored like one from the CLI.</p>"
        "<form id=new-run><label>command <select id=command></select></label>"
        "<p id=summary class=muted></p>"
        "<label>config (TOML)<br><textarea id=config rows=12 cols=70></textarea></label><br>"
        "<button type=submit>start</button></form><div id=job></div>"
    )
    return page("new run", body)
