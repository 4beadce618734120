"""Running the compiled routing kernels on several cores: the flows (or HPN's pairs) of a call
are cut into parts by destination class, each part is walked by the kernel in its own thread
(the kernels release the GIL) with its own candidate-list store, and the parts' results are
put back in flow (pair) order.

Flows and pairs are independent of one another, so every part gets exactly what it gets in
the one-thread walk; list ids differ between stores, but they are internal. Where a result
would depend on the other parts (HPN's round-robin bond numbers a pair's candidates by its
position among all pairs of a round) or a part reports an error, the caller walks everything
in one thread, as before.

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


def parts(cls: np.ndarray, k: int, cuts: Sequence[int] | None = None) -> list[np.ndarray]:
    """Indices of ``cls`` (a class per flow) in ``k`` parts of about equal size, each sorted
    (flow order), a class in one part where a cut can move to a class boundary nearby.

    Parameters
    ----------
    cls
        Destination class of each flow (or pair).
    k
        Number of parts.
    cuts
        The first class of parts 1 .. k-1 (as :func:`cut_classes` gives them) to reuse;
        None: cut here.

    Returns
    -------
    list of numpy.ndarray
        ``len(cuts) + 1`` parts (some may be empty), part ``t`` the classes from cut ``t``.
    """
    cls = np.asarray(cls, np.int64)
    if cuts is None:
        cuts = cut_classes(cls, k)
    which = np.searchsorted(np.asarray(cuts, np.int64), cls, side="right")
    order = np.argsort(which, kind="stable")
    bounds = np.searchsorted(which[order], np.arange(len(cuts) + 2))
    return [order[bounds[t] : bounds[t + 1]] for t in range(len(cuts) + 1)]


def cut_classes(cls: np.ndarray, k: int) -> list[int]:
    """The first class of parts 1 .. k-1 when flows of classes ``cls`` are cut into ``k``
    parts of about equal count (at class boundaries; a class is never split)."""
    s = np.sort(np.asarray(cls, np.int64))
    n = len(s)
    out: list[int] = []
    for j in range(1, k):
        c = min(n * j // k, n - 1)
        lo = int(np.searchsorted(s, s[c], side="left"))
        hi = int(np.searchsorted(s, s[c], side="right"))
        near = [x for x in (lo, hi) if 0 < x < n]  # where a class begins
        if not near:
            continue
        at = min(near, key=lambda x: abs(x - c))
        if not out or int(s[at]) > out[-1]:
            out.append(int(s[at]))
    return out


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


def join_paths(n: int, parts_: Sequence[np.ndarray], got: Sequence[tuple]) -> tuple:
    """(offsets, links) of ``n`` flows from the parts' (offsets, links) (part ``t``: flows
    ``parts_[t]``, in that order)."""
    length = np.zeros(n, np.int64)
    for idx, (off, _) in zip(parts_, got, strict=True):
        length[idx] = np.diff(off)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(length, out=offsets[1:])
    links = np.empty(int(offsets[-1]), np.int64)
    for idx, (off, lk) in zip(parts_, got, strict=True):
        links[_spread(offsets[idx] - off[:-1], np.diff(off))] = lk
    return offsets, links


def join_items(n: int, parts_: Sequence[np.ndarray], got: Sequence[tuple]) -> tuple:
    """The search's (count, found per plane, items) for ``n`` pairs from the parts' (part
    ``t``: pairs ``parts_[t]``): items grouped by pair in pair order, each pair's in the
    order its part gave them; an item's pair is renumbered to the pair's index."""
    count = np.zeros(n, np.int64)
    found = np.zeros((n, 2), np.int64)
    for idx, (c, f, _) in zip(parts_, got, strict=True):
        count[idx], found[idx] = c, f
    start = np.cumsum(count) - count
    total = int(count.sum())
    first = next(its for _, _, its in got if len(its))
    items = tuple(np.empty(total, a.dtype) for a in first)
    for idx, (c, _, its) in zip(parts_, got, strict=True):
        if not len(its):
            continue
        at = _spread(start[idx] - (np.cumsum(c) - c), c)
        items[0][at] = idx[its[0]]
        for dst, src in zip(items[1:], its[1:], strict=True):
            dst[at] = src
    return count, found, items


def _spread(shift: np.ndarray, size: np.ndarray) -> np.ndarray:
    """Positions ``shift[g] + j`` for the ``j``-th of the concatenated groups of ``size``
    entries (``j`` counted over all groups)."""
    return np.repeat(shift, size) + np.arange(int(size.sum()))
