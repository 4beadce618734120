"""``hpn reproduce [hpn|aegaeon|all]``: the papers' claims, the model's values, verdicts and
figures in one offline report (:mod:`hpn.reproduce`), stored as a run whose sub-runs are
stored too.

Limits: the claims of ``claims.toml`` (``--only`` picks among them); the full run takes a few
minutes on one core, ``--quick`` under two.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypedDict

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
    executor: Literal["inline", "processes", "dask"] = Field(
        "inline", description="where the groups of claims run (the sweep's executors)"
    )
    workers: int = Field(2, ge=1, le=64, description="processes or dask workers")


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
    demo: bool
    only: str | None
    executor: str
    counts: dict[str, int]
    wall_s: float
    report: str
    runs: int

    def lines(self) -> list[str]:
        from hpn.reproduce.runner import table_lines

        counts = ", ".join(f"{n} {k}" for k, n in self.counts.items())
        return [
            *table_lines(list(self.claims)),  # type: ignore[arg-type]
            f"{len(self.claims)} claims: {counts}; {self.wall_s:.0f} s, {self.runs} runs",
            f"report: {self.report}",
        ]


def reproduce(
    cfg: ReproduceConfig, say: Any = None, mapper: Any = None
) -> Outcome[ReproduceResult]:
    """Measure the chosen claims, write the report folder and record it as a run.

    ``mapper(fn, tasks)`` runs groups of claims on the executor ``executor`` names (the
    command line passes the sweep's; this layer sits below it); without one they run
    here, in turn."""
    from hpn.app import run
    from hpn.errors import InputError
    from hpn.reproduce import select
    from hpn.reproduce.runner import run_and_record
    from hpn.store.paths import new_run_dir, read_meta, runs_root
    from hpn.store.record import check_out

    o = cfg.reproduce
    claims = select(o.paper, o.quick, o.only)  # bad ids: an error before any work
    if o.demo:
        claims = [c for c in claims if c.demo]
    if not claims:
        raise InputError("--only", "no claim of this paper matches; drop --quick or the paper")
    folder = Path(o.out).absolute() if o.out else new_run_dir("reproduce", runs_root())
    check_out(folder, overwrite=True)  # a file, or a folder that is not a run: refused
    previous = read_meta(folder) if folder.is_dir() else None
    if previous is not None and previous.get("command") != "reproduce":
        raise InputError(
            "--out", f"{folder} holds a {previous.get('command')} run; give a new folder"
        )
    if o.executor != "inline" and mapper is None:
        raise InputError("executor", "processes and dask run from the command line only")
    meta = {"paper": o.paper, "quick": o.quick, "demo": o.demo, "only": o.only}
    meta["executor"] = o.executor
    m = None if o.executor == "inline" else mapper
    _, result = run_and_record(claims, folder, meta, run, say or (lambda _m: None), m)
    return Outcome(ReproduceResult.from_dict(result), wall_s=result["wall_s"])


REPRODUCE = Command("reproduce", ReproduceConfig, reproduce, flags=("reproduce",), stored=False)
