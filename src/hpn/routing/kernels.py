"""Compiled routing kernels (numba, the ``fast`` extra): the hashed ECMP walk and HPN's
candidate search, flow by flow, with the numpy code of :mod:`hpn.routing.shortest`,
:mod:`hpn.routing.ecmp` and :mod:`hpn.routing.hpn_select` as the reference and fallback.

The walk makes the same choices with the same integer arithmetic as the vectorized code:
candidates at a switch are its out-links one hop closer to the destination class, in link id
order; the switch hashes the RoCEv2 5-tuple (the hash functions of :mod:`hpn.routing.hashing`
ported byte for byte), folds, rotates by its tier's offset and takes the modulo (two-stage over
neighbours and LAG members), cores map in-port to out-port. Candidate lists are memoized per
(switch, destination class) and shared when equal (a ToR's uplinks serve most classes), with
their neighbour groups precomputed, so a hop costs a hash and a few lookups. Tests compare the
results with the numpy code bit for bit.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

import numpy as np

from hpn.jit import Kernel, compile_in

HAVE_NUMBA = importlib.util.find_spec("numba") is not None
_compiled: dict = {}

# hash codes (the order of :data:`hpn.routing.hashing.HASHES`' tables in ``hash_tables``)
HASH_CODES = {"crc32": 0, "crc32c": 1, "crc16": 2, "crc16-arc": 3, "xor16": 4, "mix64": 5}
BOND_L34, BOND_RR, BOND_HASH = 0, 1, 2
MODE_HASH, MODE_UNIFORM = 0, 1
OK, NO_PATH, NO_NEXT_HOP, FULL = 0, 1, 2, 3

_M32 = np.uint64(0xFFFFFFFF)
_M16 = np.uint64(0xFFFF)
_GOLD = np.uint64(0x9E3779B97F4A7C15)
_C1 = np.uint64(0xBF58476D1CE4E5B9)
_C2 = np.uint64(0x94D049BB133111EB)
_MIX0 = np.uint64(0x243F6A8885A308D3)
_S30, _S27, _S31, _S32 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(32)
_S8, _S11 = np.uint64(8), np.uint64(11)
_P7919 = np.uint64(7919)
# typed (not literal) integer arguments: numba compiles a callee once more for every literal
# argument it meets while typing a caller, so calls pass these instead of 0, 17 and 4791
_I0, _I17, _I4791 = np.int64(0), np.int64(17), np.int64(4791)
_FAR = 1 << 20
_REC, _ENT = 8, 4  # int64s per candidate-list record, int32s per entry (see _new_list)


def hash_tables() -> np.ndarray:
    """The CRC tables in :data:`HASH_CODES` order (rows for xor16/mix64 unused)."""
    from hpn.routing import hashing as h

    out = np.zeros((6, 256), np.int64)
    out[0], out[1], out[2], out[3] = h._CRC32, h._CRC32C, h._CRC16_CCITT, h._CRC16_ARC
    return out


def _smix(x):  # pragma: no cover - compiled
    x = x + _GOLD
    x = (x ^ (x >> _S30)) * _C1
    x = (x ^ (x >> _S27)) * _C2
    return x ^ (x >> _S31)


def _byte(j, s_ip, d_ip, sport, proto=17, dport=4791):  # pragma: no cover - compiled
    """Byte ``j`` of the 13-byte RoCEv2 5-tuple (network order; UDP, dport 4791)."""
    if j < 4:
        return (s_ip >> (24 - 8 * j)) & 0xFF
    if j < 8:
        return (d_ip >> (24 - 8 * (j - 4))) & 0xFF
    if j == 8:
        return proto
    if j == 9:
        return (sport >> 8) & 0xFF
    if j == 10:
        return sport & 0xFF
    if j == 11:
        return (dport >> 8) & 0xFF
    return dport & 0xFF


def _crc(code, tables, reg, s_ip, d_ip, sport, proto, dport):  # pragma: no cover - compiled
    """The linear part of hash ``code`` (not mix64): the register after the 13 bytes from
    register ``reg``, without the final XOR. Linear over GF(2) in (``reg``, bytes) jointly:
    ``_crc(r, m) = _crc(r, 0) ^ _crc(0, m)``, which :func:`_terms` uses."""
    crc = np.int64(reg)
    if code == 0 or code == 1 or code == 3:  # reflected CRCs
        for j in range(13):
            b = _byte(j, s_ip, d_ip, sport, proto, dport)
            crc = tables[code, (crc ^ b) & 0xFF] ^ (crc >> 8)
        return crc
    if code == 2:  # CRC-16/CCITT, MSB first
        for j in range(13):
            b = _byte(j, s_ip, d_ip, sport, proto, dport)
            crc = (tables[2, ((crc >> 8) ^ b) & 0xFF] ^ (crc << 8)) & 0xFFFF
        return crc
    for j in range(0, 14, 2):  # xor16
        lo = _byte(j + 1, s_ip, d_ip, sport, proto, dport) if j + 1 < 13 else 0
        crc ^= (_byte(j, s_ip, d_ip, sport, proto, dport) << 8) | lo
    return crc


def _seed_reg(code, seed):  # pragma: no cover - compiled
    """(initial register, final XOR) of hash ``code`` seeded with ``seed``."""
    if code == 0 or code == 1:
        return np.int64((seed ^ _M32) & _M32), np.int64(0xFFFFFFFF)
    return np.int64(seed & _M16), np.int64(0)


def _hash(code, tables, seed, s_ip, d_ip, sport):  # pragma: no cover - compiled
    """``HASHES[name](tuple, seed)`` of one tuple (int64 holding the uint32 result)."""
    if code < 5:
        reg, xorout = _seed_reg(code, np.uint64(seed))
        return _crc(code, tables, reg, s_ip, d_ip, sport, _I17, _I4791) ^ xorout
    # mix64: two big-endian 8-byte words (the 13 bytes, zero padded)
    h = np.uint64(seed) ^ _MIX0
    for w in range(2):
        word = np.uint64(0)
        for b in range(8):
            j = 8 * w + b
            v = _byte(j, s_ip, d_ip, sport, _I17, _I4791) if j < 13 else 0
            word = (word << _S8) | np.uint64(v)
        h = _smix(h ^ word)
    return np.int64(h >> _S32)


def _seed_term(code, tables, seed):  # pragma: no cover - compiled
    """The seed's share of hash ``code`` (with the final XOR); mix64: the seed itself."""
    if code >= 5:
        return np.int64(seed)
    reg, xorout = _seed_reg(code, np.uint64(seed))
    return _crc(code, tables, reg, _I0, _I0, _I0, _I0, _I0) ^ xorout


def _sport_tables(tables):  # pragma: no cover - compiled
    """Per hash code, the share of the source port's high byte (``[code, 0, x]``) and low
    byte (``[code, 1, y]``)."""
    out = np.zeros((6, 2, 256), np.int64)
    for code in range(5):
        for x in range(256):
            out[code, 0, x] = _crc(code, tables, _I0, _I0, _I0, x << 8, _I0, _I0)
            out[code, 1, x] = _crc(code, tables, _I0, _I0, _I0, x, _I0, _I0)
    return out


def _terms(codes, tables, spt, s_ip, d_ip, bond_seed, tup):  # pragma: no cover - compiled
    """The addresses' share of each role's hash (``tup[0..3]``: bond, ToR, Agg, core; the
    port's share is added per candidate by :func:`_with_sport`) and the bond seed's
    (``tup[4]``). A switch's hash is then ``seed term ^ tup[role]`` (see :func:`_crc`)."""
    for r in range(4):
        code = codes[r]
        if code >= 5:
            tup[r] = 0
        elif r > 0 and code == codes[r - 1]:
            tup[r] = tup[r - 1]
        else:
            tup[r] = _crc(code, tables, _I0, s_ip, d_ip, _I0, _I17, _I4791)
    tup[4] = _seed_term(codes[0], tables, bond_seed)


def _with_sport(codes, spt, base, sport, tup):  # pragma: no cover - compiled
    """``tup`` = ``base`` with source port ``sport``'s share added."""
    hi, lo = (sport >> 8) & 0xFF, sport & 0xFF
    for r in range(4):
        code = codes[r]
        tup[r] = base[r] ^ spt[code, 0, hi] ^ spt[code, 1, lo]
    tup[4] = base[4]


def _role_hash(code, term, tup_r, tables, s_ip, d_ip, sport):  # pragma: no cover - compiled
    """A hash of role's ``code`` for a switch/bond with seed term ``term``."""
    if code >= 5:
        return _hash(code, tables, np.uint64(term), s_ip, d_ip, sport)
    return term ^ tup_r


def _umod(a, b):  # pragma: no cover - compiled
    """``a % b`` for 0 <= a < 2**32 and 0 < b < 2**32 (a 32-bit unsigned division)."""
    return np.int64(np.uint32(a) % np.uint32(b))


def _rot16(h, off):  # pragma: no cover - compiled
    h = h & 0xFFFF
    off = off % 16
    return ((h >> off) | (h << ((16 - off) % 16))) & 0xFFFF


def _uniform_pick(seed, key, hop, count):  # pragma: no cover - compiled
    base = _smix(np.uint64(seed) + np.uint64(hop) * _P7919)
    h = _smix(np.uint64(key) ^ base)
    u = np.float64(h >> _S11) * (1.0 / 9007199254740992.0)
    return np.int64(u * count)


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


def _class_dist(indptr, indices, m, s_node, s_class, s_level, nsig):
    """Hop distances (int32, ``_FAR``: none) from every compact switch to every destination
    class, with a last row of ``_FAR`` (as :func:`hpn.routing.shortest._classes` computes
    them). Class ``s_class[k]`` has switch ``s_node[k]`` at distance ``s_level[k]`` (0 for a
    switch, 1 for a switch an endpoint hangs from); one breadth-first search for all classes
    at once, each switch holding a bitset of the classes it reaches (as ``_hops_to`` does per
    target)."""  # pragma: no cover - compiled
    words = (nsig + 63) // 64
    reach = np.zeros((m, words), np.uint64)
    nb = np.zeros((m, words), np.uint64)
    dist = np.full((m + 1, nsig), np.int32(_FAR), np.int32)
    top = 0
    for k in range(len(s_level)):
        top = max(top, s_level[k])
    level = 0
    while True:
        if level > 0:
            for x in range(m):
                for w in range(words):
                    nb[x, w] = 0
                for k in range(indptr[x], indptr[x + 1]):
                    y = indices[k]
                    for w in range(words):
                        nb[x, w] |= reach[y, w]
        for k in range(len(s_level)):
            if s_level[k] == level:
                c = s_class[k]
                nb[s_node[k], c >> 6] |= np.uint64(1) << np.uint64(c & 63)
        fresh_any = False
        for x in range(m):
            for w in range(words):
                fresh = nb[x, w] & ~reach[x, w]
                if fresh:
                    fresh_any = True
                    reach[x, w] |= fresh
                    for b in range(64):
                        if (fresh >> np.uint64(b)) & np.uint64(1):
                            dist[x, 64 * w + b] = level
        if level == 0:
            for x in range(m):
                for w in range(words):
                    nb[x, w] = 0
        if not fresh_any and level >= top:
            break
        level += 1
    return dist


def kernel(name: str) -> Callable[..., Any]:
    """The compiled kernel ``name`` (``route``, ``search``, ``class_dist`` or
    ``dense_ids``), compiled on first use.

    Parameters
    ----------
    name
        ``route``, ``search``, ``class_dist`` or ``dense_ids``.

    Returns
    -------
    Callable
        The numba function.
    """
    if not _compiled:
        g = globals()
        # the helpers allocate nothing: compiled without reference counting, they do not
        # pay two atomic operations per array of their tuple arguments on every call; one
        # `_walk_lanes` call steps ``LANES`` walks (a call per walk would cost more than
        # inlining)
        plain = (
            "_smix", "_byte", "_crc", "_seed_reg", "_hash", "_seed_term", "_terms",
            "_with_sport", "_role_hash", "_umod", "_rot16", "_uniform_pick", "_new_list",
            "_distance", "_ready_row", "_warm", "_walk_lanes", "_pair_round",
        )  # fmt: skip
        compile_in(g, plain, _nrt=False)
        kernels = {"route": "_route_kernel", "class_dist": "_class_dist", "search": "_search_pass"}
        _compiled.update(compile_in(g, ("_sport_tables", "_placed", "_dense_ids"), kernels))
        _compiled["dense_ids"] = Kernel(g["_dense_ids"])  # (also the search's helper)
    return _compiled[name]
