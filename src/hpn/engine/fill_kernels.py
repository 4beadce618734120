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
        out[row[g] : row[g + 1]].sort()  # a search then reads the stamps in link order
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
        (CSR offsets per group, k + 1; the links, int32, each group's sorted; members
        per group).
    """
    n_groups = int(group.max(initial=-1)) + 1
    return _kernel("group_rows")(group, start, length, links, n_groups, n_links)


def _reach_flows_kernel(
    flows, n_live, n_seen, group, p_start, p_len, links, stamp, g_row, g_links, g_size, cache
):  # pragma: no cover - compiled
    c_whole, c_label, c_comp, c_state = cache
    nf, ng = len(flows), len(g_size)
    cnt = np.zeros(ng, np.int64)  # members among the distinct flows[:n_seen]
    for i in range(n_seen):
        g = group[flows[i]]
        if g >= 0:
            cnt[g] += 1
    whole = np.zeros(ng, np.bool_)
    for i in range(nf):
        g = group[flows[i]]
        if g >= 0 and cnt[g] == g_size[g]:
            whole[g] = True
    same = c_state[1] == 1
    for g in range(ng):
        if whole[g] != c_whole[g]:
            same = False
            break
    if not same:  # the whole groups' components, contracted: label per link of their rows
        for g in range(ng):
            if c_whole[g]:
                for j in range(g_row[g], g_row[g + 1]):
                    c_label[g_links[j]] = -1
        _group_components(whole, g_row, g_links, stamp, c_label, c_comp, c_state)
        c_whole[:] = whole
    k0 = c_state[0]  # union-find nodes: the k0 components, then the other flows' links
    total = k0
    for i in range(nf):
        f = flows[i]
        g = group[f]
        if g < 0 or not whole[g]:
            total += p_len[f]
    total = min(total, k0 + len(stamp))
    parent = np.empty(total, np.int64)
    for x in range(k0):
        parent[x] = x
    used = np.empty(total, np.int64)
    n = k0
    first = np.full(ng, -1, np.int64)  # a node of each group
    for g in range(ng):
        if whole[g]:
            first[g] = c_comp[g]
    for i in range(nf):
        if i + 4 < nf:  # a later flow's path row
            _prefetch(p_start, flows[i + 4])
        f = flows[i]
        g = group[f]
        if g >= 0 and whole[g]:
            continue
        own = -1  # a solo flow's first node
        hi = p_start[f] + p_len[f]
        for j in range(p_start[f], hi):
            if j + 4 < hi:
                _prefetch(c_label, links[j + 4])
            lk = links[j]
            x = c_label[lk]
            if x < 0:
                x = stamp[lk]
                if x < 0:
                    x = n
                    stamp[lk] = n
                    parent[n] = n
                    used[n] = lk
                    n += 1
            root = first[g] if g >= 0 else own
            if root < 0:
                if g >= 0:
                    first[g] = x
                else:
                    own = x
            else:
                a, b = _find(parent, root), _find(parent, x)
                if a != b:
                    parent[a] = b
    mark = np.zeros(n, np.bool_)
    for i in range(n_live, nf):  # the seeds
        f = flows[i]
        g = group[f]
        if p_len[f] == 0:
            continue
        if g >= 0 and whole[g]:  # all its links are in its component
            mark[_find(parent, first[g])] = True
            continue
        for j in range(p_start[f], p_start[f] + p_len[f]):
            x = c_label[links[j]]
            mark[_find(parent, x if x >= 0 else stamp[links[j]])] = True
    out = np.zeros(n_live, np.bool_)
    for i in range(n_live):
        f = flows[i]
        g = group[f]
        x = -1  # the node of its user's that the search started from
        if g >= 0:
            x = first[g]
        elif p_len[f] > 0:
            x = c_label[links[p_start[f]]]
            if x < 0:
                x = stamp[links[p_start[f]]]
        out[i] = x >= 0 and mark[_find(parent, x)]
    for k in range(k0, n):
        if k + 16 < n:
            _prefetch(stamp, used[k + 16])
        stamp[used[k]] = -1
    return out


def _group_components(whole, g_row, g_links, stamp, label, comp, state):
    # pragma: no cover - compiled
    # components of the groups marked whole (by union-find over their rows' links): label
    # per link of those rows, the component of each such group (-1: no links), state[0]
    # the number of components; stamp is scratch (all -1, left so)
    ng = len(whole)
    total = 0
    for g in range(ng):
        if whole[g]:
            total += g_row[g + 1] - g_row[g]
    total = min(total, len(stamp))
    parent = np.empty(total, np.int64)
    used = np.empty(total, np.int64)
    n = 0
    for g in range(ng):
        comp[g] = -1
        if not whole[g]:
            continue
        lo, hi = g_row[g], g_row[g + 1]
        for j in range(lo, hi):
            if j + 8 < hi:
                _prefetch(stamp, g_links[j + 8])
            lk = g_links[j]
            x = stamp[lk]
            if x < 0:
                x = n
                stamp[lk] = n
                parent[n] = n
                used[n] = lk
                n += 1
            if comp[g] < 0:
                comp[g] = x
            else:
                a, b = _find(parent, comp[g]), _find(parent, x)
                if a != b:
                    parent[a] = b
    name = np.full(n, -1, np.int64)  # root -> label
    k = 0
    for x in range(n):
        r = _find(parent, x)
        if name[r] < 0:
            name[r] = k
            k += 1
        label[used[x]] = name[r]
        stamp[used[x]] = -1
    for g in range(ng):
        if comp[g] >= 0:
            comp[g] = name[_find(parent, comp[g])]
    state[0], state[1] = k, 1


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
        helpers = ("_push", "_pop", "_grow", "_find", "_group_components")
        kernels = {
            "fill": "_fill_kernel",
            "reach": "_reach_kernel",
            "group_rows": "_group_rows_kernel",
            "reach_flows": "_reach_flows_kernel",
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
            rows = (np.zeros(n_users, i64), np.full(n_users, -1, i64), np.zeros(0, i64))
        u_row, u_len, u_links = rows
        return _kernel("reach")(
            start, length, links, user, n_users, n_live, stamp, u_row, u_len, u_links
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


def reached_flows(
    flows: np.ndarray,
    n_live: int,
    n_seen: int,
    group: np.ndarray,
    path: tuple[np.ndarray, np.ndarray, np.ndarray],
    stamp: np.ndarray,
    rows: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    cache: tuple[np.ndarray, ...] | None = None,
    compiled: bool | None = None,
) -> np.ndarray:
    """:func:`reached` for ``flows`` (ids) of a DAG: a coupled group (``group``, -1: none)
    is one user, the others each their own; the first ``n_live`` are checked, the rest are
    the seeds. The compiled kernel reads a group all of whose members are among the
    distinct ``flows[:n_seen]`` by its row of ``rows`` (:func:`group_rows`: its links once,
    not every member's path); the components, and so the result, are the same.

    Parameters
    ----------
    flows
        Flow ids: the checked ones, then the seeds (a flow may be in both).
    n_live
        Flows checked.
    n_seen
        ``flows[:n_seen]`` are distinct and hold every flow of ``flows``' groups that is
        there (a group is whole when they hold all its members).
    group
        Coupled group per flow of the DAG.
    path
        (row start, row length, links) per flow of the DAG.
    stamp
        Scratch indexed by link id, all -1 (left so).
    rows
        :func:`group_rows` of the DAG's groups (compiled; built here if None).
    cache
        :func:`reach_cache` for ``rows`` (compiled; a fresh one if None): the components of
        the whole groups of the last call, reused while the next call has the same ones.
    compiled
        Force the numba kernel (True) or the numpy code (False); None: numba when installed.

    Returns
    -------
    numpy.ndarray
        bool per checked flow.
    """
    use = _use() if compiled is None else compiled
    p_start, p_len, links = path
    if not use:
        g = np.asarray(group)[flows].astype(np.int64)
        _, user = np.unique(np.where(g >= 0, g, -1 - np.arange(len(flows))), return_inverse=True)
        user = user.ravel()
        return reached(
            p_start[flows],
            p_len[flows],
            links,
            user,
            int(user.max(initial=-1)) + 1,
            n_live,
            stamp,
            compiled=False,
        )
    if rows is None:
        rows = group_rows(group, p_start, p_len, links, len(stamp))
    g_row, g_links, g_size = rows
    if cache is None:
        cache = reach_cache(len(g_size), len(stamp))
    return _kernel("reach_flows")(
        np.asarray(flows, np.int64),
        n_live,
        n_seen,
        group,
        p_start,
        p_len,
        links,
        stamp,
        g_row,
        g_links,
        g_size,
        cache,
    )


def reach_cache(n_groups: int, n_links: int) -> tuple[np.ndarray, ...]:
    """An empty cache for :func:`reached_flows`: (the whole groups it holds, a component
    label per link of their rows (-1: none), each group's component, [components, valid]).

    Parameters
    ----------
    n_groups, n_links
        Groups of the DAG, links of the fabric.

    Returns
    -------
    tuple of numpy.ndarray
        The cache (filled by the kernel).
    """
    return (
        np.zeros(n_groups, np.bool_),
        np.full(n_links, -1, np.int32),
        np.full(n_groups, -1, np.int64),
        np.zeros(2, np.int64),
    )


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
