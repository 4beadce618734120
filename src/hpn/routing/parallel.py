"""Running the compiled routing kernels on several cores: the flows (or HPN's pairs) of a call
are cut into consecutive ranges, each walked by the kernel in its own thread (the kernels
release the GIL) with its own candidate-list store, and the ranges' results are put one after
the other.

Flows and pairs are independent of one another, so every range gets exactly what it gets in
the one-thread walk; list ids differ between stores, but they are internal. HPN's pairs are
cut between sources (a NIC's (NIC, uplink) classes are numbered within one range). Where a
result would depend on the other ranges (HPN's round-robin bond numbers a pair's candidates
by its position among all pairs of a round) or a range reports an error, the caller walks
everything in one thread, as before.

The number of threads is the number of cores this process may use, counted as loky and dask
count them: the CPUs of its affinity mask (``os.sched_getaffinity``), capped by its cgroup's CPU
quota (``cpu.max`` of cgroup v2, ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us`` of v1, rounded
up), or ``HPN_ROUTING_THREADS`` (``1``: one thread). The host's load is not counted: another
container's work says nothing about this process's share. Calls with fewer than `SPLIT_MIN`
flows or pairs use one thread. The results do not depend on it.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

import numpy as np

from hpn.errors import InputError

ENV = "HPN_ROUTING_THREADS"
SPLIT_MIN = 20_000  # flows (pairs) of a call below which one thread walks them all


def threads() -> int:
    """Threads the routing kernels use: ``HPN_ROUTING_THREADS`` if set, else :func:`cores`.

    Raises
    ------
    InputError
        When ``HPN_ROUTING_THREADS`` is not a positive integer.
    """
    env = os.environ.get(ENV, "").strip()
    if env:
        if not env.isdigit() or int(env) < 1:
            raise InputError(ENV, f"must be a positive integer (got {env!r})")
        return int(env)
    return cores()


def cores(cgroup: str = "/sys/fs/cgroup") -> int:
    """The cores this process may use: its affinity mask's CPUs, capped by its cgroup's CPU
    quota (at least 1).

    Parameters
    ----------
    cgroup
        Where the cgroup file system is mounted.

    Returns
    -------
    int
        Cores.
    """
    affinity = getattr(os, "sched_getaffinity", None)
    n = len(affinity(0)) if affinity is not None else os.cpu_count() or 1
    quota = cgroup_quota(cgroup)
    if quota is not None:
        n = min(n, math.ceil(quota))
    return max(1, n)


def cgroup_quota(root: str = "/sys/fs/cgroup") -> float | None:
    """The CPU quota of this process's cgroup, in cores (None: no quota, or not Linux).

    Reads cgroup v2's ``cpu.max`` (``QUOTA PERIOD`` or ``max PERIOD``), else v1's
    ``cpu/cpu.cfs_quota_us`` and ``cpu/cpu.cfs_period_us`` (a quota of -1: none).

    Parameters
    ----------
    root
        Where the cgroup file system is mounted.

    Returns
    -------
    float or None
        Quota / period.
    """

    def read(*parts: str) -> str | None:
        try:
            with open(os.path.join(root, *parts)) as f:
                return f.read().strip()
        except OSError:
            return None

    try:
        v2 = read("cpu.max")
        if v2 is not None:
            quota, _, period = v2.partition(" ")
            return None if quota == "max" else int(quota) / int(period or 100_000)
        q, per = read("cpu", "cpu.cfs_quota_us"), read("cpu", "cpu.cfs_period_us")
        if q is None or per is None or int(q) <= 0:
            return None
        return int(q) / int(per)
    except (ValueError, ZeroDivisionError):
        return None


def ranges(n: int, k: int, key: np.ndarray | None = None) -> list[tuple[int, int]]:
    """``k`` consecutive ranges (lo, hi) of ``n`` flows (or pairs) of about equal size; with
    ``key``, each cut moves to the nearest place where the key changes (so equal keys side by
    side stay in one range; a range may then be empty).

    Parameters
    ----------
    n
        Number of flows (pairs).
    k
        Number of ranges.
    key
        A key per flow (equal keys side by side stay in one range); None: cut anywhere.

    Returns
    -------
    list of tuple
        ``k`` (lo, hi), in order, covering ``0 .. n``.

    Examples
    --------
    >>> ranges(10, 2)
    [(0, 5), (5, 10)]
    >>> ranges(6, 2, np.array([0, 0, 0, 0, 1, 1]))
    [(0, 4), (4, 6)]
    """
    cuts = [0]
    change = None if key is None else np.flatnonzero(key[1:] != key[:-1]) + 1
    for j in range(1, k):
        c = n * j // k
        if change is not None:
            if not len(change):
                c = n
            else:
                i = int(np.searchsorted(change, c))
                near = change[max(i - 1, 0) : i + 1]
                c = int(near[np.argmin(np.abs(near - c))])
        cuts.append(max(c, cuts[-1]))
    cuts.append(n)
    return list(zip(cuts[:-1], cuts[1:], strict=True))


def run_parts(fn: Callable[..., Any], jobs: Sequence[tuple]) -> list[Any]:
    """``[fn(*job) for job in jobs]``, one thread per job (the first in this one, the others in
    a ``ThreadPoolExecutor``); an exception in any job is raised after all have ended.

    Parameters
    ----------
    fn
        The work (a kernel call that releases the GIL).
    jobs
        Its arguments, one tuple per thread.

    Returns
    -------
    list
        The results, in job order.
    """
    if len(jobs) <= 1:
        return [fn(*job) for job in jobs]
    with ThreadPoolExecutor(max_workers=len(jobs) - 1, thread_name_prefix="hpn-route") as pool:
        others = [pool.submit(fn, *job) for job in jobs[1:]]
        first: list[Any] = []
        error: BaseException | None = None
        try:
            first.append(fn(*jobs[0]))
        except BaseException as e:  # (raised once the others have ended)
            error = e
        wait(others)
    if error is not None:
        raise error
    for f in others:
        if f.exception() is not None:
            raise f.exception()  # type: ignore[misc]
    return first + [f.result() for f in others]


def join_paths(got: Sequence[tuple]) -> tuple:
    """(offsets, links) of all flows from consecutive ranges' (offsets, links).

    Parameters
    ----------
    got
        Each range's (offsets, links), in range order.

    Returns
    -------
    tuple
        (offsets, links) of the flows of all ranges, one range after the other.
    """
    offsets, shift = [np.zeros(1, np.int64)], 0
    for off, links in got:
        offsets.append(off[1:] + shift)
        shift += len(links)
    return np.concatenate(offsets), np.concatenate([links for _, links in got])


def join_items(got: list[list]) -> tuple:
    """The search's (count, found per plane, items, (class ids, classes), kept links) for all
    pairs from consecutive ranges' (an item's pair and its (source NIC, uplink) class
    numbered within its range; a source's pairs must all be in one range, so that ranges
    share no class). The kept links stay one array per range (where an item's links start
    is counted within its range's). The ranges' lists are emptied as they are joined
    (memory).

    Parameters
    ----------
    got
        Each range's [count, found per plane, [pair, sport, plane, uplink], [class ids,
        classes], [link starts, links, path length per pair]], in range order.

    Returns
    -------
    tuple
        (count, found per plane, (pair, sport, plane, uplink), (class ids, classes), (first
        pair of each range, each range's links, link starts, path length per pair)).
    """
    starts = np.cumsum([0] + [len(g[0]) for g in got])
    n_ids = np.cumsum([0] + [g[3][1] for g in got])
    for g, first, ids in zip(got, starts, n_ids, strict=False):
        g[2][0] += np.int32(first)  # pairs and classes numbered from the range's
        g[3][0] += np.int32(ids)

    def take(*at: int) -> np.ndarray:  # the ranges' arrays at ``g[at[0]][at[1]]..``, joined
        boxes = []
        for g in got:
            for k in at[:-1]:
                g = g[k]
            boxes.append(g)
        out = np.concatenate([box[at[-1]] for box in boxes])
        for box in boxes:
            box[at[-1]] = None  # (memory)
        return out

    return (
        take(0),
        take(1),
        tuple(take(2, f) for f in range(4)),
        (take(3, 0), int(n_ids[-1])),
        (starts[:-1], [g[4][1] for g in got], take(4, 0), take(4, 2)),
    )
