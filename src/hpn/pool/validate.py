"""Validate the pool against the Aegaeon authors' simulator on its own workload files.

`validate(folder)` runs every policy (or the given ones) on every Aegaeon-format workload
CSV of a folder and returns one row per (file, policy): attainment under both accountings,
failed requests, TTFT and TBT percentiles, wall time. A reference CSV (`file,policy,
attainment`, attainment in % or as a fraction) adds the reference and the difference of
the artifact-metric attainment from it (the authors' simulator reports that metric).

Workloads (`workload`): "simulator" (default) runs each file as the authors' simulator
does (`traces.artifact_sim`: lengths redrawn from the file's pairs with seed 0, models
mapped by first appearance, the first 120 s), so rows compare request for request with
it; "file" replays the file's rows as written. Policy knobs (`options`) apply each to the
policies that declare it, e.g. ``{"costs": "artifact", "artifact": DIR}`` charges
serverless-artifact the authors' simulator's own latency model (`hpn.pool.artifact_costs`).

Limits: at most `MAX_FILES` files; every file must be an Aegaeon CSV (a folder with none is
an error).
"""

from __future__ import annotations

import csv
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hpn.errors import InputError
from hpn.pool.policies import POLICIES, get_policy
from hpn.pool.policies.base import Slo
from hpn.pool.simulate import split_gpus
from hpn.pool.validate_requests import RequestDiff, compare, read_requests, reference_file
from hpn.result import Result, json_key

MAX_FILES = 500
# what the authors' simulator runs: SeLLMPolicy and MixServePolicy
REQUEST_POLICIES = ("serverless-artifact", "aegaeon", "aegaeon-artifact")
WORKLOADS = ("simulator", "file")
HEADER = "Request Time,Model Name"


@dataclass(frozen=True)
class ValidateRow:
    """One (file, policy) result of `validate`; attainments in %."""

    file: str
    policy: str
    requests: int
    attainment: float  # deadline accounting, %
    attainment_artifact: float  # the artifact's accounting, %
    failed: int
    ttft_p50_s: float
    ttft_p99_s: float
    tbt_p50_s: float
    tbt_p99_s: float
    wall_s: float
    reference: float | None = None  # %, artifact accounting
    difference: float | None = None  # attainment_artifact - reference, points
    requests_diff: RequestDiff | None = None  # request by request (``requests`` folder)


_COLUMNS = (  # (heading, field) of the terminal table
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


def _flat(row: dict[str, Any]) -> dict[str, Any]:
    """A row with its request-level counts as plain columns (None where there are none)."""
    d = row.pop("requests_diff", None) or {}
    row["ref_failed"] = d["failed_both"] + d["failed_only_reference"] if d else None
    row["differing"] = d.get("differing")
    row["ttft_mean_abs_diff_s"] = d.get("ttft_mean_abs_diff_s")
    return row


@dataclass
class ValidateResult(Result):
    """Every row of one `validate` call, with the pool it ran on (``hpn pool validate``)."""

    folder: str
    gpu: str
    gpus: int
    workload: str
    points: list[ValidateRow] = field(default_factory=list, metadata=json_key("rows"))

    def to_json(self, detail: bool = False) -> dict[str, Any]:
        """The JSON form: the rows as objects under ``rows``."""
        return {**super().to_json(detail), "rows": [asdict(r) for r in self.points]}

    def table(self) -> list[dict[str, Any]]:
        """The rows with the request-level counts as plain columns."""
        return [_flat(asdict(r)) for r in self.points]

    def lines(self) -> list[str]:
        """The rows as a text table under a heading line."""
        cols = list(_COLUMNS)
        if any(r.reference is not None for r in self.points):
            cols += [("ref %", "reference"), ("diff", "difference")]
        values = [_flat(asdict(r)) for r in self.points]
        if any(r.requests_diff is not None for r in self.points):
            cols += [("ref failed", "ref_failed"), ("req differ", "differing")]
            cols += [("TTFT |diff| s", "ttft_mean_abs_diff_s")]
        table = [[h for h, _ in cols]] + [
            ["" if r[k] is None else str(r[k]) for _, k in cols] for r in values
        ]
        width = [max(len(row[i]) for row in table) for i in range(len(cols))]
        out = [f"pool validate: {self.folder} ({self.gpus} x {self.gpu}, {self.workload} workload)"]
        out += ["  ".join(c.ljust(w) for c, w in zip(row, width, strict=True)) for row in table]
        return out


def workload_files(folder: str | Path) -> list[Path]:
    """The Aegaeon-format CSVs of `folder`, sorted by name.

    Parameters
    ----------
    folder
        The folder.

    Returns
    -------
    list of Path
        Files whose first line is the Aegaeon header.

    Raises
    ------
    InputError
        When the folder is missing, holds none, or more than `MAX_FILES`.
    """
    d = Path(folder)
    if not d.is_dir():
        raise InputError("folder", f"{folder}: not a folder")
    files = []
    for p in sorted(d.glob("*.csv")):
        with open(p, encoding="utf-8", errors="replace") as f:
            if f.readline().startswith(HEADER):
                files.append(p)
    if not files:
        raise InputError("folder", f"{folder}: no Aegaeon workload CSV (header {HEADER},...)")
    if len(files) > MAX_FILES:
        raise InputError("folder", f"{folder}: {len(files)} workload files; at most {MAX_FILES}")
    return files


def _stem(name: str) -> str:
    return name[:-4] if name.lower().endswith(".csv") else name


def read_reference(path: str | Path, files: list[str], policies: list[str]) -> dict:
    """{(file, policy): attainment %} from a CSV with header file,policy,attainment (% or,
    when every value is at most 1, fractions); a file may be named with or without .csv.

    Parameters
    ----------
    path
        The reference CSV.
    files
        Names of the folder's workload files.
    policies
        Policies being run.

    Returns
    -------
    dict
        Attainment in % by (file name, policy).

    Raises
    ------
    InputError
        For a bad header, row, file name or policy.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError("reference", f"{path}: no such file")
    known = set(files) | {_stem(f) for f in files}
    out: dict[tuple[str, str], float] = {}
    with open(p, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    if not rows or [c.strip() for c in rows[0]] != ["file", "policy", "attainment"]:
        raise InputError(f"{path}:1", "expected header file,policy,attainment")
    for no, row in enumerate(rows[1:], start=2):
        if not any(c.strip() for c in row):
            continue
        where = f"{path}:{no}"
        if len(row) != 3:
            raise InputError(where, f"expected 3 columns, got {len(row)}")
        name, pol, value = (c.strip() for c in row)
        if name not in known:
            raise InputError(where, f"file {name!r} is not in the folder's workload files")
        pol = pol.lower()
        if pol not in POLICIES:
            raise POLICIES.unknown(pol, where)
        try:
            v = float(value.rstrip("%"))
        except ValueError:
            raise InputError(where, f"attainment: expected a number, got {value!r}") from None
        if not 0 <= v <= 100:
            raise InputError(where, f"attainment: must be in [0, 100] (or a fraction), got {v}")
        full = next(f for f in files if _stem(f) == _stem(name))
        if pol in policies:
            out[(full, pol)] = v
    if out and max(out.values()) <= 1.0:  # fractions, not percentages
        out = {k: 100.0 * v for k, v in out.items()}
    return out


def _one(args) -> ValidateRow:
    path, policy, gpu, gpus, workload, slo, requests, options = args
    from hpn.pool.simulate import simulate
    from hpn.pool.traces import load_trace
    from hpn.pool.traces.artifact_sim import as_artifact_simulator

    trace = load_trace(path, "aegaeon")
    if workload == "simulator":
        trace = as_artifact_simulator(trace)
    seen: list = []
    if get_policy(policy).split:
        p, d = split_gpus(gpus, 1)
        res = simulate(
            trace,
            policy,
            gpu=gpu,
            prefill_gpus=p,
            decode_gpus=d,
            slo=slo,
            options=options,
            observe=seen.extend,
        )
    else:
        res = simulate(
            trace, policy, gpu=gpu, gpus=gpus, slo=slo, options=options, observe=seen.extend
        )
    diff = None
    ref = None if requests is None else reference_file(requests, Path(path).name, policy)
    if ref is not None:
        diff = compare(seen, read_requests(ref), slo.ttft, slo.tbt)
    return ValidateRow(
        file=Path(path).name,
        policy=policy,
        requests=res.requests,
        attainment=round(100 * res.slo_attainment, 2),
        attainment_artifact=round(100 * res.slo_attainment_artifact, 2),
        failed=res.failed,
        ttft_p50_s=round(res.ttft_p50_s, 4),
        ttft_p99_s=round(res.ttft_p99_s, 4),
        tbt_p50_s=round(res.tbt_p50_s, 5),
        tbt_p99_s=round(res.tbt_p99_s, 5),
        wall_s=round(res.wall_s, 3),
        requests_diff=diff,
    )


def _own_options(names: list[str], options: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each policy's share of the knobs `options`, checked (defaults filled in)."""
    out: dict[str, dict[str, Any]] = {n: {} for n in names}
    for knob, value in options.items():
        owners = [n for n in POLICIES if knob in POLICIES[n].Knobs.model_fields]
        if not owners:
            raise InputError(
                f"pool.{knob}", "not a knob of any policy (hpn pool policies lists them)"
            )
        run = [n for n in names if n in owners]
        if not run:
            raise InputError(
                f"pool.{knob}", f"applies to policy {' or '.join(owners)}, not run here"
            )
        for n in run:
            out[n][knob] = value
    return out


def validate(
    folder: str | Path,
    policies: list[str] | None = None,
    gpu: str = "h100",
    gpus: int = 16,
    workload: str = "simulator",
    reference: str | Path | None = None,
    workers: int = 1,
    slo: Slo = Slo(),
    requests: str | Path | None = None,
    options: dict[str, Any] | None = None,
) -> ValidateResult:
    """Every policy on every Aegaeon workload file of `folder` (see the module docstring).

    Parameters
    ----------
    folder
        Folder of Aegaeon workload CSVs.
    policies
        Policies to run; None: all.
    gpu
        GPU preset.
    gpus
        GPUs of the pool (split 3:5 for split policies).
    workload
        ``simulator`` (as the authors' simulator generates it) or ``file`` (rows as written).
    reference
        Reference CSV of attainments to compare with; None: none.
    workers
        Processes running the (file, policy) pairs.
    slo
        TTFT and TBT SLOs.
    requests
        Folder of the authors' simulator's per-request outputs (``F.requests.csv``,
        :mod:`hpn.pool.validate_requests`) for the policies it simulates
        (``REQUEST_POLICIES``); rows with one get request-level counts, and its attainment
        as the reference when ``reference`` has none.
    options
        Policy knobs, each given to the policies run that declare it (an unknown knob, or
        one that no policy run declares, is an error).

    Returns
    -------
    ValidateResult
        One row per (file, policy).
    """
    if workload not in WORKLOADS:
        raise InputError("workload", f"unknown workload {workload!r}; choose from: simulator, file")
    if gpus < 2:
        raise InputError("gpus", f"need at least 2 GPUs (a prefill and a decode one), got {gpus}")
    if workers < 1:
        raise InputError("workers", f"must be >= 1, got {workers}")
    names = [get_policy(p).name for p in (policies or list(POLICIES))]
    files = workload_files(folder)
    ref = read_reference(reference, [f.name for f in files], names) if reference else {}
    from hpn.gpus import get_gpu

    gpu_type = get_gpu(gpu)
    g = gpu_type.name.lower()
    own = _own_options(names, options or {})
    for n in names:  # a bad knob or a missing artifact folder: refused before any work
        cls = get_policy(n)
        cls.latency(gpu_type, cls.options(own[n]))
    if requests is not None and not Path(requests).is_dir():
        raise InputError("requests", f"{requests}: not a folder")
    jobs = [
        (str(f), p, g, gpus, workload, slo, requests if p in REQUEST_POLICIES else None, own[p])
        for f in files
        for p in names
    ]
    if workers == 1 or len(jobs) == 1:
        rows = [_one(j) for j in jobs]
    else:
        with ProcessPoolExecutor(max_workers=workers) as ex:
            rows = list(ex.map(_one, jobs))
    out = []
    for r in rows:
        v = ref.get((r.file, r.policy))
        if v is None and r.requests_diff is not None:
            v = r.requests_diff["reference_attainment"]
        if v is not None:
            diff = round(r.attainment_artifact - v, 2)
            r = ValidateRow(**{**asdict(r), "reference": v, "difference": diff})
        out.append(r)
    return ValidateResult(str(folder), g, gpus, workload, out)
