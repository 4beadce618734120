"""Direct (one-shot) algorithms: AllToAll with every pair at once, PXN AllToAll, Send/Recv.

``pxn``: NCCL's PXN. Data from GPU ``g`` of host A for GPU ``j`` of another host first moves
over NVLink to GPU ``j`` of host A (the destination's rail), which sends everything its host
has for GPU ``j`` of host B in one same-rail transfer. Relay and network transfers run at once
(the fluid limit of chunked pipelining).
"""

from __future__ import annotations

import numpy as np

from hpn.errors import InputError
from hpn.workload.collectives.context import Ctx, Params


def _split(ctx: Ctx, src, dst, size, p: Params, start) -> np.ndarray:
    return np.concatenate(
        [ctx.flows(src, dst, size / p.conns, q, after=start) for q in range(p.conns)]
    )


def build_direct(ctx: Ctx, op: str, ranks: np.ndarray, size: float, p: Params, start: int):
    flat = ranks.ravel()
    n = len(flat)
    if op == "sendrecv":
        return _split(ctx, flat, np.roll(flat, -1), size, p, start), 1
    if op != "alltoall":
        raise InputError("algo", f"direct implements alltoall and sendrecv, not {op}")
    ctx.check_budget(n * (n - 1) * p.conns, "gpus")
    i, j = np.divmod(np.arange(n * n), n)
    keep = i != j
    return _split(ctx, flat[i[keep]], flat[j[keep]], size / n, p, start), 1


def build_pxn(ctx: Ctx, op: str, ranks: np.ndarray, size: float, p: Params, start: int):
    if op != "alltoall":
        raise InputError("algo", f"pxn implements alltoall only, not {op}")
    h, k = ranks.shape
    n = h * k
    ctx.check_budget(h * (h - 1) * k * p.conns + h * k * k, "gpus")
    parts = []
    g, j = np.divmod(np.arange(k * k), k)
    off = g != j
    if k > 1:  # relay (and local delivery): host A's GPU g -> GPU j, for all hosts at once
        src = ranks[:, g[off]].ravel()
        dst = ranks[:, j[off]].ravel()
        parts.append(ctx.flows(src, dst, h * size / n, 0, after=start))
    if h > 1:
        a, b = np.divmod(np.arange(h * h), h)
        a, b = a[a != b], b[a != b]
        src = ranks[a].ravel()
        dst = ranks[b].ravel()
        parts.append(_split(ctx, src, dst, k * size / n, p, start))
    return np.concatenate(parts), 1
