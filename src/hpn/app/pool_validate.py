"""``hpn pool validate DIR``: every policy on every Aegaeon workload file of a folder, beside a
reference (the Aegaeon authors' simulator's numbers); the service is
:func:`hpn.pool.validate.validate`.

Limits: at most 500 workload files, 16 worker processes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field

from hpn.app.base import Command, FileInput, Outcome, Result, json_key
from hpn.config import Model
from hpn.units import parse_duration

MAX_WORKERS = 16


class ValidateOptions(Model):
    """The ``[pool]`` table of ``pool validate``."""

    folder: str | None = Field(
        None, description="folder of Aegaeon workload CSVs", json_schema_extra={"flag": None}
    )
    policy: list[str] = Field(default_factory=list, description="policies (default: all)")
    gpu: str = Field("h100", description="GPU type (the artifact's simulator: h100)")
    gpus: int = Field(16, ge=2, le=512, description="GPUs (split policies: 3:5)")
    workload: str = Field(
        "simulator", description="simulator (as the authors' simulator runs a file) or file"
    )
    reference: str | None = Field(None, description="CSV file,policy,attainment to compare with")
    workers: int = Field(1, ge=1, le=MAX_WORKERS, description="files simulated in parallel")
    ttft_slo: str = Field("10s", description="TTFT SLO")
    tbt_slo: str = Field("100ms", description="TBT SLO")


class ValidateConfig(Model):
    """``hpn pool validate``: ``[pool]``."""

    pool: ValidateOptions = Field(default_factory=ValidateOptions)


_COLUMNS = (
    ("file", "file"),
    ("policy", "policy"),
    ("att %", "attainment"),
    ("art %", "attainment_artifact"),
    ("failed", "failed"),
    ("TTFT p50", "ttft_p50_s"),
    ("TTFT p99", "ttft_p99_s"),
    ("TBT p50", "tbt_p50_s"),
    ("TBT p99", "tbt_p99_s"),
    ("wall s", "wall_s"),
)


@dataclass
class ValidateResult(Result):
    folder: str
    gpu: str
    gpus: int
    workload: str
    points: list[dict[str, Any]] = field(metadata=json_key("rows"))  # one per policy x CSV

    def heading(self) -> str:
        return f"pool validate: {self.folder}"

    def lines(self) -> list[str]:
        cols = list(_COLUMNS)
        if any(r.get("reference") is not None for r in self.points):
            cols += [("ref %", "reference"), ("diff", "difference")]
        table = [[h for h, _ in cols]] + [
            ["" if r.get(k) is None else str(r[k]) for _, k in cols] for r in self.points
        ]
        width = [max(len(row[i]) for row in table) for i in range(len(cols))]
        out = [f"pool validate: {self.folder} ({self.gpus} x {self.gpu}, {self.workload} workload)"]
        out += ["  ".join(c.ljust(w) for c, w in zip(row, width, strict=True)) for row in table]
        return out


def validate(cfg: ValidateConfig) -> Outcome[ValidateResult]:
    """Every policy (or ``policy``) on every Aegaeon workload CSV of ``folder``."""
    from hpn.errors import InputError
    from hpn.pool.policies.base import Slo
    from hpn.pool.validate import validate as run

    p = cfg.pool
    if p.folder is None:
        raise InputError("folder", "give the folder of Aegaeon workload CSVs: pool validate DIR")
    slo = Slo(parse_duration(p.ttft_slo, "ttft-slo"), parse_duration(p.tbt_slo, "tbt-slo"))
    res = run(p.folder, p.policy or None, p.gpu, p.gpus, p.workload, p.reference, p.workers, slo)
    d = res.to_dict()
    columns = {k: [r[k] for r in d["rows"]] for k in (d["rows"][0] if d["rows"] else {})}
    return Outcome(ValidateResult.from_dict(d), {"validate": columns})


def _folder(path: Any) -> dict[str, Any]:
    return {"pool": {"folder": str(Path(path))}}


VALIDATE = Command(
    "pool validate",
    ValidateConfig,
    validate,
    flags=("pool",),
    files=(FileInput("dir", "folder of Aegaeon workload CSVs", _folder, argument=True),),
)
