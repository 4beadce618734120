"""Ring collectives (NCCL's ring): AllReduce, AllGather, ReduceScatter, Broadcast and Reduce
(chains from and to rank 0).

Ring orders are rail-aware: channel ``c`` enters even hosts at local GPU ``c``, walks the host
over NVLink and leaves at GPU ``c - 1``; odd hosts are walked in reverse, so every host-to-host
edge joins GPUs of the same index (the same rail). With an odd host count the closing edge
crosses rails. Each (channel, connection) is a sub-ring carrying ``1 / (channels * conns)`` of
the data, modelled as one coupled group: a pipelined ring streams at its slowest edge.
"""

from __future__ import annotations

import numpy as np

from hpn.errors import InputError
from hpn.workload.collectives.context import Ctx, Params

RING_BYTES = {  # bytes per ring edge / size, with n ranks
    "allreduce": lambda n: 2 * (n - 1) / n,
    "allgather": lambda n: (n - 1) / n,
    "reducescatter": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
}
RING_STEPS = {"allreduce": lambda n: 2 * (n - 1), "broadcast": lambda n: n - 1}


def ring_steps(op: str, n: int) -> int:
    return RING_STEPS.get(op, lambda n: n - 1)(n)


def ring_order(hosts: int, per_host: int, channel: int) -> np.ndarray:
    """Rank indices (host * per_host + local) in ring order for ``channel``."""
    k = per_host
    rot = channel % k
    fwd = (rot + np.arange(k)) % k
    rev = (rot - 1 - np.arange(k)) % k
    if hosts == 1:
        return fwd
    local = np.where((np.arange(hosts) % 2 == 0)[:, None], fwd[None, :], rev[None, :])
    return (np.arange(hosts)[:, None] * k + local).ravel()


def build_ring(
    ctx: Ctx, op: str, ranks: np.ndarray, size: float, p: Params, start: int
) -> tuple[np.ndarray, int]:
    if op not in RING_BYTES:
        raise InputError("algo", f"ring does not implement {op}")
    h, k = ranks.shape
    n = h * k
    flat = ranks.ravel()
    chans = p.channels or k
    ctx.check_budget(n * chans * p.conns * (ring_steps(op, n) if p.stepwise else 1), "algo")
    ends: list[np.ndarray] = []
    share = size / (chans * p.conns)
    edges: list[tuple[np.ndarray, np.ndarray, int]] = []  # (src, dst, qp) per sub-ring
    for c in range(chans):
        order = flat[ring_order(h, k, c)]
        src, dst = order, np.roll(order, -1)
        if op in ("broadcast", "reduce"):  # a chain from (to) rank 0
            first = int(np.flatnonzero(order == flat[0])[0])
            src, dst = np.roll(src, -first)[:-1], np.roll(dst, -first)[:-1]
            if op == "reduce":
                src, dst = dst[::-1], src[::-1]
        for q in range(p.conns):
            qp = c * p.conns + q
            if p.stepwise:
                ends.append(_steps(ctx, op, src, dst, share, n, qp, p, start))
            else:
                edges.append((src, dst, qp))
    if edges:  # every sub-ring one coupled group, all added at once (in the same order)
        m = [len(e[0]) for e in edges]
        ends.append(
            ctx.flows(
                np.concatenate([e[0] for e in edges]),
                np.concatenate([e[1] for e in edges]),
                RING_BYTES[op](n) * share,
                np.repeat([e[2] for e in edges], m),
                after=start,
                groups=np.repeat(np.arange(len(edges)), m),
            )
        )
    return np.concatenate(ends), ring_steps(op, n)


def _steps(ctx: Ctx, op, src, dst, share, n, qp, p: Params, start) -> np.ndarray:
    """One flow per edge per step; a step's send waits for the previous step's receive."""
    e = len(src)
    if op in ("broadcast", "reduce"):
        chunks = max(int(np.ceil(share / p.chunk)), 1)
        prev_chunk: np.ndarray | None = None
        for _ in range(chunks):  # chunk i on edge j after chunk i on edge j-1 and i-1 on j
            ids = np.array(
                [
                    ctx.flows(src[j : j + 1], dst[j : j + 1], share / chunks, qp, delay=p.alpha)[0]
                    for j in range(e)
                ]
            )
            ctx.dag.add_deps(start, ids[0])
            ctx.dag.add_deps(ids[:-1], ids[1:])
            if prev_chunk is not None:
                ctx.dag.add_deps(prev_chunk, ids)
            prev_chunk = ids
        assert prev_chunk is not None  # chunks >= 1
        return prev_chunk
    prev: np.ndarray | None = None
    for _ in range(ring_steps(op, n)):
        ids = ctx.flows(src, dst, share / n, qp, delay=p.alpha)
        if prev is None:
            ctx.dag.add_deps(start, ids)
        else:  # the sender of edge j received on edge j - 1 in the previous step
            ctx.dag.add_deps(np.roll(prev, 1), ids)
        prev = ids
    assert prev is not None  # a ring of n >= 2 ranks has at least one step
    return prev
