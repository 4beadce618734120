"""Halving-doubling (Rabenseifner): reduce-scatter by recursive halving, then allgather by
recursive doubling, over a power-of-two rank count. Partners at distance 1, 2, 4, ... first,
so the largest exchanges stay inside a host (NVLink). Step by step: ``log2 n`` steps per phase,
each flow waiting for what its sender received in the previous step."""

from __future__ import annotations

import numpy as np

from hpn.errors import InputError
from hpn.workload.collectives.context import Ctx, Params


def hd_schedule(op: str, n: int) -> list[tuple[int, float]]:
    """(partner distance, bytes / size) per step."""
    if n < 2 or n & (n - 1):
        raise InputError("gpus", f"halving-doubling needs a power-of-two rank count, got {n}")
    L = n.bit_length() - 1
    halving = [(1 << s, 1 / (2 << s)) for s in range(L)]  # send half of what is left
    doubling = [(d, b) for d, b in reversed(halving)]
    if op == "allreduce":
        return halving + doubling
    if op == "reducescatter":
        return halving
    if op == "allgather":
        return doubling
    raise InputError("algo", f"hd does not implement {op}")


def build_hd(
    ctx: Ctx, op: str, ranks: np.ndarray, size: float, p: Params, start: int
) -> tuple[np.ndarray, int]:
    flat = ranks.ravel()
    n = len(flat)
    sched = hd_schedule(op, n)
    ctx.check_budget(len(sched) * n * p.conns, "algo")
    r = np.arange(n)
    prev: np.ndarray | None = None
    pprev = r
    for dist, frac in sched:
        partner = r ^ dist
        ids = np.stack(
            [
                ctx.flows(flat, flat[partner], frac * size / p.conns, q, delay=p.alpha)
                for q in range(p.conns)
            ]
        )  # (conns, n)
        if prev is None:
            ctx.dag.add_deps(start, ids.ravel())
        else:  # rank r's sends wait for its receives of the previous step (from r ^ d_prev)
            before = prev[:, pprev]
            for q in range(p.conns):
                for q2 in range(p.conns):
                    ctx.dag.add_deps(before[q], ids[q2])
        prev, pprev = ids, partner
    assert prev is not None  # hd_schedule has at least one step (n >= 2)
    return prev.ravel(), 0
