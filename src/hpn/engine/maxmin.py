"""Max-min fair rates by progressive filling, vectorized on a sparse user x link incidence.

A *user* is a flow or a coupled group of flows. ``weight[u, l]`` is how many of a user's flows
cross link ``l`` (1 for a plain flow): the user's load on ``l`` is ``weight * rate``.

All unfrozen users rise together at one level ``x``. Link ``l`` saturates when
``frozen_load_l + n_l * x = capacity_l`` (``n_l`` = unfrozen weight on ``l``), i.e. at
``x_l = remaining_l / n_l``. Each round takes the smallest ``x_l``, freezes every user that
crosses a link saturating at that level (within a relative ``eps``), and repeats: the number
of rounds is the number of distinct bottleneck levels, each round two sparse mat-vecs.

A round does not scan every link: the links whose share is at most a threshold ``top`` are
kept in a small candidate set (shares change only on the links a round touches, which are
checked), so the minimum and the bottlenecks are found among the candidates; the set is
rebuilt, by a partition of all shares, when its minimum passes ``top``. It finds the same
links as a full scan, so the rates are bit-identical to it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

if TYPE_CHECKING:
    import scipy.sparse as sp

EPS = 1e-9
CANDIDATES = 2048  # links per candidate set


class Csr(NamedTuple):
    """A compressed-row matrix as plain numpy arrays (``scipy.sparse.csr_matrix``'s fields):
    what :func:`maxmin_rates` reads, so a small run's rates need no scipy import."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    shape: tuple[int, int]


def incidence_csr(rows: np.ndarray, cols: np.ndarray, n_users: int, n_links: int) -> Csr:
    """:func:`incidence` as a :class:`Csr` (numpy only): columns sorted within each row,
    duplicates summed, as ``sum_duplicates`` leaves a scipy matrix.

    Parameters
    ----------
    rows, cols, n_users, n_links
        As for :func:`incidence`.

    Returns
    -------
    Csr
        Weight of each link in each user's path.

    Examples
    --------
    >>> a = incidence_csr(np.array([1, 0, 1]), np.array([2, 1, 2]), 2, 3)
    >>> a.indptr.tolist(), a.indices.tolist(), a.data.tolist()
    ([0, 1, 2], [1, 2], [1.0, 2.0])
    """
    rows, cols = np.asarray(rows, np.int64), np.asarray(cols, np.int64)
    width = max(n_links, 1)
    key, count = np.unique(rows * width + cols, return_counts=True)
    r = key // width
    indptr = np.zeros(n_users + 1, np.int64)
    np.cumsum(np.bincount(r, minlength=n_users), out=indptr[1:])
    return Csr(indptr, key - r * width, count.astype(np.float64), (n_users, n_links))


def incidence(rows: np.ndarray, cols: np.ndarray, n_users: int, n_links: int) -> sp.csr_matrix:
    """The user x link matrix with duplicate (user, link) entries summed into weights.

    Parameters
    ----------
    rows
        User of each entry.
    cols
        Link of each entry.
    n_users, n_links
        Matrix shape.

    Returns
    -------
    scipy.sparse.csr_matrix
        Weight of each link in each user's path (:func:`incidence_csr`'s arrays).
    """
    import scipy.sparse as sp

    a = incidence_csr(rows, cols, n_users, n_links)
    return sp.csr_matrix((a.data, a.indices, a.indptr), shape=a.shape)


def _transpose(a: Csr | sp.csr_matrix) -> tuple[np.ndarray, np.ndarray]:
    """(indptr, row of each entry) of ``a``'s transpose: its entries grouped by column (a
    stable counting sort, so rows ascend within a column as ``a.T.tocsr()`` has them)."""
    n_links = a.shape[1]
    row = np.repeat(np.arange(a.shape[0]), np.diff(a.indptr))
    order = np.argsort(a.indices, kind="stable")
    indptr = np.zeros(n_links + 1, np.int64)
    np.cumsum(np.bincount(a.indices, minlength=n_links), out=indptr[1:])
    return indptr, row[order]


def _rows(indptr: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Positions of the entries of ``rows`` in a CSR with ``indptr``."""
    cnt = indptr[rows + 1] - indptr[rows]
    start = np.repeat(indptr[rows] - np.concatenate(([0], np.cumsum(cnt)[:-1])), cnt)
    return start + np.arange(int(cnt.sum()))


def maxmin_rates(a: Csr | sp.csr_matrix, capacity: np.ndarray, eps: float = EPS) -> np.ndarray:
    """Max-min fair rate per user (row of ``a``) under per-link ``capacity`` (columns).

    Users that cross no link get ``inf``. Capacities may be 0 (their users get 0). Each round
    costs O(links) plus the entries of the links and users it freezes, so the whole fill is
    O(rounds * links + nnz).

    Parameters
    ----------
    a
        User x link incidence (:func:`incidence` or :func:`incidence_csr`).
    capacity
        Capacity of each link.
    eps
        Relative tolerance of a link being full.

    Returns
    -------
    numpy.ndarray
        Rate of each user.

    Examples
    --------
    Users 0 and 1 share link 0 (10), users 1 and 2 share link 1 (4): link 1 fills first,
    giving 2 each, and user 0 takes what is left of link 0:

    >>> a = incidence(np.array([0, 1, 1, 2]), np.array([0, 0, 1, 1]), 3, 2)
    >>> maxmin_rates(a, np.array([10.0, 4.0])).tolist()
    [8.0, 2.0, 2.0]
    """
    n_users, n_links = a.shape
    rate = np.full(n_users, np.inf)
    at_indptr, at_indices = _transpose(a)
    live = np.diff(a.indptr) > 0  # users not yet frozen (that cross some link)
    n = np.bincount(a.indices, weights=a.data, minlength=n_links)  # unfrozen weight per link
    rem = np.asarray(capacity, np.float64).copy()
    share = np.full(n_links, np.inf)
    on = n > 0.5
    share[on] = rem[on] / n[on]
    left = int(live.sum())
    # invariant: every link with share <= top is in cand (inc: membership), all of cand too
    top, cand, inc = -np.inf, np.zeros(0, np.int64), np.zeros(n_links, bool)

    def gather(top):
        inc[:] = share <= top
        cand = np.flatnonzero(inc)
        return cand, share[cand]

    stamp = np.full(max(n_users, n_links), -1, np.int64)  # scratch for sort-free dedupe
    while left:
        if not len(cand):
            k = min(CANDIDATES, n_links - 1)
            top = np.partition(share, k)[k]
            cand, low = gather(top)
        else:
            low = share[cand]
        level = low.min()  # the global minimum: every share <= top is a candidate
        limit = level * (1 + eps) if level > 0 else 0.0
        if limit > top:  # bottlenecks may lie past the candidates
            top = limit
            cand, low = gather(top)
        bottleneck = cand[low <= limit]
        users = at_indices[_rows(at_indptr, bottleneck)]
        hit, _ = distinct(users[live[users]], stamp)
        rate[hit] = level
        live[hit] = False
        left -= len(hit)
        pos = _rows(a.indptr, hit)
        links = a.indices[pos]
        touched, local = distinct(links, stamp)
        dn = np.bincount(local, weights=a.data[pos], minlength=len(touched))
        rem[touched] = np.maximum(rem[touched] - level * dn, 0.0)
        n[touched] -= dn
        done = n[touched] < 0.5
        share[touched] = np.where(done, np.inf, rem[touched] / np.where(done, 1.0, n[touched]))
        keep = share[cand] <= top
        inc[cand[~keep]] = False
        add = touched[(share[touched] <= top) & ~inc[touched]]
        inc[add] = True
        cand = np.concatenate([cand[keep], add])
    return rate


def distinct(ids: np.ndarray, stamp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct values of ``ids``, unsorted; each element's index into them) without
    sorting; ``stamp`` is scratch space indexed by value (left as it was found: all -1).

    Parameters
    ----------
    ids
        Non-negative integers.
    stamp
        Scratch array, all -1, longer than the largest id.

    Returns
    -------
    tuple of numpy.ndarray
        The distinct values and, per element, its index into them.
    """
    k = np.arange(len(ids))
    stamp[ids] = k
    first = stamp[ids] == k  # one representative per value (its last occurrence)
    uniq = ids[first]
    stamp[uniq] = np.arange(len(uniq))
    local = stamp[ids]
    stamp[uniq] = -1
    return uniq, local


def gather_rows(start: np.ndarray, length: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row, position) for every element of the rows ``start[i] : start[i] + length[i]``.

    Parameters
    ----------
    start, length
        The rows.

    Returns
    -------
    tuple of numpy.ndarray
        Row index and position of every element, row by row.

    Examples
    --------
    >>> row, pos = gather_rows(np.array([5, 0]), np.array([2, 1]))
    >>> row.tolist(), pos.tolist()
    ([0, 0, 1], [5, 6, 0])
    """
    rep = np.repeat(np.arange(len(start)), length)
    base = np.repeat(start - np.concatenate(([0], np.cumsum(length)[:-1])), length)
    return rep, base + np.arange(len(rep))
