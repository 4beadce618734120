"""Metrics as Aegaeon defines them: per-token deadlines, SLO attainment, goodput threshold.

SLO attainment of a request (A §2.1, Fig 3): token k is due at arrival + TTFT_SLO +
(k-1)*TBT_SLO; the time between a token and the one before it (arrival for the first)
counts as on schedule when that token meets its deadline, so early tokens build slack that
absorbs later delays. Attainment = on-schedule time / (last token - arrival); an unfinished
or failed request scores 0; the pool figure is the mean over requests. This is our reading of
"the share of token-generation time that is on schedule"; the artifact's
`compute_request_metrics` is more lenient after a miss (`slo_attainment_artifact`, reported
alongside; see docs/guide/pool.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from hpn.pool.result import PoolResult

if TYPE_CHECKING:
    from hpn.pool.backend import Instance
    from hpn.pool.requests import Request

GOODPUT_ATTAINMENT = 0.9


class Recorder:
    """The metrics sink of a run (`backend.MetricsSink`): token gaps as a run-length
    histogram, scale-ups, GPU-busy seconds and failures."""

    def __init__(self) -> None:
        self.gaps: list[tuple[float, int]] = []
        self.switches = 0
        self.busy_by_instance: dict[int, float] = {}
        self.failures = 0

    def tokens(self, req: Request, t_first: float, step: float, n: int, gap: float | None) -> None:
        """Count the token gaps (`backend.MetricsSink.tokens`)."""
        if gap is not None:
            self.gaps.append((gap, 1))
        if n > 1:
            self.gaps.append((step, n - 1))

    def switched(self, inst: Instance, model: str, t: float) -> None:
        """Count a scale-up."""
        self.switches += 1

    def busy(self, inst: Instance, seconds: float) -> None:
        """Add `seconds` x `inst.tp` GPU-seconds to the instance."""
        b = self.busy_by_instance
        b[inst.iid] = b.get(inst.iid, 0.0) + seconds * inst.tp

    @property
    def busy_gpu_s(self) -> float:
        """GPU-seconds spent computing, all instances."""
        return sum(v for _, v in sorted(self.busy_by_instance.items()))

    def failed(self, req: Request) -> None:
        """Count a failed request."""
        self.failures += 1


def slo_attainment(
    arrival: float, token_times: Sequence[float] | np.ndarray, ttft_slo: float, tbt_slo: float
) -> float:
    """Reference (token by token) attainment of one finished request.

    Token ``k`` is on time if it comes by ``arrival + ttft_slo + k * tbt_slo``; the request's
    attainment is the share of its lifetime covered by gaps that end on time.

    Parameters
    ----------
    arrival
        Arrival time, s.
    token_times
        Time of each token, s.
    ttft_slo, tbt_slo
        Time-to-first-token and time-between-tokens SLOs, s.

    Returns
    -------
    float
        In [0, 1].

    Examples
    --------
    >>> slo_attainment(0.0, [0.5, 0.6, 0.7], 1.0, 0.1)
    1.0
    """
    prev, credit = arrival, 0.0
    for k, t in enumerate(token_times):
        if t <= arrival + ttft_slo + k * tbt_slo + 1e-9:
            credit += t - prev
        prev = t
    span = prev - arrival
    return min(1.0, credit / span) if span > 0 else 1.0


def slo_attainment_artifact(
    arrival: float, token_times: Sequence[float] | np.ndarray, ttft_slo: float, tbt_slo: float
) -> float:
    """Reference of the Aegaeon artifact's accounting (`compute_request_metrics` in
    aegaeon/aegaeon/utils.py as described in aegaeon-facts §5): lenient after a miss.

    Parameters
    ----------
    arrival
        Arrival time, s.
    token_times
        Time of each token, s.
    ttft_slo, tbt_slo
        Time-to-first-token and time-between-tokens SLOs, s.

    Returns
    -------
    float
        In [0, 1].
    """
    start, target, credit, total = arrival, ttft_slo, 0.0, 0.0
    for t in token_times:
        if t - start <= target + 1e-9:
            credit = target
        else:
            total += credit
            start, credit = t, 0.0
        target += tbt_slo
    last = token_times[-1]
    total += min(target, last - start)
    span = last - arrival
    return min(1.0, total / span) if span > 0 else 1.0


def weighted_quantile(
    values: Sequence[float] | np.ndarray, weights: Sequence[float] | np.ndarray, q: float
) -> float:
    """The `q` quantile of `values` with `weights` (0 for no values).

    Parameters
    ----------
    values
        The values.
    weights
        A weight per value (run lengths of a histogram).
    q
        Quantile in [0, 1].

    Returns
    -------
    float
        The smallest value whose cumulative weight reaches ``q`` of the total.

    Examples
    --------
    >>> weighted_quantile([1.0, 2.0, 3.0], [1, 1, 2], 0.5)
    2.0
    """
    if len(values) == 0:
        return 0.0
    v = np.asarray(values, dtype=float)
    w = np.asarray(weights, dtype=float)
    order = np.argsort(v)
    v, w = v[order], np.cumsum(w[order])
    return float(v[min(np.searchsorted(w, q * w[-1]), len(v) - 1)])


def summarize(
    requests: Sequence[Request],
    gaps: Sequence[tuple[float, int]],
    *,
    policy: str,
    gpu: str,
    gpus: int,
    switches: int,
    busy_gpu_s: float,
    span: float,
    wall: float = 0.0,
) -> PoolResult:
    """Pool metrics from finished request states and the token-gap histogram.

    Parameters
    ----------
    requests
        Every request of the run, in its final state.
    gaps
        ``(gap, count)`` token-gap runs of the :class:`Recorder`.
    policy, gpu, gpus
        What was run.
    switches
        Scale-ups.
    busy_gpu_s
        GPU-seconds spent computing.
    span
        Seconds the run covered.
    wall
        Wall-clock seconds it took.

    Returns
    -------
    PoolResult
        Attainment (both accountings, overall and per model), TTFT and TBT quantiles,
        switches, utilization.
    """
    att = np.array([r.attainment() for r in requests]) if requests else np.zeros(0)
    ttft = np.array([r.first_t - r.arrival for r in requests if r.first_t >= 0])
    gv = [g for g, _ in gaps]
    gw = [w for _, w in gaps]
    names = sorted({r.model for r in requests})
    per_model: dict[str, list[float]] = {}
    per_model_a: dict[str, list[float]] = {}
    for r, a in zip(requests, att, strict=True):
        per_model.setdefault(r.model, []).append(float(a))
        per_model_a.setdefault(r.model, []).append(r.attainment_artifact())
    return PoolResult(
        policy=policy,
        gpu=gpu,
        gpus=gpus,
        models=len(names),
        requests=len(requests),
        slo_attainment=float(att.mean()) if len(att) else 1.0,
        slo_attainment_artifact=float(np.mean([r.attainment_artifact() for r in requests]))
        if requests
        else 1.0,
        finished=sum(1 for r in requests if r.done_t >= 0 and not r.failed),
        failed=sum(1 for r in requests if r.failed),
        ttft_p50_s=float(np.percentile(ttft, 50)) if len(ttft) else 0.0,
        ttft_p99_s=float(np.percentile(ttft, 99)) if len(ttft) else 0.0,
        tbt_p50_s=weighted_quantile(gv, gw, 0.50),
        tbt_p99_s=weighted_quantile(gv, gw, 0.99),
        switches=switches,
        gpu_utilization=busy_gpu_s / (gpus * span) if span > 0 and gpus else 0.0,
        models_per_gpu=0.0,
        span_s=span,
        wall_s=wall,
        per_model={k: float(np.mean(v)) for k, v in per_model.items()},
        per_model_artifact={k: float(np.mean(v)) for k, v in per_model_a.items()},
    )
