"""The offline HTML report of a reproduction: the table of claims, then one section per claim
with its figure (a PNG beside the page), the numbers behind it and the sub-runs."""

from __future__ import annotations

import html
import time
from pathlib import Path
from typing import Any

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1200px;color:#222}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:3px 7px;
vertical-align:top}td.v{text-align:right;font-variant-numeric:tabular-nums}
.pass{color:#1a7f1a;font-weight:600}.fail{color:#c0261f;font-weight:600}
.explained{color:#c46a00;font-weight:600}.muted{color:#777}code{font-size:12px}
h2{border-top:1px solid #ddd;padding-top:1em}img{max-width:100%}
"""


def _e(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    return html.escape(str(v))


def write_html(report: dict[str, Any], path: Path) -> Path:
    """Write the report page to ``path``; figures are linked by relative path (offline).

    Parameters
    ----------
    report
        The report's JSON form (:func:`hpn.reproduce.runner.write_report`).
    path
        The HTML file.

    Returns
    -------
    Path
        ``path``.
    """
    from hpn.store.atomic import write_text

    d = report["details"]
    counts = ", ".join(f"{n} {k}" for k, n in report["counts"].items())
    parts = [
        "<!doctype html><html><head><meta charset=utf-8><title>hpn reproduce</title>",
        f"<style>{_CSS}</style></head><body><h1>hpn reproduce: {_e(report['paper'])}</h1>",
        f"<p class=muted>{time.strftime('%Y-%m-%d %H:%M:%S')} · {len(report['claims'])} "
        f"claims ({counts}) · {report['wall_s']:.0f} s · {len(report['runs'])} runs stored</p>",
        "<p>Verdicts are computed from each claim's band (hpn/reproduce/claims.toml): "
        "<span class=pass>pass</span> in the band; <span class=explained>explained</span> "
        "outside it with a documented cause; <span class=fail>fail</span> outside it with "
        "none. Basis <i>input</i>: the model takes the paper's number as a parameter.</p>",
        "<table><tr><th>claim</th><th>source</th><th>paper</th><th>model</th><th>unit</th>"
        "<th>band</th><th>verdict</th><th>basis</th><th>command</th><th>cause</th></tr>",
    ]
    for row in report["claims"]:
        x = d[row["id"]]
        parts.append(
            f"<tr><td><a href='#{_e(row['id'])}'>{_e(row['id'])}</a></td>"
            f"<td>{_e(row['source'])}</td><td class=v>{_e(row['paper'])}</td>"
            f"<td class=v>{_e(row['model'])}</td><td>{_e(row['unit'])}</td>"
            f"<td>{_e(x['band_text'])}</td><td class={row['verdict']}>{row['verdict']}</td>"
            f"<td>{_e(x['basis'])}</td><td><code>{_e(row['command'])}</code></td>"
            f"<td>{_e(row['cause'])}</td></tr>"
        )
    parts.append("</table>")
    if report.get("uncovered"):
        parts.append(
            "<h2>Not computed by the model</h2><table><tr><th>id</th><th>source</th>"
            "<th>claim</th><th>why</th></tr>"
        )
        for u in report["uncovered"]:
            parts.append(
                f"<tr><td>{_e(u['id'])}</td><td>{_e(u['source'])}</td>"
                f"<td>{_e(u['claim'])}</td><td>{_e(u['why'])}</td></tr>"
            )
        parts.append("</table>")
    for row in report["claims"]:
        x = d[row["id"]]
        parts.append(f"<h2 id='{_e(row['id'])}'>{_e(row['id'])}: {_e(x['title'])}</h2>")
        parts.append(
            f"<p>paper {_e(row['paper'])} {_e(row['unit'])} ({_e(x['precision'])}, "
            f"{_e(row['source'])}) · model {_e(row['model'])} · band "
            f"{_e(x['band_text'])} · <span class={row['verdict']}>{row['verdict']}"
            f"</span> · {x['wall_s']:.1f} s</p>"
        )
        if x["detail"]:
            parts.append(f"<p class=muted>{_e(x['detail'])}</p>")
        if x["error"]:
            parts.append(f"<p class=fail>{_e(x['error'])}</p>")
        if x["figure"]:
            parts.append(f"<img src='{_e(x['figure'])}' alt='{_e(row['id'])}'>")
    parts.append(
        "<h2>Runs</h2><table><tr><th>command</th><th>label</th><th>s</th><th>folder</th></tr>"
    )
    for r in report["runs"]:
        parts.append(
            f"<tr><td>{_e(r['command'])}</td><td>{_e(r['label'])}</td>"
            f"<td class=v>{_e(r['wall_s'])}</td><td><code>{_e(r['folder'])}</code></td></tr>"
        )
    parts.append("</table></body></html>")
    return write_text(path, "\n".join(parts))


__all__ = ["write_html"]
