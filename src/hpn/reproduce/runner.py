"""Run the claims: measure each, compute its verdict, draw its figure, write the report."""

from __future__ import annotations

import math
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hpn.reproduce import (  # noqa: F401  (register the measures)
    measures_aegaeon,
    measures_hpn,
    measures_planes,
    measures_traffic,
)
from hpn.reproduce.catalog import Claim, load, uncovered
from hpn.reproduce.context import Context, SubRun
from hpn.reproduce.measure import MEASURES, Measured
from hpn.reproduce.verdict import band_range, band_text, verdict

ROW_KEYS = ("id", "source", "paper", "model", "unit", "band", "verdict", "command", "cause")


@dataclass
class Outcome:
    """One claim's outcome: the row of the table and what the figure needs."""

    claim: Claim
    measured: Measured | None
    verdict: str
    cause: str
    error: str = ""
    wall_s: float = 0.0
    figure: str = ""  # relative path in the report folder

    def row(self) -> dict[str, Any]:
        """The claim's row: exactly :data:`ROW_KEYS`."""
        lo, hi = band_range(self.claim.value, self.claim.band)
        model = None if self.measured is None else _finite(self.measured.value)
        return {
            "id": self.claim.id,
            "source": self.claim.source,
            "paper": self.claim.value,
            "model": model,
            "unit": self.claim.unit,
            "band": [_finite(lo), _finite(hi)],
            "verdict": self.verdict,
            "command": self.claim.command,
            "cause": self.cause,
        }

    def details(self) -> dict[str, Any]:
        """What the report shows beside the row."""
        return {
            "title": self.claim.title,
            "precision": self.claim.precision,
            "basis": self.claim.basis,
            "band_text": band_text(self.claim.value, self.claim.band),
            "detail": self.measured.detail if self.measured else "",
            "series": self.measured.series if self.measured else {},
            "paper_points": self.claim.points,
            "error": self.error,
            "wall_s": round(self.wall_s, 3),
            "figure": self.figure,
        }


def _finite(v: float | None) -> float | None:
    if v is None:
        return None
    f = float(v)
    return round(f, 6) if math.isfinite(f) else None


@dataclass
class Reproduction:
    """Every claim's outcome and the commands run for them."""

    outcomes: list[Outcome] = field(default_factory=list)
    context: Context = field(default_factory=Context)
    wall_s: float = 0.0

    def counts(self) -> dict[str, int]:
        """Claims per verdict."""
        out = {"pass": 0, "explained": 0, "fail": 0}
        for o in self.outcomes:
            out[o.verdict] += 1
        return out


Measurement = tuple[str, "Measured | None", str, float]  # claim id, measured, error, wall s
# map(fn, tasks) -> results in any order: fn(**task) on an executor (the sweep's, given by
# the CLI, which sits above this package)
Mapper = Callable[[Callable[..., Any], list[dict[str, Any]]], Any]


def _measure(c: Claim, context: Context, jobs: dict, say: Callable[[str], None]) -> Measurement:
    say(f"{c.id}: {c.title}")
    t = time.perf_counter()
    try:
        m: Measured | None = MEASURES.get(c.measure)(context, jobs)
        err = ""
    except Exception as e:  # a measure that breaks is a failed claim, not a crash
        m, err = None, f"{type(e).__name__}: {e}"
        say("  " + traceback.format_exception_only(e)[-1].strip())
    return c.id, m, err, time.perf_counter() - t


def group_key(c: Claim) -> str:
    """Claims measured together on one executor worker: those whose command starts alike
    (``hpn pool goodput``, ``hpn topo summary``), which share their runs."""
    return " ".join(c.command.split()[:3])


def measure_group(
    ids: list[str],
    runner: Callable[[str, dict[str, Any]], Any],
    root: str | None = None,
    record: bool = True,
) -> tuple[list[Measurement], list[SubRun]]:
    """Measure the claims ``ids`` in one process (an executor's task).

    Parameters
    ----------
    ids
        Claim ids.
    runner
        ``runner(command, config) -> Outcome`` (:func:`hpn.app.run`).
    root, record
        The store the sub-runs are recorded in (:class:`Context`).

    Returns
    -------
    tuple
        Each claim's measurement and the sub-runs recorded.
    """
    claims, jobs = load()
    by_id = {c.id: c for c in claims}
    ctx = Context(runner=runner, root=None if root is None else Path(root), record=record)
    return [_measure(by_id[i], ctx, jobs, ctx.say) for i in ids], ctx.runs


def measure_all(
    claims: list[Claim],
    context: Context,
    say: Callable[[str], None] = lambda _m: None,
    mapper: Mapper | None = None,
) -> Reproduction:
    """Measure every claim (a measure that raises gives verdict ``fail`` and its error).

    Parameters
    ----------
    claims
        The claims to run.
    context
        Where the commands run and are recorded.
    say
        Progress lines.
    mapper
        Runs the groups of claims (:func:`group_key`) on an executor; None: here, in turn.

    Returns
    -------
    Reproduction
        The outcomes, in the order of ``claims``.
    """
    _, jobs = load()
    t0 = time.perf_counter()
    rep = Reproduction(context=context)
    if mapper is None:
        results = [_measure(c, context, jobs, say) for c in claims]
    else:
        done: dict[str, Measurement] = {}
        groups: dict[str, list[str]] = {}
        for c in claims:
            groups.setdefault(group_key(c), []).append(c.id)
        root = None if context.root is None else str(context.root)
        tasks = [
            {"ids": ids, "runner": context.runner, "root": root, "record": context.record}
            for ids in groups.values()
        ]
        say(f"{len(claims)} claims in {len(tasks)} groups on the executor")
        for measured, runs in mapper(measure_group, tasks):
            for m in measured:
                done[m[0]] = m
                say(f"{m[0]}: done ({m[3]:.1f} s)")
            context.runs.extend(runs)
        results = [done[c.id] for c in claims]
    for c, (_, m, err, wall) in zip(claims, results, strict=True):
        value = None if m is None else m.value
        v = verdict(c.value, value, c.band, c.cause)
        cause = c.cause if v == "explained" else (f"measure failed: {err}" if err else "")
        rep.outcomes.append(Outcome(c, m, v, cause, err, wall))
    rep.wall_s = time.perf_counter() - t0
    return rep


def write_report(rep: Reproduction, folder: Path, meta: dict[str, Any]) -> dict[str, Any]:
    """Draw each claim's figure and write ``report.json`` and ``report.html`` into ``folder``.

    Parameters
    ----------
    rep
        The measured claims.
    folder
        The report folder (the run's folder).
    meta
        Top-level fields of the report (paper, quick, only, wall_s).

    Returns
    -------
    dict
        The report's JSON form.
    """
    from hpn.reproduce.figures import draw
    from hpn.reproduce.html import write_html
    from hpn.store.atomic import write_json

    for o in rep.outcomes:
        rel = f"figures/{o.claim.id}.png"
        draw(o.claim, o.measured, o.verdict, folder / rel)
        o.figure = rel
    report = {
        "claims": [o.row() for o in rep.outcomes],
        **meta,
        "counts": rep.counts(),
        "details": {o.claim.id: o.details() for o in rep.outcomes},
        "uncovered": uncovered(),
        "runs": [
            {"command": r.command, "label": r.label, "folder": r.folder, "wall_s": r.wall_s}
            for r in rep.context.runs
        ],
    }
    write_json(folder / "report.json", report)
    write_html(report, folder / "report.html")
    return report


def _n(v: float | None) -> str:
    return "-" if v is None else f"{v:.6g}"


def table_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The terminal table of claim rows: id, paper, model, unit, band, verdict.

    Parameters
    ----------
    rows
        Claim rows (:meth:`Outcome.row`).

    Returns
    -------
    list of str
        A heading line, then one line per claim.
    """
    w = max([len(c["id"]) for c in rows] + [5])
    out = [f"{'claim':{w}s} {'paper':>9s} {'model':>9s}  {'unit':16s} {'band':>16s}  verdict"]
    for c in rows:
        lo, hi = c["band"]
        band = f"[{_n(lo)}, {_n(hi)}]"
        out.append(
            f"{c['id']:{w}s} {_n(c['paper']):>9s} {_n(c['model']):>9s}  "
            f"{c['unit'][:16]:16s} {band:>16s}  {c['verdict']}"
        )
    return out


def run_and_record(
    claims: list[Claim],
    folder: Path,
    meta: dict[str, Any],
    runner: Callable[[str, dict[str, Any]], Any],
    say: Callable[[str], None] = lambda _m: None,
    mapper: Mapper | None = None,
) -> tuple[Reproduction, dict[str, Any]]:
    """Measure ``claims``, then record the report folder as a ``reproduce`` run.

    Parameters
    ----------
    claims
        The claims.
    runner
        ``runner(command, config) -> Outcome`` (:func:`hpn.app.run`).
    folder
        The report folder (a new one, or a previous report run, which is replaced).
    meta
        Top-level fields of the result and report (``paper``, ``quick``, ``only``).
    say
        Progress lines.
    mapper
        The executor the claims run on (:func:`measure_all`).

    Returns
    -------
    tuple
        The reproduction and the run's result (``claims``, ``counts``, ``wall_s``, ...).
    """
    from hpn.store.record import record_run

    t0 = time.perf_counter()
    rep = measure_all(claims, Context(runner=runner, say=say), say, mapper)
    wall = round(time.perf_counter() - t0, 1)
    meta = {**meta, "wall_s": wall}
    result = {
        "claims": [o.row() for o in rep.outcomes],
        **meta,
        "counts": rep.counts(),
        "report": str(folder / "report.html"),
        "runs": len(rep.context.runs),
    }
    record_run(
        "reproduce",
        {"reproduce": {k: v for k, v in meta.items() if k != "wall_s"}},
        result,
        plots=lambda run: write_report(rep, run.path, meta),
        out=folder,
        wall_s=wall,
        label=f"reproduce {meta.get('paper', 'all')}" + (" --quick" if meta.get("quick") else ""),
        overwrite=True,
    )
    return rep, result


__all__ = [
    "ROW_KEYS",
    "Outcome",
    "Reproduction",
    "group_key",
    "measure_all",
    "measure_group",
    "run_and_record",
    "table_lines",
    "write_report",
]
