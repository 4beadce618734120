"""Constants and hash functions of the compiled routing kernels (:mod:`hpn.routing.kernels`):
the switches' hashes of the RoCEv2 5-tuple, ported byte for byte from
:mod:`hpn.routing.hashing`, split by linearity into seed, address and port terms.
"""

from __future__ import annotations

import numpy as np

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
