"""``hpn pool goodput`` with no ``--policy``: the paper's comparison (A Fig 11), every policy on
one pool, on both attainment accountings.

The five policies, named as the paper names what they stand for: ``aegaeon``;
``serverless-artifact``, the paper's ServerlessLLM curve (the authors' SimPy simulator,
Art ``aegaeon/sim/scheduler.py``); ``serverless``, vanilla ServerlessLLM (an engine start
per scale-up); ``muxserve``; ``dedicated`` (one GPU per model).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypedDict

from hpn.app.base import Outcome, Result

COMPARED: tuple[tuple[str, str], ...] = (
    ("aegaeon", "Aegaeon"),
    ("serverless-artifact", "ServerlessLLM (baseline of the paper, simulator of its authors)"),
    ("serverless", "vanilla ServerlessLLM (engine start per scale-up)"),
    ("muxserve", "MuxServe"),
    ("dedicated", "dedicated (one GPU per model)"),
)
"""(policy, what the paper calls it), in the order of the comparison."""
BASELINE = "serverless-artifact"
METRICS = ("deadline", "artifact")


class PolicyGoodput(TypedDict):
    """One policy of the comparison: most models at >= 90 % on each accounting."""

    policy: str
    name: str
    max_models: int  # deadline accounting (or the one asked for)
    attainment_at_max: float | None  # None when no model count passes
    max_models_artifact: int | None  # None when only one accounting ran
    attainment_at_max_artifact: float | None
    models_per_gpu: float | None
    evaluated: dict[str, float]  # attainment by model count tried (first accounting)
    evaluated_artifact: dict[str, float] | None
    unserved: dict[str, int]


@dataclass
class ComparisonResult(Result):
    rate: float
    gpu: str
    gpus: str
    metrics: list[str]
    policies: list[PolicyGoodput]
    aegaeon_over_baseline: dict[str, float | None]  # per metric: aegaeon / serverless-artifact

    def heading(self) -> str:
        return "pool goodput: the paper's comparison"

    def lines(self) -> list[str]:
        both = len(self.metrics) == 2
        head = f"{'policy':20s} {'max models':>10s} {'attainment':>10s}"
        if both:
            head += f" {'artifact':>9s} {'attainment':>10s}"
        out = [
            f"pool goodput at {self.rate:g} req/s per model, {self.gpus} {self.gpu}, "
            f">= 90 % SLO attainment ({' / '.join(self.metrics)} accounting)",
            head + "  what it is",
        ]
        for p in self.policies:
            row = f"{p['policy']:20s} {p['max_models']:>10d} {_att(p['attainment_at_max']):>10s}"
            if both:
                row += (
                    f" {p['max_models_artifact']:>9d} {_att(p['attainment_at_max_artifact']):>10s}"
                )
            out.append(f"{row}  {p['name']}")
        ratios = ", ".join(
            f"{m} {'-' if r is None else f'{r:.2f}x'}"
            for m, r in self.aegaeon_over_baseline.items()
        )
        out.append(f"aegaeon / ServerlessLLM baseline ({BASELINE}): {ratios}")
        return out


def _att(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def compare(
    p: Any,
    search: Callable[[Any, str, str, dict[int, Any]], dict[str, Any]],
    slo_table: Callable[[list[dict[str, Any]]], dict[str, list[Any]]],
) -> Outcome[ComparisonResult]:
    """Every policy of :data:`COMPARED` on the pool ``p`` describes.

    Parameters
    ----------
    p
        The ``[pool]`` table of ``pool goodput``.
    search
        ``search(p, policy, metric, results) -> goodput dict``
        (:func:`hpn.pool.search.goodput`); it applies each policy knob to its own policy only,
        and ``results`` (one dict per policy) lets the second accounting reuse the first's runs.
    slo_table
        Builds the ``slo`` table from the goodput dicts.

    Returns
    -------
    Outcome
        The comparison and the ``slo`` table of the first accounting.
    """
    metrics = [p.metric] if p.metric else list(METRICS)
    rows: list[PolicyGoodput] = []
    first: list[dict[str, Any]] = []
    for policy, name in COMPARED:
        memo: dict[int, Any] = {}
        runs = [search(p, policy, m, memo) for m in metrics]
        first.append(runs[0])
        second = runs[1] if len(runs) > 1 else None
        rows.append(
            PolicyGoodput(
                policy=policy,
                name=name,
                max_models=runs[0]["max_models"],
                attainment_at_max=_at_max(runs[0]),
                max_models_artifact=None if second is None else second["max_models"],
                attainment_at_max_artifact=None if second is None else _at_max(second),
                models_per_gpu=runs[0]["models_per_gpu"],
                evaluated=runs[0]["evaluated"],
                evaluated_artifact=None if second is None else second["evaluated"],
                unserved=runs[0]["unserved"],
            )
        )
    by = {r["policy"]: r for r in rows}
    ratios: dict[str, float | None] = {}
    for i, m in enumerate(metrics):
        key = "max_models" if i == 0 else "max_models_artifact"
        base, ours = by[BASELINE][key], by["aegaeon"][key]  # type: ignore[literal-required]
        ratios[m] = round(ours / base, 3) if base else None
    gpus = (
        f"{p.prefill_gpus}P+{p.decode_gpus}D"
        if p.gpus is None and p.prefill_gpus is not None
        else str(p.gpus or 16)
    )
    res = ComparisonResult(p.rate, p.gpu, gpus, metrics, rows, ratios)
    return Outcome(res, {"slo": slo_table(first)})


def _at_max(run: dict[str, Any]) -> float | None:
    return round(run["attainment_at_max"], 4) if run["max_models"] else None


__all__ = ["COMPARED", "ComparisonResult", "compare"]
