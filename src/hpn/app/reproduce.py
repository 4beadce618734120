"""``hpn reproduce [hpn|aegaeon|all]``: the papers' claims, the model's values, verdicts and
figures in one offline report (:mod:`hpn.reproduce`), stored as a run whose sub-runs are
stored too.

Limits: the claims of ``claims.toml`` (``--only`` picks among them); the full run takes a few
minutes on one core, ``--quick`` under two.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from pydantic import Field

from hpn.app.base import Command, Outcome, Result
from hpn.config import Model


class ReproduceOptions(Model):
    """The ``[reproduce]`` table."""

    paper: str = Field("all", description="hpn, aegaeon or all")
    quick: bool = Field(False, description="only the quick subset (CI; under 2 minutes)")
    demo: bool = Field(False, description="only the demo subset (make demo)")
    only: str | None = Field(None, description="comma-separated claim ids (ID* for a prefix)")
    out: str | None = Field(None, description="report folder (default: a new run folder)")


class ReproduceConfig(Model):
    """``hpn reproduce``: ``[reproduce]``."""

    reproduce: ReproduceOptions = Field(default_factory=ReproduceOptions)


class ClaimRow(TypedDict):
    """One claim of the report: the paper's value, the model's, the band, the verdict."""

    id: str
    source: str
    paper: float
    model: float | None
    unit: str
    band: list[float | None]  # [low, high]; None: open
    verdict: str  # pass, fail or explained
    command: str
    cause: str


@dataclass
class ReproduceResult(Result):
    claims: list[ClaimRow]
    paper: str
    quick: bool
    counts: dict[str, int]
    wall_s: float
    report: str
    runs: int

    def lines(self) -> list[str]:
        w = max([len(c["id"]) for c in self.claims] + [5])
        out = [
            f"{'claim':{w}s} {'paper':>9s} {'model':>9s}  {'unit':16s} {'band':>16s}  verdict",
        ]
        for c in self.claims:
            lo, hi = c["band"]
            band = f"[{_n(lo)}, {_n(hi)}]"
            out.append(
                f"{c['id']:{w}s} {_n(c['paper']):>9s} {_n(c['model']):>9s}  "
                f"{c['unit'][:16]:16s} {band:>16s}  {c['verdict']}"
            )
        counts = ", ".join(f"{n} {k}" for k, n in self.counts.items())
        out.append(f"{len(self.claims)} claims: {counts}; {self.wall_s:.0f} s, {self.runs} runs")
        out.append(f"report: {self.report}")
        return out


def _n(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:.6g}"


def reproduce(cfg: ReproduceConfig, say: Any = None) -> Outcome[ReproduceResult]:
    """Measure the chosen claims, write the report folder and record it as a run."""
    from hpn.errors import InputError
    from hpn.reproduce import select
    from hpn.reproduce.context import Context
    from hpn.reproduce.runner import measure_all, write_report
    from hpn.store.paths import new_run_dir, runs_root
    from hpn.store.record import check_out, record_run

    o = cfg.reproduce
    claims = select(o.paper, o.quick, o.only)  # bad ids: an error before any work
    if o.demo:
        claims = [c for c in claims if c.demo]
    if not claims:
        raise InputError("--only", "no claim of this paper matches; drop --quick or the paper")
    folder = Path(o.out).absolute() if o.out else new_run_dir("reproduce", runs_root())
    check_out(folder, overwrite=True)  # a file, or a folder that is not a run: refused
    t0 = time.perf_counter()
    rep = measure_all(claims, Context(say=say or (lambda _m: None)), say or (lambda _m: None))
    wall = round(time.perf_counter() - t0, 1)
    meta = {"paper": o.paper, "quick": o.quick, "only": o.only, "wall_s": wall}
    rows = [ClaimRow(**x.row()) for x in rep.outcomes]  # type: ignore[typeddict-item]
    res = ReproduceResult(
        rows,
        o.paper,
        o.quick,
        rep.counts(),
        wall,
        str(folder / "report.html"),
        len(rep.context.runs),
    )
    record_run(
        "reproduce",
        cfg.model_dump(mode="json"),
        res.to_json(),
        plots=lambda run: write_report(rep, run.path, meta),
        out=folder,
        wall_s=wall,
        label=f"reproduce {o.paper}" + (" --quick" if o.quick else ""),
        overwrite=True,
    )
    return Outcome(res, wall_s=wall)


REPRODUCE = Command("reproduce", ReproduceConfig, reproduce, flags=("reproduce",), stored=False)
