"""Decode time quotas of Aegaeon's batched weighted round robin (A Eq. 2-3, Alg 2).

d_i = predicted decode step time of batch i; n_i = TBT_SLO / d_i; c = sum of the estimated
switch times of the distinct models in the round;
alpha = max(c / (min_k n_k * Q_MAX) + sum_k 1/n_k, 0.5); q_i = c / (n_i (alpha - sum_k 1/n_k)).
"""

from __future__ import annotations

Q_MAX = 4.0
ALPHA_FLOOR = 0.5


def quotas(
    step_times: list[float], switch_total: float, tbt_slo: float, q_max: float = Q_MAX
) -> tuple[list[float], float]:
    """(quotas q_i in seconds, alpha) for batches with step times d_i.

    Parameters
    ----------
    step_times
        Predicted decode step time d_i of each batch, s.
    switch_total
        c: the estimated switch times of the round's distinct models, s.
    tbt_slo
        Time-between-tokens SLO, s.
    q_max
        Q_MAX of A Eq. 3.

    Returns
    -------
    tuple
        ``(q, alpha)``: quota of each batch, s, and alpha.

    Examples
    --------
    Two batches with steps of 20 and 40 ms, 1 s of switching, a 100 ms TBT SLO: n = (5, 2.5),
    so alpha = 1 / (2.5 * 4) + 0.6 = 0.7 and q_i = c / (n_i (alpha - 0.6)):

    >>> q, alpha = quotas([0.02, 0.04], 1.0, 0.1)
    >>> [round(x, 6) for x in q], round(alpha, 6)
    ([2.0, 4.0], 0.7)
    """
    n = [tbt_slo / d for d in step_times]
    inv = sum(1.0 / x for x in n)
    alpha = max(switch_total / (min(n) * q_max) + inv, ALPHA_FLOOR)
    return [switch_total / (x * (alpha - inv)) for x in n], alpha


def round_length(
    step_times: list[float], switch_total: float, tbt_slo: float, q_max: float = Q_MAX
) -> float:
    """R = c + sum q_i, which equals c * alpha / (alpha - sum 1/n).

    Parameters
    ----------
    step_times
        Predicted decode step time of each batch, s.
    switch_total
        Switch time of the round, s.
    tbt_slo
        Time-between-tokens SLO, s.
    q_max
        Q_MAX of A Eq. 3.

    Returns
    -------
    float
        Seconds.

    Examples
    --------
    >>> round(round_length([0.02, 0.04], 1.0, 0.1), 6)
    7.0
    """
    q, _ = quotas(step_times, switch_total, tbt_slo, q_max)
    return switch_total + sum(q)
