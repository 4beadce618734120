"""Run a trace through a policy on the simulated backend and measure it."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from hpn.errors import InputError
from hpn.gpus import get_gpu
from hpn.pool.backend import Cluster
from hpn.pool.costs import CostModel
from hpn.pool.metrics import Recorder, summarize
from hpn.pool.models import get_model
from hpn.pool.policies import get_policy
from hpn.pool.policies.base import PolicyContext, Slo
from hpn.pool.predictor import Predictor
from hpn.pool.requests import Request
from hpn.pool.result import PoolResult
from hpn.pool.simulated import SimulatedBackend
from hpn.pool.traces.base import Trace

DRAIN_S = 300.0
DEFAULT_PREFILL_SHARE = 3 / 8  # the artifact runs 3 prefill + 5 decode engines per node


def expected_rates(trace: Trace) -> dict[str, float]:
    """The load forecast given to placement: the trace's declared per-model rates; for a
    trace that declares none, its mean observed rate per model (the forecast an operator
    would take from history; see docs/guide/pool.md).

    Parameters
    ----------
    trace
        The trace.

    Returns
    -------
    dict
        Rate of each model, req/s.
    """
    if trace.rates is not None:
        return dict(zip(trace.names, trace.rates, strict=True))
    span = max(trace.duration, 1e-9)
    counts = np.bincount(trace.model, minlength=len(trace.names))
    return {n: counts[i] / span for i, n in enumerate(trace.names)}


def split_gpus(gpus: int, tp: int = 1) -> tuple[int, int]:
    """Default prefill/decode split of `gpus` (3:5, at least one instance each).

    Parameters
    ----------
    gpus
        GPUs of the pool.
    tp
        GPUs per instance.

    Returns
    -------
    tuple of int
        ``(prefill_gpus, decode_gpus)``.

    Examples
    --------
    >>> split_gpus(16)
    (6, 10)
    """
    inst = gpus // tp
    p = min(max(1, round(inst * DEFAULT_PREFILL_SHARE)), inst - 1)
    return p * tp, (inst - p) * tp


def simulate(
    trace: Trace,
    policy: str = "aegaeon",
    gpu: str = "h800",
    gpus: int | None = None,
    prefill_gpus: int | None = None,
    decode_gpus: int | None = None,
    slo: Slo = Slo(),
    switch: str = "optimized",
    drain: float = DRAIN_S,
    options: dict | None = None,
    observe: Callable[[list[Request]], None] | None = None,
) -> PoolResult:
    """Simulate `trace` under `policy`; unfinished requests at trace end + `drain` score 0.

    Parameters
    ----------
    trace
        The requests.
    policy
        Policy name.
    gpu
        GPU preset.
    gpus
        GPUs of a colocated pool, or of a split one by :func:`split_gpus`.
    prefill_gpus, decode_gpus
        The partitions of a split pool (both or neither).
    slo
        TTFT and TBT SLOs.
    switch
        ``optimized`` (Aegaeon's loader) or ``unoptimized`` model switching.
    drain
        Seconds served after the last arrival.
    options
        Policy knobs (the policy's ``Knobs`` model; :meth:`Policy.options`).
    observe
        Called with the run's requests when it ends (request-level validation).

    Returns
    -------
    PoolResult
        The run's metrics.

    Raises
    ------
    InputError
        For an unknown policy, GPU or model, or a pool that does not fit.
    """
    wall = time.perf_counter()
    cls = get_policy(policy)
    g = get_gpu(gpu)
    opts = cls.options(options)
    loader, latency = cls.loader(g, switch, opts), cls.latency(g, opts)
    cost = CostModel(g, switch=switch, loader=loader, latency=latency)
    kinds = {name: get_model(kind) for name, kind in zip(trace.names, trace.kinds, strict=True)}
    tps = {m.tp for m in kinds.values()}
    if len(tps) > 1:
        raise InputError(
            "trace", f"models of one deployment must share a TP degree, got {sorted(tps)}"
        )
    tp = tps.pop() if tps else 1
    for name, m in kinds.items():
        cost.add(name, m)
    given = [n for n in (prefill_gpus, decode_gpus) if n is not None]
    if len(given) == 1:
        which = "prefill_gpus" if prefill_gpus is not None else "decode_gpus"
        raise InputError(which, "give both prefill_gpus and decode_gpus, or gpus alone")
    if gpus is not None and given and gpus != sum(given):
        raise InputError(
            "gpus",
            f"{gpus} is not prefill_gpus + decode_gpus = {prefill_gpus} + {decode_gpus}; "
            "give gpus alone, or the two that add up to it",
        )
    if cls.split:
        if gpus is not None and not given and gpus < 2 * tp:
            raise InputError(
                "gpus",
                f"{policy} splits GPUs into prefill and decode instances: needs at least "
                f"{2 * tp} (two instances of TP={tp}), got {gpus}",
            )
        if prefill_gpus is None or decode_gpus is None:
            if gpus is None:
                raise InputError(
                    "gpus", f"{policy} needs --prefill-gpus and --decode-gpus (or --gpus)"
                )
            prefill_gpus, decode_gpus = split_gpus(gpus, tp)
        counts = {"prefill": prefill_gpus, "decode": decode_gpus}
    else:
        if gpus is None:
            gpus = (prefill_gpus or 0) + (decode_gpus or 0) or None
        if gpus is None:
            raise InputError("gpus", f"{policy} needs --gpus")
        counts = {"worker": gpus}
    for role, n in counts.items():
        if n < tp or n % tp:
            raise InputError(
                f"{role}_gpus" if role != "worker" else "gpus",
                f"need a positive multiple of TP={tp} GPUs, got {n}",
            )
    total = sum(counts.values())
    cluster = Cluster(total, counts.get("prefill", 0), counts.get("decode", 0), tp)
    sink = Recorder()
    backend = SimulatedBackend(cost, cluster, sink)
    ctx = PolicyContext(backend, Predictor.from_cost(cost), cluster, expected_rates(trace), slo)
    pol = cls(ctx, **opts)

    names = trace.names
    reqs = [
        Request(i, names[m], float(a), int(li), int(lo), slo.ttft, slo.tbt)
        for i, (a, m, li, lo) in enumerate(
            zip(
                trace.arrival.tolist(),
                trace.model.tolist(),
                trace.input_len.tolist(),
                trace.output_len.tolist(),
                strict=True,
            )
        )
    ]
    end = trace.duration + drain
    backend.run(reqs, pol.on_arrival, until=end)
    if observe is not None:
        observe(reqs)
    res = summarize(
        reqs,
        sink.gaps,
        policy=cls.name,
        gpu=g.name,
        gpus=total,
        switches=sink.switches,
        busy_gpu_s=sink.busy_gpu_s,
        span=min(backend.now(), end) or max(trace.duration, 1e-9),
        wall=time.perf_counter() - wall,
    )
    res.models = len(names)
    res.unserved_models = len(pol.unserved)
    res.models_per_gpu = len(names) / total
    return res
