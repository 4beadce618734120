"""Run a trace through a policy on the simulated backend and measure it."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from hpn.errors import InputError
from hpn.pool.backend import SimulatedBackend
from hpn.pool.costs import CostModel
from hpn.pool.gpus import get_gpu
from hpn.pool.metrics import PoolResult, summarize
from hpn.pool.models import get_model
from hpn.pool.policies import Cluster, get_policy
from hpn.pool.requests import Request
from hpn.pool.traces.base import Trace

DRAIN_S = 300.0
DEFAULT_PREFILL_SHARE = 3 / 8  # the artifact runs 3 prefill + 5 decode engines per node


@dataclass(frozen=True)
class Slo:
    ttft: float = 10.0
    tbt: float = 0.1


def split_gpus(gpus: int, tp: int = 1) -> tuple[int, int]:
    """Default prefill/decode split of `gpus` (3:5, at least one instance each)."""
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
) -> PoolResult:
    """Simulate `trace` under `policy`; unfinished requests at trace end + `drain` score 0."""
    wall = time.perf_counter()
    cls = get_policy(policy)
    g = get_gpu(gpu)
    cost = CostModel(g, switch=switch)
    kinds = {name: get_model(kind) for name, kind in zip(trace.names, trace.kinds, strict=True)}
    tps = {m.tp for m in kinds.values()}
    if len(tps) > 1:
        raise InputError(
            "trace", f"models of one deployment must share a TP degree, got {sorted(tps)}"
        )
    tp = tps.pop() if tps else 1
    for name, m in kinds.items():
        cost.add(name, m)
    if cls.split:
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
    backend = SimulatedBackend(cost)
    for role, n in counts.items():
        backend.add_instances(n // tp, tp, role)

    span = max(trace.duration, 1e-9)
    counts_per_model = np.bincount(trace.model, minlength=len(trace.names))
    rates = {n: counts_per_model[i] / span for i, n in enumerate(trace.names)}
    cluster = Cluster(total, counts.get("prefill", 0), counts.get("decode", 0), tp)
    opts = dict(options or {})
    if cls.name == "aegaeon":
        opts.setdefault("tbt_slo", slo.tbt)
    pol = cls(backend, cost, cluster, rates, **opts)

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
    backend.schedule_all([(r.arrival, pol.on_arrival, (r,)) for r in reqs])
    end = trace.duration + drain
    backend.run(until=end)
    busy = sum(i.busy_s for i in backend.instances)
    res = summarize(
        reqs,
        backend.gaps,
        policy=cls.name,
        gpu=g.name,
        gpus=total,
        switches=backend.switches,
        busy_gpu_s=busy,
        span=min(backend.now(), end) or span,
        wall=time.perf_counter() - wall,
    )
    res.models = len(names)
    res.models_per_gpu = len(names) / total
    return res
