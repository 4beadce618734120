"""Goodput and capacity searches (the 90 % SLO-attainment threshold of A §7.2).

- `goodput`: the largest number of models, each at `rate` req/s on the synthetic market,
  that a fixed pool serves with attainment >= 90 % (doubling, then bisection; traces are
  nested in M, so adding models only adds requests).
- `capacity`: the fewest GPUs that keep a model mix at >= 90 %, for the pool and for every
  model of the mix (a request-weighted pool average alone would let a placement drop the
  rarely used models, which are most of a long-tail mix). One deployment per TP degree
  (as in production); split policies try a few prefill shares per size; `dedicated` sizes
  each model alone (its pool is separable) and sums.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NotRequired, TypedDict

import numpy as np

from hpn.errors import InputError
from hpn.pool.metrics import GOODPUT_ATTAINMENT
from hpn.pool.mixes import Mix
from hpn.pool.policies import get_policy
from hpn.pool.simulate import simulate
from hpn.pool.traces.synthetic import from_rates, market

PREFILL_SHARES = (0.25, 0.375, 0.5)
METRICS = ("deadline", "artifact")


class GroupFit(TypedDict):
    """How a TP group's fewest instances did: the split (split policies), the attainment
    and the worst model's (not for ``dedicated``, which sizes each model alone)."""

    prefill_gpus: NotRequired[int]
    decode_gpus: NotRequired[int]
    attainment: float
    worst_model: NotRequired[float]


class CapacityGroup(GroupFit):
    """The GPUs one TP group of a mix needs (``capacity``'s ``groups``)."""

    tp: int
    models: int
    gpus: int


def _score(res, metric: str) -> float:
    if metric not in METRICS:
        raise InputError("metric", f"unknown metric {metric!r}; use one of {METRICS}")
    return res.slo_attainment if metric == "deadline" else res.slo_attainment_artifact


def _last(holds: Callable[[int], bool], lo: int, hi: int) -> int:
    """The last n in [lo, hi) with ``holds(n)``, by bisection, given ``holds(lo)`` (or lo
    below the range) and not ``holds(hi)`` (or hi past it), ``holds`` monotone decreasing:
    the step both searches end with, after galloping to ``hi``."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if holds(mid) else (lo, mid)
    return lo


def largest_ok(ok: Callable[[int], bool], start: int, limit: int) -> int:
    """Largest n in [0, limit] with ok(n), assuming ok is monotone decreasing.

    Doubles from `start` until ``ok`` fails, then bisects.

    Parameters
    ----------
    ok
        The predicate.
    start
        First n tried.
    limit
        Largest n tried.

    Returns
    -------
    int
        0 when ``ok(1)`` fails.

    Examples
    --------
    >>> largest_ok(lambda n: n <= 37, 8, 1024)
    37
    """
    lo, hi = 0, None
    n = max(1, start)
    while n <= limit:
        if ok(n):
            lo, n = n, n * 2
        else:
            hi = n
            break
    return _last(ok, lo, hi if hi is not None else limit + 1)


def smallest_ok(ok: Callable[[int], bool], start: int, limit: int) -> int | None:
    """Smallest n in [start, limit] with ok(n), assuming ok is monotone increasing.

    Parameters
    ----------
    ok
        The predicate.
    start
        First n tried.
    limit
        Largest n tried.

    Returns
    -------
    int or None
        None when ``ok(limit)`` fails.

    Examples
    --------
    >>> smallest_ok(lambda n: n >= 37, 1, 512)
    37
    """
    lo, n = start - 1, start
    while not ok(n):
        lo = n
        if n >= limit:
            return None
        n = min(limit, n * 2)
    return _last(lambda m: not ok(m), lo, n) + 1


def goodput(
    policy: str,
    rate: float,
    duration: float = 300.0,
    seed: int = 0,
    start: int = 8,
    limit: int = 1024,
    metric: str = "deadline",
    results: dict[int, Any] | None = None,
    **sim: Any,
) -> dict:
    """Max models at `rate` req/s each with attainment >= 90 % on the given pool.

    Parameters
    ----------
    policy
        Policy name.
    rate
        Rate of each model, req/s.
    duration
        Seconds of each synthetic market simulated.
    seed
        Trace seed.
    start, limit
        First and largest model count tried.
    metric
        ``deadline`` or ``artifact`` attainment.
    results
        Simulated results by model count, read and filled: a search of the same pool under the
        other accounting passes the same dict and simulates only the counts not yet run.
    **sim
        Pool arguments of :func:`~hpn.pool.simulate.simulate` (``gpu``, ``gpus``, ...).

    Returns
    -------
    dict
        ``max_models``, attainment there, models per GPU and every count evaluated.
    """
    seen: dict[int, float] = {}
    unserved: dict[int, int] = {}
    memo = {} if results is None else results

    def ok(m: int) -> bool:
        res = memo.get(m)
        if res is None:
            res = memo[m] = simulate(market(m, rate, duration, seed), policy, **sim)
        seen[m] = _score(res, metric)
        if res.unserved_models:  # a placement that leaves models out serves fewer than m
            unserved[m] = res.unserved_models
            return False
        return seen[m] >= GOODPUT_ATTAINMENT

    best = largest_ok(ok, start, limit)
    gpus = sim.get("gpus") or (sim.get("prefill_gpus") or 0) + (sim.get("decode_gpus") or 0)
    return {
        "policy": policy,
        "rate": rate,
        "metric": metric,
        "max_models": best,
        "attainment_at_max": seen.get(best, 1.0),
        "models_per_gpu": best / gpus if gpus else None,
        "models_per_decode_gpu": best / sim["decode_gpus"] if sim.get("decode_gpus") else None,
        "evaluated": {str(k): round(v, 4) for k, v in sorted(seen.items())},
        "unserved": {str(k): v for k, v in sorted(unserved.items())},
    }


def _all_ok(res, metric: str) -> bool:
    return (
        res.unserved_models == 0
        and _score(res, metric) >= GOODPUT_ATTAINMENT
        and res.worst_model(metric) >= GOODPUT_ATTAINMENT
    )


def _group_capacity(
    trace, policy: str, tp: int, limit: int, metric: str, sim: dict
) -> CapacityGroup:
    split = get_policy(policy).split
    best: dict[int, GroupFit] = {}

    def ok(n_inst: int) -> bool:
        if split:
            shares = sorted({min(max(1, round(n_inst * s)), n_inst - 1) for s in PREFILL_SHARES})
            for p in shares:
                res = simulate(
                    trace, policy, prefill_gpus=p * tp, decode_gpus=(n_inst - p) * tp, **sim
                )
                if _all_ok(res, metric):
                    best[n_inst] = GroupFit(
                        prefill_gpus=p * tp,
                        decode_gpus=(n_inst - p) * tp,
                        attainment=_score(res, metric),
                        worst_model=res.worst_model(metric),
                    )
                    return True
            return False
        res = simulate(trace, policy, gpus=n_inst * tp, **sim)
        best[n_inst] = GroupFit(attainment=_score(res, metric), worst_model=res.worst_model(metric))
        return _all_ok(res, metric)

    n = smallest_ok(ok, 2 if split else 1, limit)
    if n is None:
        raise InputError("capacity", f"{policy} needs more than {limit * tp} GPUs for this mix")
    return CapacityGroup(tp=tp, models=len(trace.names), gpus=n * tp, **best[n])


def capacity(
    mix: Mix,
    policy: str,
    duration: float = 1800.0,
    seed: int = 0,
    limit: int = 512,
    metric: str = "deadline",
    **sim: Any,
) -> dict:
    """Fewest GPUs keeping every TP group of `mix` at >= 90 % attainment.

    Parameters
    ----------
    mix
        The models and their rates.
    policy
        Policy name.
    duration
        Seconds simulated.
    seed
        Trace seed.
    limit
        Most instances tried per group.
    metric
        ``deadline`` or ``artifact`` attainment.
    **sim
        Pool arguments of :func:`~hpn.pool.simulate.simulate` (``gpu``, ...).

    Returns
    -------
    dict
        GPUs in all and per TP group.
    """
    sim.setdefault("gpu", mix.gpu)
    groups: list[CapacityGroup] = []
    for tp, idx in mix.groups().items():
        names = [mix.names[i] for i in idx]
        kinds = [mix.kinds[i] for i in idx]
        rates = [mix.rates[i] for i in idx]
        trace = from_rates(rates, kinds, duration, seed, names)
        if policy == "dedicated":
            total, worst = 0, 1.0
            for k, name in enumerate(names):
                sub = trace.select(trace.model == k)
                sub = type(sub)(
                    sub.arrival,
                    np.zeros(len(sub), np.int32),
                    sub.input_len,
                    sub.output_len,
                    (name,),
                    (kinds[k],),
                    (rates[k],),
                )
                g = _group_capacity(sub, policy, tp, limit, metric, sim)
                total += g["gpus"]
                worst = min(worst, g["attainment"])
            groups.append(CapacityGroup(tp=tp, models=len(names), gpus=total, attainment=worst))
        else:
            groups.append(_group_capacity(trace, policy, tp, limit, metric, sim))
    return {
        "policy": policy,
        "gpu": get_gpu_name(sim["gpu"]),
        "metric": metric,
        "models": len(mix.names),
        "gpus": sum(g["gpus"] for g in groups),
        "groups": groups,
        "duration_s": duration,
    }


def get_gpu_name(gpu: str) -> str:
    """The canonical name of GPU preset `gpu`.

    Parameters
    ----------
    gpu
        A GPU name (case-insensitive).

    Returns
    -------
    str
        Its preset's name.
    """
    from hpn.gpus import get_gpu

    return get_gpu(gpu).name


__all__ = ["capacity", "goodput", "largest_ok", "smallest_ok"]
