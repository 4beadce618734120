"""Double binary tree AllReduce (NCCL's tree): two binary trees over the hosts, each carrying
half the data, built so a host interior in one is a leaf in the other (NCCL's
``ncclGetBtree``/``ncclGetDtree``); inside a host the GPUs form a chain ending at the GPU of the
channel's index, which is the host's node in the trees (same-rail host edges). Reduce (up) and
broadcast (down) are pipelined together: per (tree, channel, connection) one coupled group.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from hpn.errors import InputError
from hpn.workload.collectives.context import Ctx, Params


def btree(n: int) -> np.ndarray:
    """Parent of each of ``n`` ranks in NCCL's binary tree (-1 at the root, rank 0)."""
    parent = np.full(n, -1, np.int64)
    for r in range(1, n):
        bit = 1
        while not bit & r:
            bit <<= 1
        up = (r ^ bit) | (bit << 1)
        parent[r] = up if up < n else r ^ bit
    return parent


def dtree(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The two trees: the second is the first shifted by one (odd n) or mirrored (even n)."""
    t0 = btree(n)
    if n % 2:
        r = (np.arange(n) - 1) % n  # rank r plays r - 1 of the first tree
        back = (t0[r] + 1) % n
    else:
        r = n - 1 - np.arange(n)
        back = n - 1 - t0[r]
    t1 = np.where(t0[r] < 0, -1, back)
    return t0, t1


def depth(parent: np.ndarray) -> int:
    """Edges on the longest root-to-leaf path."""
    d = np.zeros(len(parent), np.int64)
    for _ in range(len(parent)):
        nd = np.where(parent < 0, 0, d[np.maximum(parent, 0)] + 1)
        if (nd == d).all():
            break
        d = nd
    return int(d.max())


@cache
def link_load(h: int, k: int) -> float:
    """The most bytes one GPU sends over one of its links (its NVLink or its NIC) per byte
    of data, in one channel of both trees, as :func:`build_tree` lays them out.

    NCCL's Tree bandwidth is ``.5 x`` its bus bandwidth (tuning.cc: ``ratio *= .5``) at every
    host count: each byte crosses the busiest link twice. That holds where a rank is
    interior, with two children in one tree (from 4 hosts) or on an in-host chain (3+ GPUs
    per host): 2. On 2 hosts of 1 GPU each GPU is the root of one tree and the leaf of the
    other and sends each half once: 1 (3 hosts of 1: 1.5).
    """
    trees = dtree(h) if h > 1 else (np.full(1, -1),)
    nic, nvl = np.zeros(h), np.zeros(k)  # per host's channel GPU; per chain position
    share = 1 / len(trees)
    for parent in trees:
        child = np.flatnonzero(parent >= 0)
        np.add.at(nic, child, share)  # up to the parent
        np.add.at(nic, parent[child], share)  # down to each child
        nvl[:-1] += share  # up the chain (position k - 1 is the channel's GPU)
        nvl[1:] += share  # down the chain
    return float(max(nic.max(), nvl.max()))


def build_tree(ctx: Ctx, op: str, ranks: np.ndarray, size: float, p: Params, start: int):
    if op != "allreduce":
        raise InputError("algo", f"tree implements allreduce only, not {op}")
    if p.stepwise:
        raise InputError("algo", "tree has no step-by-step form; use ring or hd")
    h, k = ranks.shape
    chans = p.channels or k
    trees = dtree(h) if h > 1 else (np.full(1, -1), np.full(1, -1))
    ctx.check_budget(2 * chans * p.conns * 2 * h * k, "algo")
    ends = []
    for t, parent in enumerate(trees[: 2 if h > 1 else 1]):
        for c in range(chans):
            g = c % k
            chain = (g + 1 + np.arange(k)) % k  # ends at local GPU g
            child = np.flatnonzero(parent >= 0)
            up_src = np.concatenate([ranks[:, chain[:-1]].ravel(), ranks[child, g]])
            up_dst = np.concatenate([ranks[:, chain[1:]].ravel(), ranks[parent[child], g]])
            src, dst = np.concatenate([up_src, up_dst]), np.concatenate([up_dst, up_src])
            share = size / ((2 if h > 1 else 1) * chans * p.conns)
            for q in range(p.conns):
                qp = (t * chans + c) * p.conns + q
                ends.append(ctx.flows(src, dst, share, qp, after=start, coupled=True))
    d = max(depth(x) for x in trees)
    return np.concatenate(ends), 2 * (d + k - 1)
