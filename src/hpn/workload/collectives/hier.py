"""Hierarchical collectives: inside each host over NVLink, across hosts per rail, then inside
the host again; phases are separated by barriers (no cross-phase pipelining).

``hier``: the in-host phases are NVLink rings, one after the other (barriers between phases).
``nvls``: AllReduce with NVLS-style in-switch reduction, pipelined as NCCL streams chunks:
in-host reduce-scatter by the NVSwitch (each GPU sends its whole buffer up and gets its reduced
shard back), per-rail AllReduce of the shards across hosts, and in-host multicast allgather
(each GPU sends its shard up and gets every shard back) all run at once (the fluid limit of
chunking): per GPU ``size * (1 + 1/k)`` up and down NVLink, one coupled group per host.
``nvlstree``: the same in-host NVLS with a double binary tree per rail across hosts.
"""

from __future__ import annotations

import numpy as np

from hpn.errors import InputError
from hpn.workload.collectives.context import Ctx, Params
from hpn.workload.collectives.ring import build_ring


def _intra(ctx: Ctx, op: str, ranks: np.ndarray, size: float, p: Params, start: int):
    """One in-host phase on every host at once; returns its end barrier."""
    h, k = ranks.shape
    if k == 1:
        return start
    one = Params(channels=1, conns=1, alpha=p.alpha)
    ends = [build_ring(ctx, op, row[None, :], size, one, start)[0] for row in ranks]
    return ctx.barrier(int(ranks[0, 0]), (k - 1) * p.alpha, np.concatenate(ends))


def _inter(ctx: Ctx, op: str, ranks: np.ndarray, size: float, p: Params, start: int):
    """The same ``op`` on each rail (local index) across hosts; returns its end barrier."""
    h, k = ranks.shape
    if h == 1:
        return start
    chans = max((p.channels or k) // k, 1)
    rp = Params(channels=chans, conns=p.conns, alpha=p.alpha, stepwise=p.stepwise, chunk=p.chunk)
    ends, steps = [], 0
    for i in range(k):
        e, steps = build_ring(ctx, op, ranks[:, i : i + 1], size, rp, start)
        ends.append(e)
    return ctx.barrier(int(ranks[0, 0]), 0 if p.stepwise else steps * p.alpha, np.concatenate(ends))


def build_hier(ctx: Ctx, op: str, ranks: np.ndarray, size: float, p: Params, start: int):
    k = ranks.shape[1]
    if op == "allreduce":
        t = _intra(ctx, "reducescatter", ranks, size, p, start)
        t = _inter(ctx, "allreduce", ranks, size / k, p, t)
        t = _intra(ctx, "allgather", ranks, size, p, t)
    elif op == "allgather":  # size: the total gathered buffer
        t = _inter(ctx, "allgather", ranks, size / k, p, start)
        t = _intra(ctx, "allgather", ranks, size, p, t)
    elif op == "reducescatter":
        t = _intra(ctx, "reducescatter", ranks, size, p, start)
        t = _inter(ctx, "reducescatter", ranks, size / k, p, t)
    else:
        raise InputError("algo", f"hier does not implement {op}")
    return np.array([t]), 0


def build_nvls(ctx: Ctx, op: str, ranks: np.ndarray, size: float, p: Params, start: int):
    h, k = ranks.shape
    e = p.eff  # NCCL's NVLS efficiency: the switch flows carry bytes / eff
    if op == "allreduce":
        up = down = size * (1 + 1 / k) / e
    elif op == "allgather":  # each GPU multicasts its shard, receives the others
        up, down = size / k / e, size * (k - 1) / k / e
    elif op == "reducescatter":  # each GPU pushes what the others reduce, gets its shard
        up, down = size * (k - 1) / k / e, size / k / e
    else:
        raise InputError("algo", f"nvls does not implement {op}")
    if h > 1 and op != "allreduce":
        raise InputError("algo", f"nvls across hosts implements allreduce only, not {op}")
    ends = [ctx.switch_flows(row, up, down, after=start) for row in ranks if k > 1]
    if h > 1:
        ends.append(np.array([_inter(ctx, "allreduce", ranks, size / k, p, start)]))
    return np.concatenate(ends), 2 if h == 1 else 0


def build_nvlstree(ctx: Ctx, op: str, ranks: np.ndarray, size: float, p: Params, start: int):
    """NCCL's NVLSTree AllReduce: in-switch reduce-scatter and multicast allgather in every
    host (the switch flows carry ``bytes / eff``), and between them, pipelined, a double
    binary tree across hosts per local rank (the NVLS head of that shard) on its rail,
    ``channels / per_host`` tree channels each."""
    from hpn.workload.collectives.tree import build_tree

    if op != "allreduce":
        raise InputError("algo", f"nvlstree implements allreduce only, not {op}")
    h, k = ranks.shape
    if h < 2 or k < 2:
        raise InputError("algo", "nvlstree needs at least 2 hosts of at least 2 GPUs")
    both = size * (1 + 1 / k) / p.eff
    ends = [ctx.switch_flows(row, both, both, after=start) for row in ranks]
    tp = Params(channels=max((p.channels or k) // k, 1), conns=p.conns, alpha=p.alpha)
    for i in range(k):
        ends.append(build_tree(ctx, "allreduce", ranks[:, i : i + 1], size / k, tp, start)[0])
    return np.concatenate(ends), 0
