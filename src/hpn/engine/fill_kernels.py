"""Compiled max-min filling and component search (numba, the ``fast`` extra), with the numpy
code as the fallback.

:func:`fill_rates` is progressive filling (:mod:`hpn.engine.maxmin`) on (user, link) hop
entries: counting sorts build both incidences, and a heap of link shares (stale entries
skipped) gives each round its level and bottlenecks. Each round freezes the same users at
the same level and updates each link with the same floating-point operations as
:func:`hpn.engine.maxmin.maxmin_rates` (weights are integer counts, so their sums are exact):
the rates are bit-identical to it, which a test checks. :func:`reached` finds the flows a
change can affect (union-find over the links). Without numba the numpy code runs.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

import numpy as np

from hpn import jit
from hpn.engine import kernels as _k
from hpn.engine.kernels import _use
from hpn.engine.maxmin import EPS, distinct, gather_rows, incidence_csr, maxmin_rates
from hpn.jit import compile_in

if TYPE_CHECKING:
    from hpn.topology.fabric import Fabric

_compiled: dict = {}
_prefetch = _k._prefetch  # a cache-line hint (the numba intrinsic once `_kernel` ran)


def _fill_kernel(rows, cols, n_users, n_links, cap, eps):  # pragma: no cover - compiled
    n_ent = len(rows)
    # entries grouped by user (counting sort), duplicates merged into weights
    cnt = np.zeros(n_users + 1, np.int64)
    for e in range(n_ent):
        cnt[rows[e] + 1] += 1
    for u in range(n_users):
        cnt[u + 1] += cnt[u]
    fill = cnt[:-1].copy()
    by_user = np.empty(n_ent, np.int32)  # link ids (< 2**31): half the scratch of int64
    for e in range(n_ent):
        by_user[fill[rows[e]]] = cols[e]
        fill[rows[e]] += 1
    stamp = np.full(n_links, -1, np.int64)
    u_ptr = np.zeros(n_users + 1, np.int64)
    u_link = np.empty(n_ent, np.int32)
    u_w = np.empty(n_ent, np.float64)
    k = 0
    for u in range(n_users):
        u_ptr[u] = k
        for j in range(cnt[u], cnt[u + 1]):
            lk = by_user[j]
            if stamp[lk] >= u_ptr[u]:
                u_w[stamp[lk]] += 1.0
            else:
                stamp[lk] = k
                u_link[k] = lk
                u_w[k] = 1.0
                k += 1
    u_ptr[n_users] = k
    by_user = np.empty(0, np.int32)  # freed before the next arrays
    # users per link
    l_ptr = np.zeros(n_links + 1, np.int64)
    for j in range(k):
        l_ptr[u_link[j] + 1] += 1
    for lk in range(n_links):
        l_ptr[lk + 1] += l_ptr[lk]
    lfill = l_ptr[:-1].copy()
    l_user = np.empty(k, np.int32)
    for u in range(n_users):
        for j in range(u_ptr[u], u_ptr[u + 1]):
            lk = u_link[j]
            l_user[lfill[lk]] = u
            lfill[lk] += 1
    n = np.zeros(n_links, np.float64)
    for u in range(n_users):
        for j in range(u_ptr[u], u_ptr[u + 1]):
            n[u_link[j]] += u_w[j]
    rem = cap.copy()
    share = np.full(n_links, np.inf)
    # a binary min-heap of (share, link) with stale entries skipped: a link's entry is valid
    # while its key equals its share; shares change only on the links a round touches
    cap_h = n_links + k + 1
    hkey = np.empty(cap_h, np.float64)
    hval = np.empty(cap_h, np.int64)
    size = 0
    for lk in range(n_links):
        if n[lk] > 0.5:
            share[lk] = rem[lk] / n[lk]
            size = _push(hkey, hval, size, share[lk], lk)
    rate = np.full(n_users, np.inf)
    live = np.zeros(n_users, np.bool_)
    left = 0
    for u in range(n_users):
        if u_ptr[u + 1] > u_ptr[u]:
            live[u] = True
            left += 1
    hit = np.empty(n_users, np.int64)
    dn = np.zeros(n_links, np.float64)
    touched = np.empty(n_links, np.int64)
    seen = np.zeros(n_links, np.bool_)
    while left > 0 and size > 0:
        # the lowest share: the first valid entry
        while size > 0 and hkey[0] != share[hval[0]]:
            size = _pop(hkey, hval, size)
        if size == 0:
            break
        level = hkey[0]
        limit = level * (1 + eps) if level > 0 else 0.0
        nh = 0
        while size > 0 and hkey[0] <= limit:
            lk = hval[0]
            valid = hkey[0] == share[lk]
            size = _pop(hkey, hval, size)
            if not valid:
                continue
            share[lk] = -1.0  # taken: a duplicate entry with the same key is not valid
            for j in range(l_ptr[lk], l_ptr[lk + 1]):
                u = l_user[j]
                if live[u]:
                    live[u] = False
                    rate[u] = level
                    hit[nh] = u
                    nh += 1
        nt = 0
        for i in range(nh):
            u = hit[i]
            for j in range(u_ptr[u], u_ptr[u + 1]):
                lk = u_link[j]
                if not seen[lk]:
                    seen[lk] = True
                    touched[nt] = lk
                    nt += 1
                dn[lk] += u_w[j]
        for i in range(nt):
            lk = touched[i]
            r = rem[lk] - level * dn[lk]
            rem[lk] = r if r > 0.0 else 0.0
            n[lk] -= dn[lk]
            share[lk] = np.inf if n[lk] < 0.5 else rem[lk] / n[lk]
            if share[lk] < np.inf:
                if size == len(hkey):
                    hkey, hval = _grow(hkey, hval)
                size = _push(hkey, hval, size, share[lk], lk)
            dn[lk] = 0.0
            seen[lk] = False
        left -= nh
    return rate


def _push(key, val, size, k, v):  # pragma: no cover - compiled
    i = size
    key[i], val[i] = k, v
    while i > 0:
        p = (i - 1) >> 1
        if key[p] <= key[i]:
            break
        key[p], key[i] = key[i], key[p]
        val[p], val[i] = val[i], val[p]
        i = p
    return size + 1


def _pop(key, val, size):  # pragma: no cover - compiled
    size -= 1
    key[0], val[0] = key[size], val[size]
    i = 0
    while True:
        a, b, m = 2 * i + 1, 2 * i + 2, i
        if a < size and key[a] < key[m]:
            m = a
        if b < size and key[b] < key[m]:
            m = b
        if m == i:
            return size
        key[m], key[i] = key[i], key[m]
        val[m], val[i] = val[i], val[m]
        i = m


def _grow(key, val):  # pragma: no cover - compiled
    k2 = np.empty(2 * len(key), np.float64)
    v2 = np.empty(2 * len(val), np.int64)
    k2[: len(key)] = key
    v2[: len(val)] = val
    return k2, v2


def _reach_kernel(start, length, links, user, n_users, n_live, stamp, u_row, u_len, u_links):
    # pragma: no cover - compiled
    # a user with u_len >= 0 crosses the links u_links[u_row[u] : u_row[u] + u_len[u]] (all
    # its flows' links): that row is walked once in place of its flows' rows
    nf = len(start)
    total = 0
    for i in range(nf):
        if u_len[user[i]] < 0:
            total += length[i]
    for u in range(n_users):
        if u_len[u] > 0:
            total += u_len[u]
    total = min(total, len(stamp))  # distinct links: at most every link once
    parent = np.empty(total, np.int64)  # union-find over the local ids of the links
    used = np.empty(total, np.int64)
    n = 0
    first = np.full(n_users, -1, np.int64)  # a link of each user
    for u in range(n_users):
        lo = u_row[u]
        for j in range(lo, lo + max(u_len[u], 0)):
            if j + 8 < lo + u_len[u]:
                _prefetch(stamp, u_links[j + 8])
            lk = u_links[j]
            x = stamp[lk]
            if x < 0:
                x = n
                stamp[lk] = n
                parent[n] = n
                used[n] = lk
                n += 1
            if first[u] < 0:
                first[u] = x
            else:
                a, b = _find(parent, first[u]), _find(parent, x)
                if a != b:
                    parent[a] = b
    for i in range(nf):
        if i + 4 < nf:  # a later flow's path row, and a nearer one's links' stamps
            _prefetch(links, start[i + 4])
        if i + 2 < nf and u_len[user[i + 2]] < 0:
            for j in range(start[i + 2], start[i + 2] + length[i + 2]):
                _prefetch(stamp, links[j])
        u = user[i]
        if u_len[u] >= 0:
            continue
        for j in range(start[i], start[i] + length[i]):
            lk = links[j]
            x = stamp[lk]
            if x < 0:
                x = n
                stamp[lk] = n
                parent[n] = n
                used[n] = lk
                n += 1
            if first[u] < 0:
                first[u] = x
            else:
                a, b = _find(parent, first[u]), _find(parent, x)
                if a != b:
                    parent[a] = b
    mark = np.zeros(n, np.bool_)
    for i in range(n_live, nf):
        if u_len[user[i]] >= 0:  # every link of the user is in first[u]'s component
            if length[i] > 0:
                mark[_find(parent, first[user[i]])] = True
            continue
        for j in range(start[i], start[i] + length[i]):
            mark[_find(parent, stamp[links[j]])] = True
    for k in range(n):
        if k + 16 < n:
            _prefetch(stamp, used[k + 16])
        stamp[used[k]] = -1
    out = np.zeros(n_live, np.bool_)
    for i in range(n_live):
        f = first[user[i]]
        out[i] = f >= 0 and mark[_find(parent, f)]
    return out


def _group_rows_kernel(group, start, length, links, n_groups, n_links):
    # pragma: no cover - compiled
    size = np.zeros(n_groups + 1, np.int64)  # members per group, then CSR offsets
    for f in range(len(group)):
        if group[f] >= 0:
            size[group[f] + 1] += 1
    for g in range(n_groups):
        size[g + 1] += size[g]
    fill = size[:-1].copy()
    member = np.empty(size[n_groups], np.int32)  # flows by group (a counting sort)
    for f in range(len(group)):
        g = group[f]
        if g >= 0:
            member[fill[g]] = f
            fill[g] += 1
    last = np.full(n_links, -1, np.int64)  # the last group that listed a link
    row = np.zeros(n_groups + 1, np.int64)
    for g in range(n_groups):  # pass 1: distinct links per group
        row[g + 1] = row[g]
        for m in range(size[g], size[g + 1]):
            f = member[m]
            for j in range(start[f], start[f] + length[f]):
                if last[links[j]] != g:
                    last[links[j]] = g
                    row[g + 1] += 1
    out = np.empty(row[n_groups], np.int32)
    last[:] = -1
    for g in range(n_groups):  # pass 2: the same walk, writing them
        k = row[g]
        for m in range(size[g], size[g + 1]):
            f = member[m]
            for j in range(start[f], start[f] + length[f]):
                if last[links[j]] != g:
                    last[links[j]] = g
                    out[k] = links[j]
                    k += 1
    count = np.empty(n_groups, np.int64)
    for g in range(n_groups):
        count[g] = size[g + 1] - size[g]
    return row, out, count


def group_rows(
    group: np.ndarray, start: np.ndarray, length: np.ndarray, links: np.ndarray, n_links: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each coupled group's distinct links, as rows for :func:`reached` (compiled only).

    Parameters
    ----------
    group
        Coupled group of each flow (-1: none), labels 0..k-1.
    start, length, links
        Each flow's path as rows of ``links``.
    n_links
        Number of links (ids are below it).

    Returns
    -------
    tuple of numpy.ndarray
        (CSR offsets per group, k + 1; the links, int32, each group's in the order its
        members (by id) first cross them; members per group).
    """
    n_groups = int(group.max(initial=-1)) + 1
    return _kernel("group_rows")(group, start, length, links, n_groups, n_links)


def _find(parent, x):  # pragma: no cover - compiled
    r = x
    while parent[r] != r:
        r = parent[r]
    while parent[x] != r:  # path compression
        parent[x], x = r, parent[x]
    return r


def _kernel(name: str):
    """The compiled kernel ``name`` (helpers compiled first, so the kernel calls them)."""
    if not _compiled:
        _k._helper("_prefetch")  # builds the intrinsic
        g = globals()
        g["_prefetch"] = _k._prefetch
        helpers = ("_push", "_pop", "_grow", "_find")
        kernels = {
            "fill": "_fill_kernel",
            "reach": "_reach_kernel",
            "group_rows": "_group_rows_kernel",
        }
        _compiled.update(compile_in(g, helpers, kernels))
    return _compiled[name]


def fill_rates(
    rows: np.ndarray,
    cols: np.ndarray,
    n_users: int,
    n_links: int,
    capacity: np.ndarray,
    eps: float = EPS,
    compiled: bool | None = None,
) -> np.ndarray:
    """Max-min fair rate per user; hop entry ``i`` puts user ``rows[i]`` on link ``cols[i]``
    (repeats count as weights). ``compiled``: force the numba kernel or the numpy code.

    Parameters
    ----------
    rows, cols
        User and link of each hop entry.
    n_users, n_links
        Number of users and links.
    capacity
        Capacity of each link.
    eps
        Relative tolerance of a link being full.
    compiled
        True: the numba kernel; False: :func:`hpn.engine.maxmin.maxmin_rates`; None: numba
        when installed.

    Returns
    -------
    numpy.ndarray
        Rate of each user.
    """
    use = _use() if compiled is None else compiled
    cap = np.asarray(capacity, np.float64)
    if use:
        return _kernel("fill")(
            np.asarray(rows, np.int64), np.asarray(cols, np.int64), n_users, n_links, cap, eps
        )
    return maxmin_rates(incidence_csr(rows, cols, n_users, n_links), cap, eps)


def reached(
    start: np.ndarray,
    length: np.ndarray,
    links: np.ndarray,
    user: np.ndarray,
    n_users: int,
    n_live: int,
    stamp: np.ndarray,
    rows: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    compiled: bool | None = None,
) -> np.ndarray:
    """For each of the first ``n_live`` flows: whether it is connected to a link of one of
    the others (the seeds). Flow ``i`` crosses ``links[start[i] : start[i] + length[i]]`` and
    belongs to user ``user[i]`` (a coupled group is one user); users sharing a link are
    connected (components of the user-link graph, by union-find over the links). ``stamp``:
    scratch indexed by link id, all -1 (left so). ``rows`` (the compiled kernel's shortcut,
    the same result): a user's links as one row, walked once instead of its flows' rows
    (a coupled group's members repeat links: half the hops on the 8-pod GPT-3 iteration).

    Parameters
    ----------
    start, length, links
        Each flow's path as rows of ``links``.
    user
        User of each flow.
    n_users
        Number of users.
    n_live
        Flows checked (the rest are the seeds).
    stamp
        Scratch indexed by link id.
    rows
        None, or (``row``, ``count``, ``row_links``) per user: a user with ``count[u] >= 0``
        crosses exactly the links ``row_links[row[u] : row[u] + count[u]]`` (repeats allowed)
        with the flows it has here; -1: read its flows' rows.
    compiled
        Force the numba kernel (True) or the numpy code (False); None: numba when installed.

    Returns
    -------
    numpy.ndarray
        bool per checked flow.
    """
    use = _use() if compiled is None else compiled
    i64 = np.int64
    start, length, user = (np.asarray(a, i64) for a in (start, length, user))
    if use:
        if rows is None:
            rows = (np.zeros(n_users, i64), np.full(n_users, -1, i64), np.zeros(0, np.int32))
        u_row, u_len, u_links = rows
        return _kernel("reach")(
            start,
            length,
            np.asarray(links, i64),
            user,
            n_users,
            n_live,
            stamp,
            u_row,
            u_len,
            u_links,
        )
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components

    rep, pos = gather_rows(start, length)
    ids, loc = distinct(np.asarray(links, i64)[pos], stamp)
    n = n_users + len(ids)
    g = sp.csr_matrix((np.ones(len(rep), bool), (user[rep], n_users + loc)), shape=(n, n))
    _, label = connected_components(g, directed=False)
    hit = np.zeros(n, bool)
    hit[label[n_users + loc[rep >= n_live]]] = True
    has = np.bincount(user[rep], minlength=n_users) > 0
    u = user[:n_live]
    return hit[label[u]] & has[u]


def kernels_for(fabric: Fabric, n_flows: int) -> AbstractContextManager[bool]:
    """:func:`hpn.jit.kernels_for` for a run of ``n_flows`` on ``fabric`` (its first kernels:
    max-min filling and the routing walk).

    Parameters
    ----------
    fabric
        The fabric.
    n_flows
        Flows of the run.

    Returns
    -------
    context manager
        Yields whether the compiled kernels run in it.
    """
    from hpn.routing.kernel_walk import _route_kernel

    return jit.kernels_for(fabric.num_links + n_flows, (_fill_kernel, _route_kernel))
