"""Collective operations and nccl-tests' bandwidth definitions.

``size`` is what nccl-tests prints: the per-rank buffer for AllReduce, Broadcast, AllToAll and
Send/Recv; the total (gathered) buffer for AllGather and ReduceScatter. ``algbw = size / time``
and ``busbw = algbw * factor(n)`` with nccl-tests' factors, so busbw compares with link speed
whatever the rank count.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hpn.registry import Registry


@dataclass(frozen=True)
class Op:
    name: str
    busbw_factor: Callable[[int], float]
    default_algo: str
    summary: str


OPS: Registry[Op] = Registry("operation", field="op")


def _op(name: str, factor: Callable[[int], float], algo: str, summary: str) -> None:
    OPS.add(name, Op(name, factor, algo, summary), summary)


_op("allreduce", lambda n: 2 * (n - 1) / n, "ring", "every rank gets the sum of all buffers")
_op("allgather", lambda n: (n - 1) / n, "ring", "every rank gets every rank's shard")
_op("reducescatter", lambda n: (n - 1) / n, "ring", "every rank gets one reduced shard")
_op("alltoall", lambda n: (n - 1) / n, "direct", "every rank sends size/n to every rank")
_op("sendrecv", lambda n: 1.0, "direct", "rank r sends size to rank r + 1")
_op("broadcast", lambda n: 1.0, "ring", "rank 0's buffer to every rank")
_op("reduce", lambda n: 1.0, "ring", "the sum of all buffers to rank 0")
_op(
    "multi-allreduce",
    lambda n: 2 * (n - 1) / n,
    "ring",
    "one AllReduce per local rank (rail) across hosts, all at once (paper Fig 17c)",
)


def get_op(name: str) -> Op:
    return OPS.get(name)


def bandwidths(op: str, size: float, time_s: float, n: int) -> tuple[float, float]:
    """(algbw, busbw) in bytes/s, as nccl-tests defines them."""
    algbw = size / time_s if time_s > 0 else float("inf")
    return algbw, algbw * get_op(op).busbw_factor(n)
