"""Decode time quotas of Aegaeon's batched weighted round robin (A Eq. 2-3, Alg 2).

d_i = predicted decode step time of batch i; n_i = TBT_SLO / d_i; c = sum of the estimated
switch times of the distinct models in the round;
alpha = max(c / (min_k n_k * Q_MAX) + sum_k 1/n_k, 0.5); q_i = c / (n_i (alpha - sum_k 1/n_k)).
"""

from __future__ import annotations

Q_MAX = 4.0
ALPHA_FLOOR = 0.5


def quotas(step_times: list[float], switch_total: float, tbt_slo: float, q_max: float = Q_MAX):
    """(quotas q_i in seconds, alpha) for batches with step times d_i."""
    n = [tbt_slo / d for d in step_times]
    inv = sum(1.0 / x for x in n)
    alpha = max(switch_total / (min(n) * q_max) + inv, ALPHA_FLOOR)
    return [switch_total / (x * (alpha - inv)) for x in n], alpha


def round_length(step_times, switch_total, tbt_slo, q_max: float = Q_MAX) -> float:
    """R = c + sum q_i, which equals c * alpha / (alpha - sum 1/n)."""
    q, _ = quotas(step_times, switch_total, tbt_slo, q_max)
    return switch_total + sum(q)
