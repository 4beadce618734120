"""Compiled inner kernels (numba, the ``fast`` extra), with the numpy code as the fallback.

:func:`ledger_set` books link loads (:class:`hpn.engine.links.LinkLedger`) in one pass.
:func:`fill_rates` is progressive filling (:mod:`hpn.engine.maxmin`) on (user, link) hop
entries: counting sorts build both incidences, and a heap of link shares (stale entries
skipped) gives each round its level and bottlenecks. Each round freezes the same users at
the same level and updates each link with the same floating-point operations as
:func:`hpn.engine.maxmin.maxmin_rates` (weights are integer counts, so their sums are exact):
the rates are bit-identical to it, which a test checks. Without numba the numpy code runs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hpn import jit
from hpn.engine.maxmin import EPS, distinct, gather_rows, incidence_csr, maxmin_rates
from hpn.jit import compile_in

HAVE_NUMBA = jit.HAVE_NUMBA  # installed (tests turn it off here); what runs: `_use`
_compiled: dict = {}  # name -> compiled function, built on first use (numba loads slowly)


def _use() -> bool:
    """Whether the compiled kernels run now (numba here and :func:`hpn.jit.enabled`)."""
    return HAVE_NUMBA and jit.enabled()


CONN_BITS = 16  # connection_ids' first hash table: at most 2**16 slots (doubled when half full)


def _prefetch(arr, i):  # pragma: no cover - compiled: replaced by `_prefetch_intrinsic`'s
    """Ask the CPU to fetch the cache line of ``arr[i]`` ahead of use (no effect on values)."""


def _prefetch_intrinsic() -> Any:
    """A numba intrinsic ``_prefetch(arr, i)``: ``llvm.prefetch`` (for a write, keep in all
    cache levels) of ``arr[i]``'s address, for any 1-d array layout (strided columns too).
    Random accesses into per-link and per-flow arrays of a large fabric miss every cache;
    announcing a batch's addresses first lets the misses overlap."""
    from llvmlite import ir
    from numba.core import cgutils, types
    from numba.extending import intrinsic

    @intrinsic
    def prefetch(typingctx, arr, idx):
        def codegen(context, builder, signature, args):
            a = context.make_array(signature.args[0])(context, builder, args[0])
            i64, i32 = ir.IntType(64), ir.IntType(32)
            i = args[1]
            if i.type.width < 64:
                i = builder.sext(i, i64)
            off = builder.mul(i, builder.extract_value(a.strides, 0))
            addr = builder.add(builder.ptrtoint(a.data, i64), off)
            ptr = builder.inttoptr(addr, ir.IntType(8).as_pointer())
            fnty = ir.FunctionType(ir.VoidType(), [ptr.type, i32, i32, i32])
            fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
            builder.call(fn, [ptr, i32(1), i32(3), i32(1)])
            return context.get_dummy_value()

        return types.void(arr, idx), codegen

    return prefetch


def _fill_kernel(rows, cols, n_users, n_links, cap, eps):  # pragma: no cover - compiled
    n_ent = len(rows)
    # entries grouped by user (counting sort), duplicates merged into weights
    cnt = np.zeros(n_users + 1, np.int64)
    for e in range(n_ent):
        cnt[rows[e] + 1] += 1
    for u in range(n_users):
        cnt[u + 1] += cnt[u]
    fill = cnt[:-1].copy()
    by_user = np.empty(n_ent, np.int64)
    for e in range(n_ent):
        by_user[fill[rows[e]]] = cols[e]
        fill[rows[e]] += 1
    stamp = np.full(n_links, -1, np.int64)
    u_ptr = np.zeros(n_users + 1, np.int64)
    u_link = np.empty(n_ent, np.int64)
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
    # users per link
    l_ptr = np.zeros(n_links + 1, np.int64)
    for j in range(k):
        l_ptr[u_link[j] + 1] += 1
    for lk in range(n_links):
        l_ptr[lk + 1] += l_ptr[lk]
    lfill = l_ptr[:-1].copy()
    l_user = np.empty(k, np.int64)
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


def _ledger_set(lk, v, now, load, carried, busy, peak, since, cap_at, cap, on):
    # pragma: no cover - compiled
    # LinkLedger.set for one link: book its load up to `now`, then hold `v`
    old = load[lk]
    dt = now - since[lk]
    carried[lk] += old * dt
    if old > 0 and dt > 0:
        busy[lk] += dt
        c = cap_at[lk]
        util = old / c if c > 0 else 0.0
        if util > peak[lk]:
            peak[lk] = util
    if v < 1e-12 * cap[lk]:
        v = 0.0
    load[lk] = v
    since[lk] = now
    cap_at[lk] = cap[lk]
    on[lk] = v > 0


def _ledger_kernel(links, new, now, load, carried, busy, peak, since, cap_at, cap, on):
    # pragma: no cover - compiled
    n = len(links)
    for i in range(n):
        if i + 16 < n:  # the cache lines of a link 16 ahead (random links miss every cache)
            ahead = links[i + 16]
            _prefetch(load, ahead)
            _prefetch(carried, ahead)
            _prefetch(cap_at, ahead)
            _prefetch(cap, ahead)
            _prefetch(on, ahead)
        _ledger_set(links[i], new[i], now, load, carried, busy, peak, since, cap_at, cap, on)


def _reach_kernel(start, length, links, user, n_users, n_live, stamp):
    # pragma: no cover - compiled
    total = 0
    for i in range(len(start)):
        total += length[i]
    parent = np.empty(total, np.int64)  # union-find over the local ids of the links
    used = np.empty(total, np.int64)
    n = 0
    first = np.full(n_users, -1, np.int64)  # a link of each user
    nf = len(start)
    for i in range(nf):
        if i + 4 < nf:  # a later flow's path row, and a nearer one's links' stamps
            _prefetch(links, start[i + 4])
        if i + 2 < nf:
            for j in range(start[i + 2], start[i + 2] + length[i + 2]):
                _prefetch(stamp, links[j])
        u = user[i]
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
    for i in range(n_live, len(start)):
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


def _find(parent, x):  # pragma: no cover - compiled
    r = x
    while parent[r] != r:
        r = parent[r]
    while parent[x] != r:  # path compression
        parent[x], x = r, parent[x]
    return r


def _hops_kernel(start, length, links, hops, delta):  # pragma: no cover - compiled
    for i in range(len(start)):
        for j in range(start[i], start[i] + length[i]):
            hops[links[j]] += delta


def _tier_kernel(tier, words, load, out):  # pragma: no cover - compiled
    # every loaded link, in order: `words` holds the ledger's `on` flags 8 links a word; a
    # block of 8 words (64 links) without a loaded link (they hold +0.0, which leaves a sum
    # as it is) is skipped without reading its loads (one branch per block: a branch per
    # word mispredicts too often); the links past the last whole block are all added. The
    # running sum stays in a register while the tier does not change (links come grouped
    # by tier)
    n = len(tier)
    if not n:
        return
    cur = tier[0]
    acc = out[cur]
    nb = len(words) // 8
    for b in range(nb + 1):
        lo = 64 * b
        if b < nb:
            w = words[8 * b]
            for i in range(8 * b + 1, 8 * b + 8):
                w |= words[i]
            if w == 0:
                continue
            hi = lo + 64
        else:
            hi = n
        for lk in range(lo, hi):
            t = tier[lk]
            if t != cur:
                out[cur] = acc
                cur = t
                acc = out[cur]
            acc += load[lk]
    out[cur] = acc


def _tier_list_kernel(live, n, on, tier, load, out):  # pragma: no cover - compiled
    # _tier_kernel over the listed links live[:n] (ascending) instead of every link: the
    # loaded ones among them are added in order (the others, at +0.0, would leave the sums
    # as they are) and kept as live[:k]; returns k
    k = 0
    cur = -1
    acc = 0.0
    for i in range(n):
        lk = live[i]
        if not on[lk]:
            continue
        live[k] = lk
        k += 1
        t = tier[lk]
        if t != cur:
            if cur >= 0:
                out[cur] = acc
            cur = t
            acc = out[cur]
        acc += load[lk]
    if cur >= 0:
        out[cur] = acc
    return k


def _conn_slot(k, bits):  # pragma: no cover - compiled
    return np.int64((np.uint64(k) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(64 - bits))


def _conn_kernel(src, dst, keys, bits):  # pragma: no cover - compiled
    # connections in order of first appearance through an open-addressing table of keys
    # (doubled when half full); a key met again with another (src, dst) stops it (ok False:
    # the caller sorts instead)
    n = len(keys)
    mask = (1 << bits) - 1
    slot_key = np.empty(mask + 1, np.int64)
    slot_conn = np.full(mask + 1, -1, np.int64)
    first = np.empty(n, np.int64)
    inv = np.empty(n, np.int64)
    nc = 0
    for i in range(n):
        k = keys[i]
        s = _conn_slot(k, bits)
        while True:
            c = slot_conn[s]
            if c < 0:
                slot_key[s] = k
                slot_conn[s] = nc
                first[nc] = i
                inv[i] = nc
                nc += 1
                break
            if slot_key[s] == k:
                f = first[c]
                if src[f] != src[i] or dst[f] != dst[i]:
                    return first[:0], inv[:0], False
                inv[i] = c
                break
            s = (s + 1) & mask
        if 2 * nc > mask:  # half full: a table twice as large, the keys put back
            bits += 1
            mask = (1 << bits) - 1
            slot_key = np.empty(mask + 1, np.int64)
            slot_conn = np.full(mask + 1, -1, np.int64)
            for c in range(nc):
                k = keys[first[c]]
                s = _conn_slot(k, bits)
                while slot_conn[s] >= 0:
                    s = (s + 1) & mask
                slot_key[s] = k
                slot_conn[s] = c
    return first[:nc], inv, True


def _helper(name: str) -> Any:
    """The compiled helper ``name`` (called by the batch steps' kernels, `engine.steps`)."""
    _kernel("fill")
    return globals()[name]


def _kernel(name: str):
    """The compiled kernel ``name`` (helpers compiled first, so the kernel calls them)."""
    if not _compiled:
        globals()["_prefetch"] = _prefetch_intrinsic()
        helpers = ("_push", "_pop", "_grow", "_find", "_ledger_set", "_conn_slot")
        kernels = {
            "fill": "_fill_kernel", "ledger": "_ledger_kernel", "reach": "_reach_kernel",
            "hops": "_hops_kernel", "tiers": "_tier_kernel", "conn": "_conn_kernel",
            "tier_list": "_tier_list_kernel",
        }  # fmt: skip
        _compiled.update(compile_in(globals(), helpers, kernels))
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
    compiled: bool | None = None,
) -> np.ndarray:
    """For each of the first ``n_live`` flows: whether it is connected to a link of one of
    the others (the seeds). Flow ``i`` crosses ``links[start[i] : start[i] + length[i]]`` and
    belongs to user ``user[i]`` (a coupled group is one user); users sharing a link are
    connected (components of the user-link graph, by union-find over the links). ``stamp``:
    scratch indexed by link id, all -1 (left so).

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
        return _kernel("reach")(start, length, np.asarray(links, i64), user, n_users, n_live, stamp)
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


def add_hops(
    start: np.ndarray, length: np.ndarray, links: np.ndarray, hops: np.ndarray, delta: int
) -> None:
    """``hops[l] += delta`` for every element ``l`` of the rows ``links[start[i] :
    start[i] + length[i]]`` (repeats counted).

    Parameters
    ----------
    start, length, links
        The rows.
    hops
        Per-link counts, updated in place.
    delta
        +1 (flows start) or -1 (flows end).
    """
    i64 = np.int64
    start, length = np.asarray(start, i64), np.asarray(length, i64)
    if _use():
        _kernel("hops")(start, length, np.asarray(links, i64), hops, delta)
        return

    _, pos = gather_rows(start, length)
    np.add.at(hops, links[pos], delta)


def ledger_set(ledger: Any, links: np.ndarray, new: np.ndarray, now: float) -> None:
    """:meth:`LinkLedger.set` in one compiled pass over the (distinct) ``links``.

    Parameters
    ----------
    ledger
        The :class:`~hpn.engine.links.LinkLedger`, updated in place (``Any`` to the checker:
        ``links`` imports this module).
    links
        Distinct link ids.
    new
        Their new loads, bytes/s.
    now
        Time of the change, s.
    """
    _kernel("ledger")(
        np.asarray(links, np.int64),
        np.asarray(new, np.float64),
        float(now),
        ledger.load,
        ledger.bytes,
        ledger.busy,
        ledger.peak,
        ledger.since,
        ledger.cap_at,
        ledger.cap,
        ledger.on,
    )


def tier_sums(on: np.ndarray, tier: np.ndarray, load: np.ndarray, n_tiers: int) -> np.ndarray:
    """The ``load`` of the links with ``on`` summed per ``tier``, in link order (the
    arithmetic of ``np.bincount`` over those links). Links without ``on`` must hold a load
    of 0: the compiled kernel skips runs of 64 links without ``on`` (most of a large fabric
    at any time) and adds the others' zeros, which leave the sums as they are.

    Parameters
    ----------
    on
        bool per link: carries a load.
    tier
        Tier of each link (< ``n_tiers``).
    load
        Per link.
    n_tiers
        Number of tiers.

    Returns
    -------
    numpy.ndarray
        Sum per tier.
    """
    if _use():
        out = np.zeros(n_tiers)
        whole = len(on) // 8 * 8  # the flags of 8 links as one word (0: none is loaded)
        words = np.ascontiguousarray(on, dtype=bool)[:whole].view(np.uint64)
        _kernel("tiers")(tier, words, load, out)
        return out
    loaded = np.flatnonzero(on)
    return np.bincount(tier[loaded], weights=load[loaded], minlength=n_tiers)


def tier_sums_listed(
    live: np.ndarray, on: np.ndarray, tier: np.ndarray, load: np.ndarray, n_tiers: int
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`tier_sums` when every link with ``on`` is in ``live`` (ascending ids): only
    those links are read, in order (the same sums, bit for bit).

    Parameters
    ----------
    live
        Ascending link ids, a superset of the links with ``on`` (compacted in place).
    on, tier, load, n_tiers
        As for :func:`tier_sums`.

    Returns
    -------
    tuple of numpy.ndarray
        Sum per tier, and the links of ``live`` with ``on`` (a prefix of it).
    """
    if _use():
        out = np.zeros(n_tiers)
        k = _kernel("tier_list")(live, len(live), on, tier, load, out)
        return out, live[:k]
    kept = live[on[live]]
    return np.bincount(tier[kept], weights=load[kept], minlength=n_tiers), kept


def connection_ids(
    src: np.ndarray, dst: np.ndarray, keys: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """(first flow of each distinct routing key, in order of first appearance; each flow's
    connection) in one pass over a hash table of the keys; None without numba or when a key
    is shared by two (src, dst) pairs (:func:`hpn.engine.sim.connections` sorts then).

    Parameters
    ----------
    src, dst, keys
        Per flow.

    Returns
    -------
    tuple of numpy.ndarray or None
        First flow of each connection and each flow's connection index, or None.
    """
    if not _use():
        return None
    i64 = np.int64
    bits = min(max(int(2 * len(keys)).bit_length(), 4), CONN_BITS)  # grows when half full
    first, inv, ok = _kernel("conn")(
        np.asarray(src, i64), np.asarray(dst, i64), np.asarray(keys, i64), bits
    )
    return (first, inv) if ok else None
