"""The compiled ECMP walk (:mod:`hpn.routing.kernels`): candidate lists per (switch,
destination class) in a shared store, and flows walked hop by hop, ``LANES`` at a time.
"""

from __future__ import annotations

import numpy as np

from hpn.routing.kernel_base import (  # noqa: F401 - names the compiled code reads
    _C1,
    _ENT,
    _FAR,
    _I0,
    _I17,
    _I4791,
    _REC,
    _S8,
    BOND_HASH,
    BOND_L34,
    BOND_RR,
    FULL,
    MODE_HASH,
    MODE_UNIFORM,
    NO_NEXT_HOP,
    NO_PATH,
    OK,
    _role_hash,
    _rot16,
    _seed_term,
    _smix,
    _sport_tables,
    _terms,
    _umod,
    _uniform_pick,
    _with_sport,
)


def _new_list(v, urow, need, g, hs, st, ls, scr):  # pragma: no cover - compiled
    """The candidate list of switch ``v`` toward a class (row ``urow`` of ``flat``) with
    ``need`` hops left after it: its record in the shared store (equal lists stored once);
    -1 if there is none; -2 if the store is full.

    A record (``_REC`` int64s): entry offset, count, distinct neighbours, group offset, the
    switch's role and seed, its core port block (offset, size; size 0: no port map). An entry
    (``_ENT`` int32s, 16 bytes): link, next node, the next node's compact index (-1: an
    endpoint), the link's rank among the next node's in-ports (for a core's port map)."""
    fwd, out_off, out_ids, comp, att_off, att_ids, lk_src, lk_dst, flat, rows, out_next = g
    (mode, seed, role, node_seed, codes, offs, lag_offs, bond, lag, tables,
     core_map, in_rank, c_off, c_links, pods, pod) = hs  # fmt: skip
    s_ent, s_gpos, rec, g_start, g_cnt, table = ls
    n = 0
    hv = np.uint64(0)
    for p in range(out_off[v], out_off[v + 1]):
        if flat[urow + out_next[p]] == need:
            scr[n] = out_ids[p]
            hv = hv * _C1 + np.uint64(out_ids[p])
            n += 1
    hv = _smix(hv)
    if n == 0:
        return -1
    mask = len(table) - 1
    slot = np.int64(hv & np.uint64(mask))
    while table[slot] >= 0:
        c = table[slot]
        if rec[_REC * c + 1] == n:
            same = True
            o = rec[_REC * c]
            for i in range(n):
                if s_ent[_ENT * (o + i)] != scr[i]:
                    same = False
                    break
            if same:
                return c
        slot = (slot + 1) & mask
    # a new list: store its entries and its neighbour groups (order of first appearance)
    c, o, go = st[1], st[0], st[2]
    if _REC * (c + 1) > len(rec) or _ENT * (o + n) > len(s_ent) or go + n > len(g_start):
        return -2
    if 2 * (c + 1) >= len(table):
        return -2
    m = 0
    grp = scr[n : 2 * n]
    nbrs = scr[2 * n : 3 * n]
    for i in range(n):
        nb = lk_dst[scr[i]]
        gi = -1
        for k in range(m):
            if nbrs[k] == nb:
                gi = k
                break
        if gi < 0:
            gi = m
            nbrs[m] = nb
            g_cnt[go + m] = 0
            m += 1
        grp[i] = gi
        g_cnt[go + gi] += 1
        e = _ENT * (o + i)
        s_ent[e], s_ent[e + 1] = scr[i], nb
        s_ent[e + 2] = comp[nb] if fwd[nb] else -1
        s_ent[e + 3] = in_rank[scr[i]] if core_map else 0
    acc = 0
    for k in range(m):
        g_start[go + k] = acc
        acc += g_cnt[go + k]
    fill = nbrs  # reuse: fill pointer per group
    for k in range(m):
        fill[k] = g_start[go + k]
    for i in range(n):
        s_gpos[o + fill[grp[i]]] = i
        fill[grp[i]] += 1
    r0 = _REC * c
    rl = role[v]
    rec[r0], rec[r0 + 1], rec[r0 + 2], rec[r0 + 3] = o, n, m, go
    rec[r0 + 4], rec[r0 + 5] = rl, 0
    if mode == MODE_HASH and rl >= 1 and rl <= 3:
        rec[r0 + 5] = _seed_term(codes[rl], tables, node_seed[v])
    rec[r0 + 6], rec[r0 + 7] = 0, 0
    if rl == 3 and core_map:
        k = v * pods + pod[lk_dst[scr[0]]]
        rec[r0 + 6], rec[r0 + 7] = c_off[k], c_off[k + 1] - c_off[k]
    table[slot] = c
    st[0], st[1], st[2] = o + n, c + 1, go + m
    return c


def _ready_row(u, g, mt, st):  # pragma: no cover - compiled
    """Prepare the memo row of class ``u`` before its first walk: copied from the row last
    prepared (``st[3]``) at every switch whose candidate list cannot differ, i.e. where the
    two classes' distances agree at the switch and at all its out-neighbours; the other
    entries stay unfilled. A Clos's classes differ at a few switches, so most lists are
    found without a scan."""
    memo, ready, rev_off, rev_src, mark = mt
    if len(memo) == 0 or ready[u]:
        return
    ready[u] = True
    r = st[3]
    st[3] = u
    if r < 0:
        return
    flat, rows = g[8], g[9]
    bu, br = u * rows, r * rows
    stamp = u + 1
    for x in range(rows):
        if flat[bu + x] != flat[br + x]:
            mark[x] = stamp
            for k in range(rev_off[x], rev_off[x + 1]):
                mark[rev_src[k]] = stamp
    for x in range(rows):
        if mark[x] != stamp:
            memo[bu + x] = memo[br + x]


# lane fields (int64 columns of ``lanes``): source, destination, class, source IP,
# destination IP, source port, connection key, hops; then the walk's state: the node a lane
# is at, its compact index (-1: an endpoint), the in-port rank of the link it arrived on
_LS, _LD, _LU, _LSIP, _LDIP, _LSP, _LCONN, _LLEN, _LV, _LVC, _LRANK = range(11)
LANES = 16  # walks stepped together (their memory accesses overlap)
# item fields (int32 columns of the search's items): pair, source port, plane, uplink, the
# pair's previous distinct path (-1: none), where its links start in the search's links
_IP, _IS, _IL, _IU, _IN, _IO = range(6)
_ITEM_FIELDS = 6


def _walk_lanes(nl, ln, lanes, tup, out, ob, g, hs, ls, st, mt, scr):  # pragma: no cover
    """Walk flows ``lanes[:nl]`` (fields ``_LS`` .. ``_LLEN``) in lock step, hop by hop (each
    flow's choices are those of a walk on its own; stepping them together lets their cache
    misses overlap), writing lane ``j``'s hop ``k`` to ``out[ob[j] + k]``; ``ln``: the
    longest walk; ``tup[j]``: lane ``j``'s hash terms (:func:`_terms`, :func:`_with_sport`).
    Returns OK, NO_NEXT_HOP or FULL (the store is full)."""
    fwd, out_off, out_ids, comp, att_off, att_ids, lk_src, lk_dst, flat, rows, out_next = g
    (mode, seed, role, node_seed, codes, offs, lag_offs, bond, lag, tables,
     core_map, in_rank, c_off, c_links, pods, pod) = hs  # fmt: skip
    s_ent, s_gpos, rec, g_start, g_cnt, table = ls
    memo = mt[0]
    for j in range(nl):
        s = lanes[j, _LS]
        lanes[j, _LV] = s
        lanes[j, _LVC] = comp[s] if fwd[s] else -1
        lanes[j, _LRANK] = 0
    for hop in range(ln):
        for j in range(nl):
            r = lanes[j, _LLEN] - hop  # hops left
            if r <= 0:
                continue
            v, vc, d = lanes[j, _LV], lanes[j, _LVC], lanes[j, _LD]
            urow = lanes[j, _LU] * rows
            if r == 1 and not fwd[d]:
                chosen = -1
                for k in range(att_off[d], att_off[d + 1]):
                    if lk_src[att_ids[k]] == v:
                        chosen = att_ids[k]
                        break
                v, vc, rank = d, -1, 0
            elif vc >= 0:  # a switch
                key = urow + vc
                c = np.int64(memo[key]) if len(memo) else np.int64(-1)
                if c < 0:
                    c = _new_list(v, urow, r - 1, g, hs, st, ls, scr)
                    if c == -2:
                        return FULL
                    if c < 0:
                        return NO_NEXT_HOP
                    if len(memo):
                        memo[key] = c
                r0 = _REC * c
                base, cnt = rec[r0], rec[r0 + 1]
                pick = 0
                if mode == MODE_UNIFORM:
                    pick = _uniform_pick(seed, lanes[j, _LCONN], hop, cnt)
                elif cnt > 1:
                    rl = rec[r0 + 4]
                    if rl >= 1 and rl <= 3:
                        pick = -1
                        full = rec[r0 + 7]
                        if full > 0 and hop > 0:  # a core's port map (hashing if it is down)
                            mapped = c_links[rec[r0 + 6] + _umod(lanes[j, _LRANK], full)]
                            for i in range(cnt):
                                if s_ent[_ENT * (base + i)] == mapped:
                                    pick = i
                                    break
                        if pick < 0:
                            h = _role_hash(
                                codes[rl], rec[r0 + 5], tup[j, rl], tables, lanes[j, _LSIP],
                                lanes[j, _LDIP], lanes[j, _LSP],
                            )  # fmt: skip
                            h = (h ^ (h >> 16)) & 0xFFFF
                            e = _rot16(h, offs[rl])
                            m = rec[r0 + 2]
                            if not lag or m == cnt:
                                pick = _umod(e, cnt)
                            else:
                                go = rec[r0 + 3]
                                gi = _umod(e, m)
                                member = _umod(_rot16(h, lag_offs[rl]), g_cnt[go + gi])
                                pick = s_gpos[base + g_start[go + gi] + member]
                e0 = _ENT * (base + pick)
                chosen, v, vc = s_ent[e0], s_ent[e0 + 1], s_ent[e0 + 2]
                rank = s_ent[e0 + 3]
            else:  # an endpoint: its NIC ports, uncached
                cnt = np.int64(0)
                for p in range(out_off[v], out_off[v + 1]):
                    if flat[urow + out_next[p]] == r - 1:
                        scr[cnt] = out_ids[p]
                        cnt += 1
                if cnt == 0:
                    return NO_NEXT_HOP
                pick = 0
                sport = lanes[j, _LSP]
                if mode == MODE_UNIFORM:
                    pick = _uniform_pick(seed, lanes[j, _LCONN], hop, cnt)
                elif cnt > 1 and role[v] == 0:  # the host's bond
                    if bond == BOND_RR:
                        pick = lanes[j, _LCONN] % cnt
                    elif bond == BOND_L34:
                        h = (sport ^ 4791) ^ (lanes[j, _LSIP] ^ lanes[j, _LDIP])
                        h = h ^ (h >> 16)
                        pick = _umod(h ^ (h >> 8), cnt)
                    else:
                        h = _role_hash(
                            codes[0], tup[j, 4], tup[j, 0], tables, lanes[j, _LSIP],
                            lanes[j, _LDIP], sport,
                        )  # fmt: skip
                        pick = _umod((h ^ (h >> 16)) & 0xFFFF, cnt)
                chosen = scr[pick]
                v = lk_dst[chosen]
                vc = comp[v] if fwd[v] else -1
                rank = in_rank[chosen] if core_map else 0
            out[ob[j] + hop] = chosen
            lanes[j, _LV], lanes[j, _LVC], lanes[j, _LRANK] = v, vc, rank
    return OK


def _distance(s, u, g):  # pragma: no cover - compiled
    """Hops from node ``s`` to class ``u`` (``_FAR``: none)."""
    fwd, out_off, out_ids, comp, att_off, att_ids, lk_src, lk_dst, flat, rows, out_next = g
    if fwd[s]:
        return np.int64(flat[u * rows + comp[s]])
    best = np.int64(_FAR)
    for p in range(out_off[s], out_off[s + 1]):
        dc = np.int64(flat[u * rows + out_next[p]]) + 1
        if dc < best:
            best = dc
    return best


def _route_kernel(
    src, dst, uinv, s_ip, d_ip, sport, conn, order, g, hs, ls, st, mt, scr
):  # pragma: no cover - compiled
    """Route flows, walked in ``order``, ``LANES`` at a time: (status, flow index, offsets,
    links). On an error other than FULL the caller walks again in flow order, so the flow
    reported is the first the numpy code fails on."""
    n = len(src)
    offsets = np.zeros(n + 1, np.int64)
    for i in range(n):
        d = _distance(src[i], uinv[i], g)
        if d >= _FAR:
            return NO_PATH, i, offsets, np.zeros(0, np.int64)
        offsets[i + 1] = offsets[i] + d
    links = np.empty(offsets[n], np.int64)
    mode, seed, codes, tables = hs[0], hs[1], hs[4], hs[9]
    spt = _sport_tables(tables) if mode == MODE_HASH else np.zeros((6, 2, 256), np.int64)
    lanes, tup = np.zeros((LANES, 11), np.int64), np.zeros((LANES, 5), np.int64)
    base, ob = np.zeros(5, np.int64), np.zeros(LANES, np.int64)
    for q0 in range(0, n, LANES):
        nl = min(LANES, n - q0)
        ln = np.int64(0)
        for j in range(nl):
            i = order[q0 + j]
            _ready_row(uinv[i], g, mt, st)
            if mode == MODE_HASH:
                _terms(codes, tables, spt, s_ip[i], d_ip[i], seed, base)
                _with_sport(codes, spt, base, sport[i], tup[j])
            length = offsets[i + 1] - offsets[i]
            lanes[j, _LS], lanes[j, _LD], lanes[j, _LU] = src[i], dst[i], uinv[i]
            lanes[j, _LSIP], lanes[j, _LDIP], lanes[j, _LSP] = s_ip[i], d_ip[i], sport[i]
            lanes[j, _LCONN], lanes[j, _LLEN] = conn[i], length
            ob[j] = offsets[i]
            ln = max(ln, length)
        status = _walk_lanes(nl, ln, lanes, tup, links, ob, g, hs, ls, st, mt, scr)
        if status != OK:
            return status, order[q0], offsets, links
    return OK, -1, offsets, links
