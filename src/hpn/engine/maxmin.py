"""Max-min fair rates by progressive filling, vectorized on a sparse user x link incidence.

A *user* is a flow or a coupled group of flows. ``weight[u, l]`` is how many of a user's flows
cross link ``l`` (1 for a plain flow): the user's load on ``l`` is ``weight * rate``.

All unfrozen users rise together at one level ``x``. Link ``l`` saturates when
``frozen_load_l + n_l * x = capacity_l`` (``n_l`` = unfrozen weight on ``l``), i.e. at
``x_l = remaining_l / n_l``. Each round takes the smallest ``x_l``, freezes every user that
crosses a link saturating at that level (within a relative ``eps``), and repeats: the number
of rounds is the number of distinct bottleneck levels, each round two sparse mat-vecs.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

EPS = 1e-9


def incidence(rows: np.ndarray, cols: np.ndarray, n_users: int, n_links: int) -> sp.csr_matrix:
    """The user x link matrix with duplicate (user, link) entries summed into weights."""
    data = np.ones(len(rows), np.float64)
    m = sp.csr_matrix((data, (rows, cols)), shape=(n_users, n_links))
    m.sum_duplicates()
    return m


def maxmin_rates(a: sp.csr_matrix, capacity: np.ndarray, eps: float = EPS) -> np.ndarray:
    """Max-min fair rate per user (row of ``a``) under per-link ``capacity`` (columns).

    Users that cross no link get ``inf``. Capacities may be 0 (their users get 0).
    """
    n_users = a.shape[0]
    rate = np.full(n_users, np.inf)
    at = a.T.tocsr()
    live = np.diff(a.indptr) > 0  # users not yet frozen (that cross some link)
    n = at @ live.astype(np.float64)  # unfrozen weight per link
    rem = np.asarray(capacity, np.float64).copy()
    while live.any():
        on = n > 0.5
        share = np.full(len(n), np.inf)
        share[on] = rem[on] / n[on]
        level = share.min()
        bottleneck = share <= level * (1 + eps) if level > 0 else share <= 0
        hit = ((a @ bottleneck.astype(np.float64)) > 0) & live
        rate[hit] = level
        live &= ~hit
        dn = at @ hit.astype(np.float64)
        rem -= level * dn
        np.maximum(rem, 0.0, out=rem)
        n -= dn
    return rate
