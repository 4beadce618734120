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
from hpn.registry import Registry
from hpn.store.dotted import get_path
from hpn.store.run import Run


@dataclass(frozen=True)
class Kind:
    name: str
    table: str | None  # the table it needs in every run (None: config and result only)
    draw: Callable[..., Chart]
    summary: str


KINDS: Registry[Kind] = Registry("plot kind", field="--kind")

_BASELINE = "baseline_samples_per_s"  # hpn fail's fault-free throughput
RESULT_READS: dict[str, tuple[str, ...]] = {"fail": (_BASELINE,)}
"""Result figures the kinds read, by command (``tests/test_result_types.py`` checks that the
command's result declares each)."""


def kind(name: str, table: str | None, summary: str):
    def deco(fn: Callable[..., Chart]) -> Callable[..., Chart]:
        KINDS.add(name, Kind(name, table, fn, summary), summary)
        return fn

    return deco


def _label(run: Run, runs: list[Run]) -> str:
    return run.label if len(runs) > 1 else ""


def _join(*parts: str) -> str:
    """The parts' words in order, each once (a run label often names the policy already)."""
    return " ".join(dict.fromkeys(w for p in parts for w in str(p).split()))


def size_text(nbytes: float) -> str:
    """A message size as people write it: decimal units when exact (64 MB, 1 GB), binary
    ones when exact (1 MiB), else decimal to 3 digits."""
    v = float(nbytes)
    dec = (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3))
    binary = (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10))
    for units in (dec, binary):
        for unit, scale in units:
            if v >= scale and v % scale == 0:
                return f"{v / scale:g} {unit}"
    for unit, scale in dec:
        if v >= scale:
            return f"{v / scale:.3g} {unit}"
    return f"{v:g} B"


def size_ticks(sizes: np.ndarray, most: int = 10) -> list[tuple[float, str]]:
    """Ticks at the sizes measured (every k-th when there are many)."""
    u = np.unique(np.asarray(sizes, float))
    step = max(1, int(np.ceil(len(u) / most)))
    return [(float(v), size_text(v)) for v in u[::step]]


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
    lines, sizes = [], []
    for r in runs:
        t = r.table("busbw")
        for fab in dict.fromkeys(t["fabric"].tolist()):
            m = t["fabric"] == fab
            order = np.argsort(t["size_bytes"][m])
            x, y = t["size_bytes"][m][order], t["busbw_gbps"][m][order]
            lines.append(Line(_join(_label(r, runs), str(fab)), x, y))
            sizes.append(x)
    return Chart(
        "line",
        "collective bus bandwidth",
        "message size",
        "busbw (GB/s)",
        lines,
        log_x=True,
        xticks=size_ticks(np.concatenate(sizes)) if sizes else [],
        y_from_zero=True,
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
    """Throughput as a fraction of the fault-free rate, on an axis from 0 (a 0.1 % dip looks
    like one), every line drawn to the same end time."""
    lines, markers = [], []
    for r in runs:
        t = r.table("throughput")
        x, y = np.asarray(t["time_s"], float), np.asarray(t["throughput"], float)
        base = r.result.get(_BASELINE) or (float(y.max()) if len(y) else 1.0)
        lines.append(Line(_label(r, runs) or "throughput", x, y / base, step=True))
        if "events" in r.tables:
            ev = r.table("events")
            markers += [(float(a), str(b)) for a, b in zip(ev["time_s"], ev["label"], strict=True)]
    end = max((float(ln.x[-1]) for ln in lines if len(ln.x)), default=0.0)
    for ln in lines:
        if len(ln.x) and ln.x[-1] < end:  # steady after its horizon: hold the last rate
            ln.x, ln.y = np.append(ln.x, end), np.append(ln.y, ln.y[-1])
    return Chart(
        "line",
        "throughput across a fault",
        "time (s)",
        "throughput (fraction of fault-free rate)",
        lines,
        markers=markers,
        y_from_zero=True,
        meta={"relative": True},
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
    return Chart(
        "line",
        "SLO attainment vs load",
        "load (requests/s, all models together)",
        "SLO attainment (fraction of requests)",
        lines,
        y_from_zero=True,
    )


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
    if name == "xy":
        raise InputError("--kind", "xy needs --x CONFIG.FIELD and --y RESULT.FIGURE")
    if name not in KINDS:
        raise InputError(
            "--kind", f"unknown plot kind {name!r}; choose from: {', '.join(KINDS)}, xy"
        )
    k = KINDS[name]
    missing = [r.id for r in runs if k.table and k.table not in r.tables]
    if missing:
        raise InputError("--kind", f"{name} needs table {k.table!r}; run {missing[0]} has none")
    return k.draw(runs)
