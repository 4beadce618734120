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

The number of threads is the number of cores the process may use, or ``HPN_ROUTING_THREADS``
(``1``: one thread); calls with fewer than `SPLIT_MIN` flows or pairs use one.
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
    process may run on.

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
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def ranges(n: int, k: int, key: np.ndarray | None = None) -> list[tuple[int, int]]:
    """``k`` consecutive ranges (lo, hi) of ``n`` flows (or pairs) of about equal size; with
    ``key``, each cut moves to the nearest place where the key changes (so equal keys side by
    side stay in one range; a range may then be empty).

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
    exception in any job is raised after all have ended."""
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
    """(offsets, links) of all flows from consecutive ranges' (offsets, links)."""
    offsets, shift = [np.zeros(1, np.int64)], 0
    for off, links in got:
        offsets.append(off[1:] + shift)
        shift += len(links)
    return np.concatenate(offsets), np.concatenate([links for _, links in got])


def join_items(got: Sequence[tuple]) -> tuple:
    """The search's (count, found per plane, items, (class ids, classes)) for all pairs from
    consecutive ranges' (an item's pair and its (source NIC, uplink) class numbered within
    its range; a source's pairs must all be in one range, so that ranges share no class)."""
    pairs, ids, n_pairs, n_ids = [], [], 0, 0
    for count, _, items, (cls, n) in got:
        pairs.append(items[0] + np.int32(n_pairs))
        ids.append(cls + np.int32(n_ids))
        n_pairs, n_ids = n_pairs + len(count), n_ids + n
    rest = (np.concatenate([items[f] for _, _, items, _ in got]) for f in range(1, 4))
    return (
        np.concatenate([count for count, _, _, _ in got]),
        np.concatenate([found for _, found, _, _ in got]),
        (np.concatenate(pairs), *rest),
        (np.concatenate(ids), n_ids),
    )
