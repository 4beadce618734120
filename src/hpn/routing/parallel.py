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

The number of threads is the number of cores the process may use less those other work keeps
busy at the call (tasks runnable besides this one, Linux's ``/proc/loadavg``: a second thread
on a core another process holds costs CPU and saves no time), or ``HPN_ROUTING_THREADS``
(``1``: one thread); calls with fewer than `SPLIT_MIN` flows or pairs use one. The results do
not depend on it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from hpn.errors import InputError

ENV = "HPN_ROUTING_THREADS"
SPLIT_MIN = 20_000  # flows (pairs) of a call below which one thread walks them all


def threads() -> int:
    """Threads the routing kernels use: ``HPN_ROUTING_THREADS`` if set, else the cores this
    process may run on less the ones busy with other work now (at least 1).

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
    if hasattr(os, "sched_getaffinity"):
        cores = len(os.sched_getaffinity(0))
    else:
        cores = os.cpu_count() or 1
    return max(1, cores - busy())


def busy(loadavg: str = "/proc/loadavg") -> int:
    """Tasks runnable now besides this process's one (Linux's ``/proc/loadavg``, fourth
    field: runnable/total); 0 where it cannot be read.

    Parameters
    ----------
    loadavg
        The file to read.

    Returns
    -------
    int
        Runnable tasks other than this one.
    """
    try:
        with open(loadavg) as f:
            runnable = int(f.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return 0
    return max(0, runnable - 1)


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
    """``[fn(*job) for job in jobs]``, one thread per job (the first in this one); an
    exception in any job is raised after all have ended.

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
    out: list[Any] = [None] * len(jobs)
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            out[i] = fn(*jobs[i])
        except BaseException as e:  # (re-raised below, in the caller's thread)
            errors.append(e)

    others = [threading.Thread(target=work, args=(i,)) for i in range(1, len(jobs))]
    for t in others:
        t.start()
    if jobs:
        work(0)
    for t in others:
        t.join()
    if errors:
        raise errors[0]
    return out


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
