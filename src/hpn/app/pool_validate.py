"""``hpn pool validate DIR``: every policy on every Aegaeon workload file of a folder, beside a
reference (the Aegaeon authors' simulator's numbers); the service is
:func:`hpn.pool.validate.validate`.

Its ``[pool]`` fields are followed by every policy knob (generated from each policy's
``Knobs``, as for ``pool simulate``); a knob applies to the policies run that declare it
(``--costs artifact --artifact DIR``: serverless-artifact on the authors' simulator's own
latency model).

Limits: at most 500 workload files, 16 worker processes.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field

from hpn.app.base import Command, FileInput, Outcome
from hpn.app.limits import slo_field
from hpn.config import FilePath, Model, Seconds

if TYPE_CHECKING:
    from hpn.pool.validate import ValidateResult

MAX_WORKERS = 16


class _ValidateFields(Model):
    """The ``[pool]`` table of ``pool validate``: its fields, then the policy knobs."""

    folder: FilePath | None = Field(
        None, description="folder of Aegaeon workload CSVs", json_schema_extra={"flag": None}
    )
    policy: list[str] = Field(default_factory=list, description="policies (default: all)")
    gpu: str = Field("h100", description="GPU type (the artifact's simulator: h100)")
    gpus: int = Field(16, ge=2, le=512, description="GPUs (split policies: 3:5)")
    workload: str = Field(
        "simulator", description="simulator (as the authors' simulator runs a file) or file"
    )
    reference: FilePath | None = Field(
        None, description="CSV file,policy,attainment to compare with"
    )
    requests: str | None = Field(
        None,
        description="folder of the authors' simulator's per-request outputs "
        "(F.POLICY.requests.csv; F.requests.csv for serverless-artifact)",
    )
    workers: int = Field(1, ge=1, le=MAX_WORKERS, description="files simulated in parallel")
    ttft_slo: Seconds = slo_field("10s", "TTFT")
    tbt_slo: Seconds = slo_field("100ms", "TBT")


if TYPE_CHECKING:
    ValidateOptions = _ValidateFields
else:
    from hpn.app.pool import _with_knobs

    ValidateOptions = _with_knobs("ValidateOptions", _ValidateFields)


def _knobs_given(p: Model) -> dict[str, Any]:
    """The policy knobs set in ``p`` (fields beyond the command's own)."""
    own = set(_ValidateFields.model_fields)
    return {k: v for k, v in p.model_dump().items() if k not in own and v is not None}


class ValidateConfig(Model):
    """``hpn pool validate``: ``[pool]``."""

    pool: ValidateOptions = Field(default_factory=ValidateOptions)


def validate(cfg: ValidateConfig) -> Outcome[ValidateResult]:
    """Every policy (or ``policy``) on every Aegaeon workload CSV of ``folder``."""
    from hpn.errors import InputError
    from hpn.pool.policies.base import Slo
    from hpn.pool.validate import validate as run

    p = cfg.pool
    if p.folder is None:
        raise InputError("folder", "give the folder of Aegaeon workload CSVs: pool validate DIR")
    slo = Slo(float(p.ttft_slo), float(p.tbt_slo))
    res = run(
        p.folder,
        p.policy or None,
        p.gpu,
        p.gpus,
        p.workload,
        p.reference,
        p.workers,
        slo,
        p.requests,
        _knobs_given(p),
    )
    rows = res.table()
    columns = {k: [r[k] for r in rows] for k in (rows[0] if rows else {})}
    return Outcome(res, {"validate": columns})


def _folder(path: Any) -> dict[str, Any]:
    return {"pool": {"folder": str(Path(path))}}


VALIDATE = Command(
    "pool validate",
    ValidateConfig,
    validate,
    flags=("pool",),
    files=(FileInput("dir", "folder of Aegaeon workload CSVs", _folder, argument=True),),
)
