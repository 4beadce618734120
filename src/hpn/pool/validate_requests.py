"""Request by request against the Aegaeon authors' simulator: which requests fail, and when
each gets its first token.

The authors' simulator (Art ``aegaeon/sim``) is run outside this package; its per-request
output for workload file ``F.csv`` and policy P is a CSV ``F.P.requests.csv`` (for
``serverless-artifact``, its ``SeLLMPolicy``, also ``F.requests.csv``; for ``aegaeon``, its
``MixServePolicy``) with the columns
``req_id, model, arrival_ms, input_len, output_len, state, first_token_ms, last_token_ms,
tokens, token_ms`` (``state`` FINISHED or FAILED; ``token_ms`` the space-separated token
times, ms). Requests are matched on (model, arrival ms, input length, output length), which
:func:`hpn.pool.traces.artifact_sim.as_artifact_simulator` reproduces exactly.

Limits: at most ``MAX_ROWS`` requests per file.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path
from typing import TypedDict

from hpn.errors import InputError
from hpn.pool.metrics import slo_attainment_artifact
from hpn.pool.requests import Request

MAX_ROWS = 1_000_000
COLUMNS = ("req_id", "model", "arrival_ms", "input_len", "output_len", "state", "first_token_ms")
TTFT_CLOSE_S = 1.0  # first tokens this close count as agreeing (the simulator's ms steps)


class RefRequest(TypedDict):
    """One request of the authors' simulator's output."""

    model: str
    arrival_ms: int
    input_len: int
    output_len: int
    failed: bool
    first_token_ms: int | None
    token_ms: list[int]


class RequestDiff(TypedDict):
    """How one file's requests compare (``pool validate --requests``)."""

    matched: int
    unmatched: int  # requests of either side without a partner
    failed_both: int
    failed_only_ours: int
    failed_only_reference: int
    differing: int  # outcome differs: failed on one side only, or first tokens > 1 s apart
    ttft_mean_abs_diff_s: float | None  # over requests served on both sides
    reference_attainment: float  # %, the artifact's accounting on the simulator's token times


def reference_file(
    folder: str | Path, workload: str, policy: str = "serverless-artifact"
) -> Path | None:
    """The per-request output for workload file ``workload`` and ``policy``, if there is one.

    Parameters
    ----------
    folder
        The folder of ``F.P.requests.csv`` (and ``F.requests.csv``) files.
    workload
        The workload file's name (``F.csv``).
    policy
        Our policy the output is compared with.

    Returns
    -------
    Path or None
        ``folder/F.P.requests.csv`` when it is a file, else for ``serverless-artifact``
        ``folder/F.requests.csv`` and for ``aegaeon-artifact`` ``folder/F.aegaeon.requests.csv``
        when it is one.
    """
    stem = workload[:-4] if workload.lower().endswith(".csv") else workload
    names = [f"{stem}.{policy}.requests.csv"]
    if policy == "serverless-artifact":
        names.append(f"{stem}.requests.csv")
    if policy == "aegaeon-artifact":  # the same simulator output as aegaeon's (MixServe)
        names.append(f"{stem}.aegaeon.requests.csv")
    for n in names:
        p = Path(folder) / n
        if p.is_file():
            return p
    return None


def read_requests(path: str | Path) -> list[RefRequest]:
    """The authors' simulator's per-request output (module docstring).

    Parameters
    ----------
    path
        The ``.requests.csv`` file.

    Returns
    -------
    list of RefRequest
        In file order.

    Raises
    ------
    InputError
        For a missing column, a bad value or too many rows.
    """
    out: list[RefRequest] = []
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise InputError(f"{path}:1", f"missing columns {', '.join(missing)}")
        for no, row in enumerate(reader, start=2):
            if len(out) >= MAX_ROWS:
                raise InputError(str(path), f"more than {MAX_ROWS} requests")
            try:
                toks = [int(float(t)) for t in (row.get("token_ms") or "").split()]
                first = row["first_token_ms"].strip()
                out.append(
                    RefRequest(
                        model=row["model"].strip().removeprefix("ModelType."),
                        arrival_ms=int(float(row["arrival_ms"])),
                        input_len=int(row["input_len"]),
                        output_len=int(row["output_len"]),
                        failed=row["state"].strip().upper() == "FAILED",
                        first_token_ms=int(float(first)) if first else None,
                        token_ms=toks,
                    )
                )
            except (ValueError, KeyError) as e:
                raise InputError(f"{path}:{no}", f"bad row: {e}") from None
    return out


def _attainment(refs: list[RefRequest], ttft: float, tbt: float) -> float:
    total = 0.0
    for r in refs:
        if r["failed"] or not r["token_ms"] or len(r["token_ms"]) < r["output_len"]:
            continue  # failed or incomplete: 0
        a = r["arrival_ms"] / 1000
        total += slo_attainment_artifact(a, [t / 1000 for t in r["token_ms"]], ttft, tbt)
    return 100 * total / len(refs) if refs else 100.0


def compare(ours: list[Request], refs: list[RefRequest], ttft: float, tbt: float) -> RequestDiff:
    """Match our requests with the simulator's and count where their outcomes differ.

    Parameters
    ----------
    ours
        Our run's requests (``simulate(..., observe=...)``; their model is the file's name).
    refs
        The simulator's requests.
    ttft, tbt
        The SLOs, s (the reference attainment).

    Returns
    -------
    RequestDiff
        The counts.
    """
    pool: dict[tuple, list[RefRequest]] = defaultdict(list)
    for r in refs:
        pool[(r["model"], r["arrival_ms"], r["input_len"], r["output_len"])].append(r)
    matched = unmatched = both = only_ours = only_ref = differing = 0
    diffs: list[float] = []
    for q in ours:
        key = (q.model, round(q.arrival * 1000), q.input_len, q.output_len)
        cands = pool.get(key)
        if not cands:
            unmatched += 1
            continue
        r = cands.pop()
        matched += 1
        ours_failed = q.failed or q.first_t < 0
        if ours_failed and r["failed"]:
            both += 1
        elif ours_failed != r["failed"]:
            differing += 1
            only_ours += ours_failed
            only_ref += r["failed"]
        elif r["first_token_ms"] is not None:
            d = abs(q.first_t - r["first_token_ms"] / 1000)
            diffs.append(d)
            differing += d > TTFT_CLOSE_S
    unmatched += sum(len(v) for v in pool.values())
    return RequestDiff(
        matched=matched,
        unmatched=unmatched,
        failed_both=both,
        failed_only_ours=only_ours,
        failed_only_reference=only_ref,
        differing=differing,
        ttft_mean_abs_diff_s=round(sum(diffs) / len(diffs), 4) if diffs else None,
        reference_attainment=round(_attainment(refs, ttft, tbt), 2),
    )


__all__ = ["RefRequest", "RequestDiff", "compare", "read_requests", "reference_file"]
