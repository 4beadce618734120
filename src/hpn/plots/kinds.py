"""Plot kinds: each reads tables (or config and result) of one or more runs into a ``Chart``.

The table each kind reads is the contract with the commands that write it:

| kind             | table        | columns                                        |
|------------------|--------------|------------------------------------------------|
| tier-util        | tier_util    | time_s, tier, util (load / capacity, 0..1)     |
| fct-cdf          | flows        | fct_s                                          |
| busbw            | busbw        | fabric, size_bytes, busbw_gbps                 |
| timeline         | timeline     | row, group, start_s, end_s                     |
| fault-throughput | throughput   | time_s, throughput; optional table events:     |
|                  |              | time_s, label                                  |
| slo-load         | slo          | policy, load, slo_attainment                   |
| counts           | counts       | what, tier, count                              |

``xy`` is generic over several runs: a config field against a result figure, one line per
value of another config field (e.g. SLO attainment vs rate per policy, from a sweep).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from hpn.errors import InputError
from hpn.plots.chart import Bar, Chart, Line
from hpn.store.dotted import get_path
from hpn.store.run import Run


@dataclass(frozen=True)
class Kind:
    name: str
    table: str | None  # the table it needs in every run (None: config and result only)
    draw: Callable[..., Chart]
    summary: str


KINDS: dict[str, Kind] = {}


def kind(name: str, table: str | None, summary: str):
    def deco(fn: Callable[..., Chart]) -> Callable[..., Chart]:
        KINDS[name] = Kind(name, table, fn, summary)
        return fn

    return deco


def _label(run: Run, runs: list[Run]) -> str:
    return run.label if len(runs) > 1 else ""


def _join(*parts: str) -> str:
    return " ".join(p for p in parts if p)


@kind("tier-util", "tier_util", "link utilization per tier over time (heatmap)")
def tier_util(runs: list[Run]) -> Chart:
    t = runs[0].table("tier_util")
    times = np.unique(t["time_s"])
    tiers = list(dict.fromkeys(t["tier"].tolist()))
    z = np.full((len(tiers), len(times)), np.nan)
    ti = {v: i for i, v in enumerate(tiers)}
    z[[ti[x] for x in t["tier"].tolist()], np.searchsorted(times, t["time_s"])] = t["util"]
    return Chart(
        "heatmap",
        _join("link utilization per tier", runs[0].label),
        "time (s)",
        "tier",
        z=z,
        x=times,
        rows=[str(x) for x in tiers],
        zlabel="utilization",
    )


@kind("fct-cdf", "flows", "CDF of flow completion times")
def fct_cdf(runs: list[Run]) -> Chart:
    lines = []
    for r in runs:
        f = np.sort(r.table("flows")["fct_s"].astype(float))
        y = np.arange(1, len(f) + 1) / max(len(f), 1)
        lines.append(Line(_label(r, runs) or "flows", f, y, step=True))
    return Chart("line", "flow completion time CDF", "FCT (s)", "fraction of flows", lines)


@kind("busbw", "busbw", "collective bus bandwidth vs message size, per fabric")
def busbw(runs: list[Run]) -> Chart:
    lines = []
    for r in runs:
        t = r.table("busbw")
        for fab in dict.fromkeys(t["fabric"].tolist()):
            m = t["fabric"] == fab
            order = np.argsort(t["size_bytes"][m])
            x, y = t["size_bytes"][m][order], t["busbw_gbps"][m][order]
            lines.append(Line(_join(_label(r, runs), str(fab)), x, y))
    return Chart(
        "line",
        "collective bus bandwidth",
        "message size (bytes)",
        "busbw (GB/s)",
        lines,
        log_x=True,
    )


@kind("timeline", "timeline", "iteration timeline (Gantt by stage and parallelism)")
def timeline(runs: list[Run]) -> Chart:
    t = runs[0].table("timeline")
    bars = [
        Bar(str(r), float(s), float(e), str(g))
        for r, g, s, e in zip(t["row"], t["group"], t["start_s"], t["end_s"], strict=True)
    ]
    return Chart("gantt", _join("iteration timeline", runs[0].label), "time (s)", "", bars=bars)


@kind("fault-throughput", "throughput", "throughput across a fault")
def fault_throughput(runs: list[Run]) -> Chart:
    lines, markers = [], []
    for r in runs:
        t = r.table("throughput")
        lines.append(Line(_label(r, runs) or "throughput", t["time_s"], t["throughput"], step=True))
        if "events" in r.tables:
            ev = r.table("events")
            markers += [(float(a), str(b)) for a, b in zip(ev["time_s"], ev["label"], strict=True)]
    return Chart(
        "line", "throughput across a fault", "time (s)", "throughput", lines, markers=markers
    )


@kind("slo-load", "slo", "serving SLO attainment vs load, per policy")
def slo_load(runs: list[Run]) -> Chart:
    lines = []
    for r in runs:
        t = r.table("slo")
        for pol in dict.fromkeys(t["policy"].tolist()):
            m = t["policy"] == pol
            order = np.argsort(t["load"][m])
            lines.append(
                Line(
                    _join(_label(r, runs), str(pol)),
                    t["load"][m][order],
                    t["slo_attainment"][m][order],
                )
            )
    return Chart("line", "SLO attainment vs load", "load", "SLO attainment", lines)


@kind("counts", "counts", "switches and links per tier")
def counts(runs: list[Run]) -> Chart:
    cats: list[str] = []
    per_run = []
    for r in runs:
        t = r.table("counts")
        d = {
            f"{w} {tier}": int(c)
            for w, tier, c in zip(t["what"], t["tier"], t["count"], strict=True)
            if c
        }
        cats += [c for c in d if c not in cats]
        per_run.append((r, d))
    lines = [
        Line(
            _label(r, runs) or "count",
            np.arange(len(cats)),
            np.array([d.get(c, 0) for c in cats], float),
        )
        for r, d in per_run
    ]
    return Chart(
        "bar", "switches and links per tier", "", "count", lines, categories=cats, log_y=True
    )


def xy(runs: list[Run], x: str, y: str, by: str | None = None) -> Chart:
    """``y`` (a result path) against ``x`` (a config path), a line per value of ``by``."""
    groups: dict[str, list[tuple[float, float]]] = {}
    for r in runs:
        xv, yv = get_path(r.config, x), get_path(r.result, y)
        if not isinstance(xv, int | float) or not isinstance(yv, int | float):
            continue
        g = str(get_path(r.config, by)) if by else y
        groups.setdefault(g, []).append((float(xv), float(yv)))
    if not groups:
        raise InputError("--x/--y", f"no run has a number at config {x!r} and result {y!r}")
    lines = []
    for g, pts in groups.items():
        a = np.array(sorted(pts))
        lines.append(Line(f"{by.rsplit('.', 1)[-1]}={g}" if by else g, a[:, 0], a[:, 1]))
    return Chart("line", f"{y} vs {x}", x, y, lines)


def available(run: Run) -> list[str]:
    """The kinds a run's tables allow."""
    have = set(run.tables)
    return [k.name for k in KINDS.values() if k.table in have]


def draw(name: str, runs: list[Run]) -> Chart:
    if name not in KINDS:
        raise InputError(
            "--kind", f"unknown plot kind {name!r}; choose from {', '.join(KINDS)}, xy"
        )
    k = KINDS[name]
    missing = [r.id for r in runs if k.table and k.table not in r.tables]
    if missing:
        raise InputError("--kind", f"{name} needs table {k.table!r}; run {missing[0]} has none")
    return k.draw(runs)
