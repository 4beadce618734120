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
_FAR = 1 << 20
_REC, _ENT = 8, 3  # int64s per candidate-list record and per entry (see _new_list)


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


def _byte(j, s_ip, d_ip, sport):  # pragma: no cover - compiled
    """Byte ``j`` of the 13-byte RoCEv2 5-tuple (network order; UDP, dport 4791)."""
    if j < 4:
        return (s_ip >> (24 - 8 * j)) & 0xFF
    if j < 8:
        return (d_ip >> (24 - 8 * (j - 4))) & 0xFF
    if j == 8:
        return 17
    if j == 9:
        return (sport >> 8) & 0xFF
    if j == 10:
        return sport & 0xFF
    if j == 11:
        return 4791 >> 8
    return 4791 & 0xFF


def _hash(code, tables, seed, s_ip, d_ip, sport):  # pragma: no cover - compiled
    """``HASHES[name](tuple, seed)`` of one tuple (int64 holding the uint32 result)."""
    if code == 0 or code == 1 or code == 3:  # reflected CRCs
        if code == 3:
            crc = np.int64(seed & _M16)
            xorout = 0
        else:
            crc = np.int64((seed ^ _M32) & _M32)
            xorout = 0xFFFFFFFF
        for j in range(13):
            crc = tables[code, (crc ^ _byte(j, s_ip, d_ip, sport)) & 0xFF] ^ (crc >> 8)
        return crc ^ xorout
    if code == 2:  # CRC-16/CCITT, MSB first
        crc = np.int64(seed & _M16)
        for j in range(13):
            b = _byte(j, s_ip, d_ip, sport)
            crc = (tables[2, ((crc >> 8) ^ b) & 0xFF] ^ (crc << 8)) & 0xFFFF
        return crc
    if code == 4:  # xor16
        h = np.int64(seed & _M16)
        for j in range(0, 14, 2):
            lo = _byte(j + 1, s_ip, d_ip, sport) if j + 1 < 13 else 0
            h ^= (_byte(j, s_ip, d_ip, sport) << 8) | lo
        return h
    # mix64: two big-endian 8-byte words (the 13 bytes, zero padded)
    h = np.uint64(seed) ^ _MIX0
    for w in range(2):
        word = np.uint64(0)
        for b in range(8):
            j = 8 * w + b
            v = _byte(j, s_ip, d_ip, sport) if j < 13 else 0
            word = (word << _S8) | np.uint64(v)
        h = _smix(h ^ word)
    return np.int64(h >> _S32)


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
    (``_ENT`` int64s): link, next node, the next node's compact index (-1: an endpoint)."""
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
    rec[r0 + 4], rec[r0 + 5] = rl, np.int64(node_seed[v] if len(node_seed) > v else 0)
    rec[r0 + 6], rec[r0 + 7] = 0, 0
    if rl == 3 and core_map:
        k = v * pods + pod[lk_dst[scr[0]]]
        rec[r0 + 6], rec[r0 + 7] = c_off[k], c_off[k + 1] - c_off[k]
    table[slot] = c
    st[0], st[1], st[2] = o + n, c + 1, go + m
    return c


def _walk(
    s, d, u, s_ip, d_ip, sport, conn, dist0, out, g, hs, ls, st, memo, scr
):  # pragma: no cover - compiled
    """Walk one flow ``s -> d`` (class ``u``, ``dist0`` hops), writing its links to ``out``;
    returns OK, NO_NEXT_HOP or FULL."""
    fwd, out_off, out_ids, comp, att_off, att_ids, lk_src, lk_dst, flat, rows, out_next = g
    (mode, seed, role, node_seed, codes, offs, lag_offs, bond, lag, tables,
     core_map, in_rank, c_off, c_links, pods, pod) = hs  # fmt: skip
    s_ent, s_gpos, rec, g_start, g_cnt, table = ls
    v = s
    vc = comp[s] if fwd[s] else -1  # compact index of the node the flow is at
    r = dist0
    urow = u * rows
    prev = -1
    hop = 0
    while r > 0:
        if r == 1 and not fwd[d]:
            chosen = -1
            for j in range(att_off[d], att_off[d + 1]):
                if lk_src[att_ids[j]] == v:
                    chosen = att_ids[j]
                    break
            v, vc = lk_dst[chosen], -1
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
                pick = _uniform_pick(seed, conn, hop, cnt)
            elif cnt > 1:
                rl = rec[r0 + 4]
                if rl >= 1 and rl <= 3:
                    h = _hash(codes[rl], tables, np.uint64(rec[r0 + 5]), s_ip, d_ip, sport)
                    h = (h ^ (h >> 16)) & 0xFFFF
                    e = _rot16(h, offs[rl])
                    m = rec[r0 + 2]
                    if not lag or m == cnt:
                        pick = e % cnt
                    else:
                        go = rec[r0 + 3]
                        gi = e % m
                        member = _rot16(h, lag_offs[rl]) % g_cnt[go + gi]
                        pick = s_gpos[base + g_start[go + gi] + member]
                    full = rec[r0 + 7]
                    if full > 0 and prev >= 0:
                        mapped = c_links[rec[r0 + 6] + in_rank[prev] % full]
                        for i in range(cnt):
                            if s_ent[_ENT * (base + i)] == mapped:
                                pick = i
                                break
            e0 = _ENT * (base + pick)
            chosen, v, vc = s_ent[e0], s_ent[e0 + 1], s_ent[e0 + 2]
        else:  # an endpoint: its NIC ports, uncached
            cnt = 0
            for p in range(out_off[v], out_off[v + 1]):
                if flat[urow + out_next[p]] == r - 1:
                    scr[cnt] = out_ids[p]
                    cnt += 1
            if cnt == 0:
                return NO_NEXT_HOP
            pick = 0
            if mode == MODE_UNIFORM:
                pick = _uniform_pick(seed, conn, hop, cnt)
            elif cnt > 1 and role[v] == 0:  # the host's bond
                if bond == BOND_RR:
                    pick = conn % cnt
                elif bond == BOND_L34:
                    h = (sport ^ 4791) ^ (s_ip ^ d_ip)
                    h = h ^ (h >> 16)
                    pick = (h ^ (h >> 8)) % cnt
                else:
                    h = _hash(codes[0], tables, np.uint64(seed), s_ip, d_ip, sport)
                    pick = ((h ^ (h >> 16)) & 0xFFFF) % cnt
            chosen = scr[pick]
            v = lk_dst[chosen]
            vc = comp[v] if fwd[v] else -1
        out[hop] = chosen
        prev = chosen
        r -= 1
        hop += 1
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


def _route_kernel(src, dst, uinv, s_ip, d_ip, sport, conn, g, hs, ls, st, memo, scr):
    """Route flows: (status, flow index, offsets, links)."""  # pragma: no cover - compiled
    n = len(src)
    offsets = np.zeros(n + 1, np.int64)
    for i in range(n):
        d = _distance(src[i], uinv[i], g)
        if d >= _FAR:
            return NO_PATH, i, offsets, np.zeros(0, np.int64)
        offsets[i + 1] = offsets[i] + d
    links = np.empty(offsets[n], np.int64)
    for i in range(n):
        o = offsets[i]
        status = _walk(
            src[i], dst[i], uinv[i], s_ip[i], d_ip[i], sport[i], conn[i],
            offsets[i + 1] - o, links[o : offsets[i + 1]], g, hs, ls, st, memo, scr,
        )  # fmt: skip
        if status != OK:
            return status, i, offsets, links
    return OK, -1, offsets, links


def _search_kernel(
    p_src, p_dst, p_u, p_ip, q_ip, start, per_plane, ports, nv0, nv1, first_round, max_cand,
    port, g, hs, ls, st, memo, scr,
):  # fmt: skip  # pragma: no cover - compiled
    """HPN's candidate rounds (:meth:`HpnRouter.select`), round by round as the numpy code
    runs them: (status, index, items, count, found per plane); items are the new distinct
    paths (pair, sport, plane, uplink) in the order the numpy code records them."""
    n = len(p_src)
    count = np.zeros(n, np.int64)
    found = np.zeros((n, 2), np.int64)
    dist = np.empty(n, np.int64)
    for p in range(n):
        dist[p] = 2 if nv0[p] >= 0 else _distance(p_src[p], p_u[p], g)
    cap = max(n * min(first_round, max_cand), 16)
    it_pair = np.empty(cap, np.int32)
    it_sport = np.empty(cap, np.int32)
    it_plane = np.empty(cap, np.int8)
    it_up = np.empty(cap, np.int32)
    it_pid = np.empty(cap, np.uint64)
    it_next = np.empty(cap, np.int32)  # the pair's previous distinct path (-1: none)
    last = np.full(n, -1, np.int64)  # each pair's latest distinct path
    ni = 0
    active = np.arange(n)
    na = n
    tried, size = 0, first_round
    path = np.empty(64, np.int64)
    new = np.zeros(n, np.int64)
    span = np.uint64(65535 - 49152 + 1)
    while na > 0 and tried < max_cand:
        size = min(size, max_cand - tried)
        for a in range(na):
            p = active[a]
            if dist[p] >= _FAR:
                return (
                    NO_PATH,
                    a,
                    it_pair[:0],
                    it_sport[:0],
                    it_plane[:0],
                    it_up[:0],
                    count,
                    found,
                )
            ln = dist[p]
            if ln > len(path):
                path = np.empty(2 * ln, np.int64)
            for j in range(size):
                sp = np.int64(np.uint64(49152) + (start[p] + np.uint64(tried + j)) % span)
                if nv0[p] >= 0:
                    path[0], path[1] = nv0[p], nv1[p]
                    status = OK
                else:
                    status = _walk(
                        p_src[p], p_dst[p], p_u[p], p_ip[p], q_ip[p], sp, a * size + j,
                        ln, path, g, hs, ls, st, memo, scr,
                    )  # fmt: skip
                if status != OK:
                    return (
                        status, a * size + j, it_pair[:0], it_sport[:0], it_plane[:0],
                        it_up[:0], count, found,
                    )  # fmt: skip
                pid = np.uint64(0)
                for k in range(ln):
                    pid ^= _smix((np.uint64(path[k]) << _S8) ^ np.uint64(k))
                # seen for this pair? (its distinct paths so far, newest first)
                q = last[p]
                while q >= 0 and it_pid[q] != pid:
                    q = it_next[q]
                if q >= 0:
                    continue
                if ni == cap:  # grow the items
                    cap *= 2
                    it_pair = _grow(it_pair, cap)
                    it_sport = _grow(it_sport, cap)
                    it_plane = _grow(it_plane, cap)
                    it_up = _grow(it_up, cap)
                    it_next = _grow(it_next, cap)
                    it_pid = _grow(it_pid, cap)
                it_next[ni] = last[p]
                last[p] = ni
                pl = port[path[0]]
                pl = 0 if pl < 0 else (1 if pl > 1 else pl)
                it_pair[ni], it_sport[ni], it_plane[ni] = p, sp, pl
                it_up[ni] = path[1] if ln > 1 else path[0]
                it_pid[ni] = pid
                ni += 1
                count[p] += 1
                found[p, pl] += 1
                new[p] += 1
        tried += size
        k = 0
        for a in range(na):
            p = active[a]
            enough = found[p, 0] >= per_plane[p] and (ports[p] < 2 or found[p, 1] >= per_plane[p])
            if not (enough or new[p] == 0):
                active[k] = p
                k += 1
            new[p] = 0
        na = k
        size *= 2
    return OK, -1, it_pair[:ni], it_sport[:ni], it_plane[:ni], it_up[:ni], count, found


def _grow(a, cap):  # pragma: no cover - compiled
    b = np.empty(cap, a.dtype)
    b[: len(a)] = a
    return b


def kernel(name: str) -> Callable[..., Any]:
    """The compiled kernel ``name`` (``route`` or ``search``), compiled on first use.

    Parameters
    ----------
    name
        ``route`` or ``search``.

    Returns
    -------
    Callable
        The numba function.
    """
    if not _compiled:
        import numba

        jit = numba.njit(cache=True, nogil=True)
        g = globals()
        for helper in (
            "_smix", "_byte", "_hash", "_rot16", "_uniform_pick", "_new_list", "_walk",
            "_distance", "_grow",
        ):  # fmt: skip
            g[helper] = jit(g[helper])
        _compiled["route"] = jit(_route_kernel)
        _compiled["search"] = jit(_search_kernel)
    return _compiled[name]
