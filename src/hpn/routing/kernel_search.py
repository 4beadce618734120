"""HPN's compiled candidate search (:mod:`hpn.routing.kernels`): source-port rounds over
the ECMP walk, the found paths placed per (pair, plane) as the numpy code places them.
"""

from __future__ import annotations

import numpy as np

from hpn.routing.kernel_base import (  # noqa: F401 - names the compiled code reads
    _ENT,
    _FAR,
    _REC,
    _S8,
    MODE_HASH,
    NO_PATH,
    OK,
    _smix,
    _sport_tables,
    _terms,
    _with_sport,
)
from hpn.routing.kernel_walk import (  # noqa: F401
    _IL,
    _IN,
    _IO,
    _IP,
    _IS,
    _ITEM_FIELDS,
    _IU,
    _LCONN,
    _LD,
    _LDIP,
    _LLEN,
    _LS,
    _LSIP,
    _LSP,
    _LU,
    LANES,
    _distance,
    _ready_row,
    _walk_lanes,
)


def _search_pass(
    p_src, p_dst, p_u, p_ip, q_ip, start, per_plane, ports, nv0, nv1, first_round, max_cand,
    port, inv, g, hs, ls, st, mt, scr,
):  # fmt: skip  # pragma: no cover - compiled
    """HPN's candidate rounds (:meth:`HpnRouter.select`), round by round as the numpy code
    runs them: (status, index, items, count, found per plane, (source NIC, uplink) class
    of each item, number of classes, where each item's links start, the links, each pair's
    path length); items are the new distinct paths (pair, sport, plane, uplink), by pair,
    plane, then found order (as ``_Found.place`` sorts the numpy code's), their links in the
    order they were found.

    The per-pair arrays come in the order the pairs are walked (pairs of one destination
    class together: their distances and candidate lists stay in cache, and the per-pair
    arrays are read in sequence); pair ``p`` is walked ``inv[p]``-th. Pairs are independent;
    positions among a round's pairs, the items and the per-pair results are in pair order.
    On an error other than FULL the caller runs again in pair order, so the one reported is
    the first the numpy code meets."""
    n = len(p_src)
    count = np.zeros(n, np.int64)
    found = np.zeros((n, 2), np.int64)
    dist = np.empty(n, np.int64)
    for p in range(n):
        dist[p] = 2 if nv0[p] >= 0 else _distance(p_src[p], p_u[p], g)
    cap = max(n * min(first_round, max_cand), 16)
    it = np.empty((cap, _ITEM_FIELDS), np.int32)  # the distinct paths found (_IP .. _IO)
    it_pid = np.empty(cap, np.uint64)  # their path ids
    l_cap = np.int64(16)
    for p in range(n):
        if dist[p] < _FAR:
            l_cap += min(first_round, max_cand) * dist[p]
    it_links = np.empty(l_cap, np.int32)  # their links, item after item
    nl = np.int64(0)
    e32, e8 = np.empty(0, np.int32), np.empty(0, np.int8)  # (what an error returns)
    e64 = np.empty(0, np.int64)
    last = np.full(n, -1, np.int64)  # each pair's latest distinct path
    ni = np.int64(0)
    active = np.ones(n, np.bool_)
    pos = np.zeros(n, np.int64)  # a pair's position among the round's active pairs
    na = n
    tried, size = np.int64(0), first_round
    path = np.empty(LANES * 64, np.int64)  # the walks of a lane group, ``ln`` hops each
    lanes, tup = np.zeros((LANES, 11), np.int64), np.zeros((LANES, 5), np.int64)
    ob = np.zeros(LANES, np.int64)
    new = np.zeros(n, np.int64)
    mode, tables = hs[0], hs[9]
    spt = _sport_tables(tables) if mode == MODE_HASH else np.zeros((6, 2, 256), np.int64)
    base = np.zeros(5, np.int64)
    while na > 0 and tried < max_cand:
        size = min(size, max_cand - tried)
        a = 0
        for p in range(n):  # in pair order
            q = inv[p]
            if active[q]:
                pos[q] = a
                a += 1
        for p in range(n):  # in walk order
            if not active[p]:
                continue
            a = pos[p]
            if dist[p] >= _FAR:
                return NO_PATH, a, e32, e32, e8, e32, count, found, e32, 0, e32, e32, e64
            ln = dist[p]
            if LANES * ln > len(path):
                path = np.empty(2 * LANES * ln, np.int64)
            if ni + size > cap:  # room for this pair's round
                while ni + size > cap:
                    cap *= 2
                more, more_pid = np.empty((cap, _ITEM_FIELDS), np.int32), np.empty(cap, np.uint64)
                for i in range(ni):  # (copied by loops: no more numpy code to compile)
                    more_pid[i] = it_pid[i]
                    for f in range(_ITEM_FIELDS):
                        more[i, f] = it[i, f]
                it, it_pid = more, more_pid
            if nl + size * ln > l_cap:
                while nl + size * ln > l_cap:
                    l_cap *= 2
                more_links = np.empty(l_cap, np.int32)
                for i in range(nl):
                    more_links[i] = it_links[i]
                it_links = more_links
            items = (it, it_pid, last, count, found, it_links)
            status, j, added = _pair_round(
                p, a, size, tried, ln, ni, nl, start, p_src, p_dst, p_u, p_ip, q_ip, nv0,
                nv1, port, items, path, spt, base, (lanes, tup, ob), g, hs, ls, st, mt, scr,
            )  # fmt: skip
            if status != OK:
                return (
                    status, a * size + j, e32, e32, e8, e32, count, found, e32, 0, e32, e32,
                    e64,
                )  # fmt: skip
            ni += added
            nl += added * ln
            new[p] = added
        tried += size
        na = 0
        for p in range(n):
            if active[p]:
                enough = found[p, 0] >= per_plane[p] and (
                    ports[p] < 2 or found[p, 1] >= per_plane[p]
                )
                active[p] = not (enough or new[p] == 0)
                na += active[p]
                new[p] = 0
        size *= 2
    pair, sport, plane, up, l_off = _placed(count, last, it, ni, inv)
    it, it_pid = np.empty((0, _ITEM_FIELDS), np.int32), e64.view(np.uint64)  # (memory)
    src_o, count_o, found_o = (
        np.empty(n, np.int64),
        np.empty(n, np.int64),
        np.empty((n, 2), np.int64),
    )
    len_o = np.empty(n, np.int64)
    for p in range(n):  # back to pair order
        q = inv[p]
        src_o[p], count_o[p], found_o[p, 0], found_o[p, 1] = (
            p_src[q],
            count[q],
            found[q, 0],
            found[q, 1],
        )
        len_o[p] = dist[q]
    ids, n_ids = _dense_ids(src_o, pair, up)
    return (
        OK, -1, pair, sport, plane, up, count_o, found_o, ids, n_ids, l_off, it_links[:nl],
        len_o,
    )  # fmt: skip


def _placed(count, last, it, ni, inv):  # pragma: no cover - compiled
    """(pair, sport, plane, uplink, where its links start) of the ``ni`` items ``it`` by
    (pair, plane), each group in found order: the order
    :meth:`hpn.routing.hpn_select._Found.place` sorts them into (pair ``p`` is the
    ``inv[p]``-th walked: the index of ``count``, ``last`` and items)."""
    pair, sport, up = np.empty(ni, np.int32), np.empty(ni, np.int32), np.empty(ni, np.int32)
    plane = np.empty(ni, np.int8)
    l_off = np.empty(ni, np.int32)
    most = 1
    for p in range(len(count)):
        most = max(most, count[p])
    tmp = np.empty(most, np.int64)
    k = 0
    for p in range(len(count)):
        w = inv[p]
        t = count[w] - 1
        q = np.int64(last[w])
        while q >= 0:  # the pair's chain runs newest first
            tmp[t] = q
            t -= 1
            q = it[q, _IN]
        for pl in range(2):
            for t in range(count[w]):
                q = tmp[t]
                if it[q, _IL] == pl:
                    pair[k], sport[k], plane[k], up[k] = p, it[q, _IS], pl, it[q, _IU]
                    l_off[k] = it[q, _IO]
                    k += 1
    return pair, sport, plane, up, l_off


def _dense_ids(p_src, pair, up):  # pragma: no cover - compiled
    """A class id per item (equal (source NIC, uplink), equal ids; numbered by first
    appearance) and the number of classes. When each source's items are one run (pairs in
    source order, as :class:`~hpn.routing.hpn_select.HpnRouter` gives them), a key can only
    recur within its run: a table per uplink stamped with the run does it in one pass over
    sequential memory; otherwise an open-addressing table of int32 item indices."""
    n = len(pair)
    ids = np.empty(n, np.int32)
    top, runs = -1, True
    for i in range(n):
        top = max(top, up[i])
        if up[i] < 0 or (i > 0 and p_src[pair[i]] < p_src[pair[i - 1]]):
            runs = False
            break
    m = 0
    if runs:
        stamp = np.empty(top + 1, np.int32)  # the last run that met each uplink
        stamp[:] = -1
        num = np.empty(top + 1, np.int32)
        run, prev = -1, np.int64(-1)
        for i in range(n):
            s = p_src[pair[i]]
            if s != prev:
                run += 1
                prev = s
            u = up[i]
            if stamp[u] != run:
                stamp[u] = run
                num[u] = m
                m += 1
            ids[i] = num[u]
        return ids, m
    size = 1
    while size < 2 * n + 2:
        size *= 2
    mask = size - 1
    slots = np.empty(size, np.int32)  # the first item of each class
    slots[:] = -1
    for i in range(n):
        key = (np.int64(p_src[pair[i]]) << 32) | np.int64(up[i])
        h = np.int64(_smix(np.uint64(key)) & np.uint64(mask))
        while slots[h] >= 0:
            j = slots[h]
            if (np.int64(p_src[pair[j]]) << 32) | np.int64(up[j]) == key:
                break
            h = (h + 1) & mask
        if slots[h] < 0:
            slots[h] = i
            ids[i] = m
            m += 1
        else:
            ids[i] = ids[slots[h]]
    return ids, m


def _warm(v, u, g, ls, st, mt):  # pragma: no cover - compiled
    """Touch every cache line of the candidate lists of endpoint ``v``'s switches toward
    class ``u`` (a pair's first switch hop: the candidates pick from them at random),
    all loads independent so their misses overlap; the sum goes to ``st[4]``."""
    fwd, out_off, out_ids, comp, att_off, att_ids, lk_src, lk_dst, flat, rows, out_next = g
    s_ent, rec = ls[0], ls[2]
    memo = mt[0]
    if len(memo) == 0 or fwd[v]:
        return
    acc = np.int64(0)
    for e in range(out_off[v], out_off[v + 1]):
        c = memo[u * rows + out_next[e]]
        if c >= 0:
            lo, hi = _ENT * rec[_REC * c], _ENT * (rec[_REC * c] + rec[_REC * c + 1])
            for x in range(lo, hi, 16):
                acc += s_ent[x]
    st[4] += acc


def _pair_round(
    p, a, size, tried, ln, ni, l0, start, p_src, p_dst, p_u, p_ip, q_ip, nv0, nv1, port,
    items, path, spt, base, work, g, hs, ls, st, mt, scr,
):  # fmt: skip  # pragma: no cover - compiled
    """One round of pair ``p`` (position ``a`` among the round's pairs): walk its ``size``
    candidates from ``tried`` on, ``LANES`` at a time, and record the new distinct paths from
    item ``ni`` on and their ``ln`` links each from link ``l0`` on (room for ``size`` items
    is there); (status, candidate, items added)."""
    it, it_pid, last, count, found, it_links = items
    lanes, tup, ob = work
    mode, seed, codes, tables = hs[0], hs[1], hs[4], hs[9]
    span = np.uint64(65535 - 49152 + 1)
    nvl = nv0[p] >= 0  # two GPUs of one host: the NVLink path, no walk
    if not nvl:
        _ready_row(p_u[p], g, mt, st)
        if mode == MODE_HASH:
            _terms(codes, tables, spt, p_ip[p], q_ip[p], seed, base)
        _warm(p_src[p], p_u[p], g, ls, st, mt)
    added = 0
    for j0 in range(0, size, LANES):
        nl = min(LANES, size - j0)
        for k in range(nl):
            sp = np.int64(np.uint64(49152) + (start[p] + np.uint64(tried + j0 + k)) % span)
            lanes[k, _LSP] = sp
            if nvl:
                path[k * ln], path[k * ln + 1] = nv0[p], nv1[p]
                continue
            lanes[k, _LS], lanes[k, _LD], lanes[k, _LU] = p_src[p], p_dst[p], p_u[p]
            lanes[k, _LSIP], lanes[k, _LDIP] = p_ip[p], q_ip[p]
            lanes[k, _LCONN], lanes[k, _LLEN] = a * size + j0 + k, ln
            ob[k] = k * ln
            if mode == MODE_HASH:
                _with_sport(codes, spt, base, sp, tup[k])
        if not nvl:
            status = _walk_lanes(nl, ln, lanes, tup, path, ob, g, hs, ls, st, mt, scr)
            if status != OK:
                return status, j0, added
        for k in range(nl):
            o = k * ln
            pid = np.uint64(0)
            for h in range(ln):
                pid ^= _smix((np.uint64(path[o + h]) << _S8) ^ np.uint64(h))
            # seen for this pair? (its distinct paths so far, newest first)
            q = last[p]
            while q >= 0 and it_pid[q] != pid:
                q = it[q, _IN]
            if q >= 0:
                continue
            i = ni + added
            it[i, _IN] = last[p]
            last[p] = i
            pl = port[path[o]]
            pl = 0 if pl < 0 else (1 if pl > 1 else pl)
            it[i, _IP], it[i, _IS], it[i, _IL] = p, lanes[k, _LSP], pl
            it[i, _IU] = path[o + 1] if ln > 1 else path[o]
            it[i, _IO] = l0 + added * ln
            for h in range(ln):
                it_links[l0 + added * ln + h] = path[o + h]
            it_pid[i] = pid
            added += 1
            count[p] += 1
            found[p, pl] += 1
    return OK, 0, added
