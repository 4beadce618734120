"""One figure per claim: the paper's points over the model's values, the same axes and units.

Kinds (a claim's ``figure.kind``): ``bars`` (categories: the paper's bar beside the model's),
``curve`` (the model's line per series, the paper's points as markers in the same colour),
``goodput`` (SLO attainment vs models per policy, the 90 % line, the paper's knees).
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from hpn.reproduce.catalog import Claim
from hpn.reproduce.measure import Measured
from hpn.reproduce.verdict import band_text

COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")
VERDICT_COLOURS = {"pass": "#2ca02c", "explained": "#ff7f0e", "fail": "#d62728"}


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def draw(claim: Claim, measured: Measured | None, verdict: str, path: Path) -> Path:
    """Draw ``claim``'s figure to ``path`` (PNG).

    Parameters
    ----------
    claim
        The claim (paper value, points, figure kind and labels).
    measured
        What the model computed (None if the measure failed: only the paper is drawn).
    verdict
        Its verdict (shown in the subtitle).
    path
        The PNG to write.

    Returns
    -------
    Path
        ``path``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8.4, 4.6), dpi=100)
    kind = claim.figure.get("kind", "bars")
    series = measured.series if measured else {}
    if kind == "curve":
        _curve(ax, claim, series)
    elif kind == "goodput":
        _goodput(ax, claim, series)
    else:
        _bars(ax, claim, series)
    model = "-" if measured is None or measured.value is None else _fmt(measured.value)
    head = "\n".join(textwrap.wrap(f"{claim.id}: {claim.title}", 80)[:2])
    sub = (
        f"paper {_fmt(claim.value)} {claim.unit} ({claim.source}, band "
        f"{band_text(claim.value, claim.band)}) | model {model} | {verdict}"
    )
    ax.set_title(head, fontsize=9.5, loc="left")
    fig.text(0.01, 0.01, sub, fontsize=8, color=VERDICT_COLOURS.get(verdict, "#222"))
    ax.grid(True, alpha=0.3)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def _bars(ax: Any, claim: Claim, series: dict[str, list[list[Any]]]) -> None:
    paper = {str(x): y for x, y in claim.points.get("paper", [])}
    model = {str(x): y for x, y in series.get("model", [])}
    if not paper and not model:
        paper, model = {claim.unit: claim.value}, {}
    elif not paper:  # a count: the headline value is the paper's bar
        paper = {next(iter(model)): claim.value}
    cats = list(dict.fromkeys([*paper, *model]))
    xs = range(len(cats))
    w = 0.38
    pb = ax.bar(
        [x - w / 2 for x in xs],
        [paper.get(c, 0) for c in cats],
        w,
        label="paper",
        color="#bbbbbb",
        edgecolor="#555555",
    )
    mb = ax.bar(
        [x + w / 2 for x in xs],
        [_num(model.get(c)) for c in cats],
        w,
        label="model",
        color=COLOURS[0],
    )
    for bars, vals in ((pb, [paper.get(c) for c in cats]), (mb, [model.get(c) for c in cats])):
        for b, v in zip(bars, vals, strict=True):
            if v is not None:
                ax.annotate(
                    _fmt(v),
                    (b.get_x() + b.get_width() / 2, b.get_height()),
                    ha="center",
                    va="bottom",
                    fontsize=7.5,
                )
    ax.set_xticks(list(xs), cats, fontsize=8)
    ax.set_ylabel(claim.figure.get("ylabel", claim.unit))
    if claim.figure.get("log"):
        ax.set_yscale("log")
    ax.legend(fontsize=8)


def _num(v: Any) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return 0.0
    return f if f == f and abs(f) != float("inf") else 0.0


def _curve(ax: Any, claim: Claim, series: dict[str, list[list[Any]]]) -> None:
    names = list(dict.fromkeys([*series, *claim.points]))
    for i, name in enumerate(names):
        c = COLOURS[i % len(COLOURS)]
        if name in series and series[name]:
            xs, ys = zip(*series[name], strict=True)
            ls = "-" if i % 2 == 0 else "--"  # a model line equal to another stays visible
            ax.plot(xs, ys, ls, color=c, label=f"model {name}", lw=1.8)
        if name in claim.points:
            xs, ys = zip(*claim.points[name], strict=True)
            ax.plot(xs, ys, "o", color=c, mfc="white", mew=1.6, ms=7, label=f"paper {name}")
    if claim.figure.get("xlog"):
        ax.set_xscale("log", base=2)
        if "bytes" in claim.figure.get("xlabel", ""):
            ticks = sorted(
                {x for pts in [*series.values(), *claim.points.values()] for x, _ in pts}
            )
            ax.set_xticks(ticks, [_size(t) for t in ticks], fontsize=8)
    ax.set_xlabel(claim.figure.get("xlabel", ""))
    ax.set_ylabel(claim.figure.get("ylabel", claim.unit))
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)


def _size(n: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n:g} B"


def _goodput(ax: Any, claim: Claim, series: dict[str, list[list[Any]]]) -> None:
    names = list(dict.fromkeys([*series, *claim.points]))
    for i, name in enumerate(names):
        c = COLOURS[i % len(COLOURS)]
        if series.get(name):
            xs, ys = zip(*series[name], strict=True)
            ax.plot(xs, [y * 100 for y in ys], "-o", color=c, ms=3, lw=1.5, label=f"model {name}")
        for x, y in claim.points.get(name, []):
            ax.plot([x], [y * 100], "D", color=c, mfc="white", mew=1.8, ms=9)
            ax.annotate(
                f"paper {name}: {x}",
                (x, y * 100),
                xytext=(4, 6),
                textcoords="offset points",
                fontsize=7.5,
                color=c,
            )
    ax.axhline(90, color="#555", ls="--", lw=1, label="90 % (goodput threshold)")
    ax.set_xlabel(claim.figure.get("xlabel", "number of models"))
    ax.set_ylabel(claim.figure.get("ylabel", "SLO attainment") + " (%)")
    ax.set_ylim(0, 103)
    tried = [x for pts in [*series.values(), *claim.points.values()] for x, _ in pts]
    ax.set_xlim(0, max(tried, default=1) * 1.18)
    ax.legend(fontsize=7.5, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)


__all__ = ["draw"]
