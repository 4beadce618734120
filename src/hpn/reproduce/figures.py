"""One figure per claim: the paper's points over the model's values, the same axes and units.

Kinds (a claim's ``figure.kind``): ``bars`` (categories: the paper's bar beside the model's),
``curve`` (the model's line per series, the paper's points as markers in the same colour),
``goodput`` (SLO attainment vs models per policy, the 90 % line, the paper's knees).
Options: ``ylabel``, ``xlabel``; ``log`` (bars: log y); ``xlog`` (curve: log2 x, ticks at the
points); ``normalize = "CAT"`` (bars: each side divided by its own value at category CAT,
for a claim about a ratio whose absolute values come from settings the paper does not share;
the bars keep the absolute values in their labels); ``hline = {y, label}`` (bars: a reference
line of the paper's, e.g. the chip power the cooling limits are held against).
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
        return str(int(v)) if v.is_integer() and abs(v) < 1e15 else f"{v:.4g}"
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

    fig, ax = plt.subplots(figsize=(9.6, 4.8), dpi=100)
    kind = claim.figure.get("kind", "bars")
    series = measured.series if measured else {}
    if kind == "curve":
        _curve(ax, claim, series)
    elif kind == "goodput":
        _goodput(ax, claim, series)
    else:
        _bars(ax, claim, measured)
    model = "-" if measured is None or measured.value is None else _fmt(measured.value)
    head = _title(f"{claim.id}: {claim.title}")
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


TITLE_WIDTH, TITLE_LINES = 100, 3


def _title(text: str) -> str:
    """``text`` wrapped to at most :data:`TITLE_LINES` lines, an ellipsis where it is cut."""
    lines = textwrap.wrap(text, TITLE_WIDTH)
    if len(lines) > TITLE_LINES:
        lines = [
            *lines[: TITLE_LINES - 1],
            textwrap.shorten(" ".join(lines[TITLE_LINES - 1 :]), TITLE_WIDTH - 2, placeholder=" …"),
        ]
    return "\n".join(lines)


def _legend(ax: Any) -> None:
    """The legend beside the axes, where it covers no bar, line or point."""
    ax.legend(fontsize=7.5, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)


def bar_data(
    claim: Claim, measured: Measured | None
) -> tuple[list[str], dict[str, float], dict[str, float]]:
    """The categories of a ``bars`` figure and the paper's and the model's value of each.

    The paper's bars are its points (``paper`` series), else its headline value at the
    model's first category; the model's are its ``model`` series, else its headline value.
    A paper with one point the model's series lacks ("up to" a gain) is paired with the
    model's headline value, which the verdict compares with it.

    Parameters
    ----------
    claim
        The claim (its points and figure options).
    measured
        What the model computed (None: the paper's bars only).

    Returns
    -------
    tuple
        ``(categories, paper, model)``: values by category (absent: no bar).
    """
    value = None if measured is None else measured.value
    paper = {str(x): float(y) for x, y in claim.points.get("paper", [])}
    series = measured.series.get("model", []) if measured else []
    model = {str(x): _num(y) for x, y in series}
    if not model and value is not None:
        model = {next(iter(paper), claim.unit): _num(value)}
    if not paper:  # a count: the headline value is the paper's bar
        paper = {next(iter(model), claim.unit): float(claim.value)}
    if len(paper) == 1 and value is not None:
        (only,) = paper
        model.setdefault(only, _num(value))
    cats = list(dict.fromkeys([*paper, *model]))
    return cats, paper, model


def _bars(ax: Any, claim: Claim, measured: Measured | None) -> None:
    cats, paper, model = bar_data(claim, measured)
    base = claim.figure.get("normalize")
    scale = {
        "paper": paper.get(base) if base else None,
        "model": model.get(base) if base else None,
    }
    xs = range(len(cats))
    w = 0.38
    shown: list[float] = []
    for side, vals, dx, style in (
        ("paper", paper, -w / 2, {"color": "#bbbbbb", "edgecolor": "#555555"}),
        ("model", model, w / 2, {"color": COLOURS[0]}),
    ):
        s = scale[side]
        ys = [vals.get(c, 0.0) / s if s else vals.get(c, 0.0) for c in cats]
        shown += ys
        bars = ax.bar([x + dx for x in xs], ys, w, label=side, **style)
        for b, c, y in zip(bars, cats, ys, strict=True):
            if c in vals:
                text = f"{_fmt(y)} ({_fmt(vals[c])})" if s else _fmt(vals[c])
                ax.annotate(
                    text,
                    (b.get_x() + b.get_width() / 2, b.get_height()),
                    ha="center",
                    va="bottom",
                    fontsize=7.5,
                )
    ref = claim.figure.get("hline")
    if ref:
        ax.axhline(ref["y"], color="#555", ls="--", lw=1, label=ref.get("label", "paper"))
        shown.append(float(ref["y"]))
    ax.set_xticks(list(xs), cats, fontsize=8)
    ylabel = claim.figure.get("ylabel", claim.unit)
    ax.set_ylabel(f"{ylabel}, relative to {base}" if base else ylabel)
    if claim.figure.get("log"):
        ax.set_yscale("log")
    elif min(shown, default=0) >= 0:  # counts, times, sizes: from 0 (all 0: a visible axis)
        ax.set_ylim(0, max(shown, default=0) * 1.12 or 1.0)
    _legend(ax)


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
        ticks = sorted({x for pts in [*series.values(), *claim.points.values()] for x, _ in pts})
        sized = "bytes" in claim.figure.get("xlabel", "")
        ax.set_xticks(ticks, [_size(t) if sized else f"{t:g}" for t in ticks], fontsize=8)
        ax.minorticks_off()
    ax.set_xlabel(claim.figure.get("xlabel", ""))
    ax.set_ylabel(claim.figure.get("ylabel", claim.unit))
    ax.set_ylim(bottom=0)
    _no_points(ax, claim)
    _legend(ax)


def _no_points(ax: Any, claim: Claim) -> None:
    """Say so on the axes when the paper gives no points for the figure (only its value)."""
    if not claim.points:
        ax.text(
            0.99,
            0.02,
            f"the paper gives no points here, only {_fmt(claim.value)} {claim.unit}",
            transform=ax.transAxes,
            ha="right",
            va="bottom",
            fontsize=8,
            color="#555",
        )


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
    ax.set_xlim(0, max(tried, default=1) * 1.3)  # room for a knee's label at the right
    _no_points(ax, claim)
    _legend(ax)


__all__ = ["bar_data", "draw"]
