"""Switch and host hash functions over packed 5-tuples, vectorized with numpy.

Switches pick an ECMP next hop as ``hash(5-tuple, seed) mod N`` over the equal-cost next hops
in port order. Production hashes are CRCs and XOR folds: *linear* functions, which is why a
host can predict them (RePaC) and why two tiers hashing the same fields correlate (hash
polarization). The seed enters as the CRC's initial value; for a CRC that only XORs a
constant into the result, so seeds alone do not decorrelate the low bits across tiers. A hash
*offset* (:func:`rotate16`: which bits of the hash feed the modulo, as Broadcom's
``ECMP_HASH_OFFSET`` and SAI's ``ecmp_hash_offset`` select) does: two tiers that take
different bits of a CRC make (nearly) independent choices.
``mix64`` is a non-linear function for comparison (independent choices per tier).

All CRCs are bit-exact with their catalogue definitions (``zlib.crc32``, ``binascii.crc_hqx``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from hpn.registry import Registry


def _table(poly: int, width: int, reflected: bool) -> np.ndarray:
    top = 1 << (width - 1)
    mask = (1 << width) - 1
    table = np.zeros(256, np.uint32)
    for i in range(256):
        if reflected:
            c = i
            for _ in range(8):
                c = (c >> 1) ^ poly if c & 1 else c >> 1
        else:
            c = i << (width - 8)
            for _ in range(8):
                c = ((c << 1) ^ poly) if c & top else (c << 1)
        table[i] = c & mask
    return table


_CRC32 = _table(0xEDB88320, 32, True)  # IEEE 802.3, as zlib.crc32
_CRC32C = _table(0x82F63B78, 32, True)  # Castagnoli
_CRC16_ARC = _table(0xA001, 16, True)  # CRC-16/ARC (IBM)
_CRC16_CCITT = _table(0x1021, 16, False)  # CRC-16/CCITT (binascii.crc_hqx)


def _columns(data: np.ndarray | TupleBytes) -> np.ndarray | TupleBytes:
    """Byte columns in order: a lazy TupleBytes, or the contiguous transpose of a byte array."""
    if isinstance(data, TupleBytes):
        return data
    return np.ascontiguousarray(np.asarray(data, np.uint8).T)


def _init(seed, n: int, mask: int, xor: int = 0) -> np.ndarray:
    """The initial register per row from a scalar or per-row seed."""
    s = (np.asarray(seed, np.uint64) ^ np.uint64(xor)) & np.uint64(mask)
    return np.broadcast_to(s.astype(np.uint32), (n,)).copy()


def _crc_reflected(data, table: np.ndarray, init, xorout: int) -> np.ndarray:
    cols = _columns(data)
    crc = _init(init, len(data), 0xFFFFFFFF)
    for col in cols:
        crc = table.take((crc ^ col) & np.uint32(0xFF)) ^ (crc >> np.uint32(8))
    return crc ^ np.uint32(xorout)


def _crc16_msb(data, table: np.ndarray, init) -> np.ndarray:
    cols = _columns(data)
    crc = _init(init, len(data), 0xFFFF)
    for col in cols:
        crc = (table.take(((crc >> np.uint32(8)) ^ col) & 0xFF) ^ (crc << np.uint32(8))) & 0xFFFF
    return crc


class TupleBytes:
    """The 13 bytes of many 5-tuples (network order), produced column by column without
    materializing a rows x 13 array: src ip, dst ip, protocol, source port, dest port."""

    def __init__(self, src_ip, dst_ip, sport, dport, proto: int = 17):
        n = len(src_ip)
        self.fields: tuple[tuple[np.ndarray, int], ...] = (
            (np.asarray(src_ip, np.uint32), 32),
            (np.asarray(dst_ip, np.uint32), 32),
            (np.full(n, proto, np.uint32), 8),
            (np.broadcast_to(np.asarray(sport, np.uint32), (n,)), 16),
            (np.broadcast_to(np.asarray(dport, np.uint32), (n,)), 16),
        )
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __iter__(self):
        for arr, bits in self.fields:
            for shift in range(bits - 8, -1, -8):
                yield (arr >> np.uint32(shift)) & np.uint32(0xFF) if shift else arr & 0xFF

    def take(self, idx: np.ndarray) -> TupleBytes:
        """The tuples of rows ``idx``."""
        out = TupleBytes.__new__(TupleBytes)
        out.fields = tuple((arr[idx], bits) for arr, bits in self.fields)
        out.n = len(out.fields[0][0])
        return out

    def rows(self) -> np.ndarray:
        """The bytes as a rows x 13 uint8 array."""
        return np.stack(list(self), axis=1).astype(np.uint8)


def crc32(data: np.ndarray, seed: int = 0) -> np.ndarray:
    """CRC-32/IEEE of each row of ``data`` (uint8, rows x bytes); ``seed`` continues a CRC
    like ``zlib.crc32(row, seed)``.

    Parameters
    ----------
    data
        uint8 array, one message per row.
    seed
        CRC to continue (0: a fresh one).

    Returns
    -------
    numpy.ndarray
        One uint32 per row.

    Examples
    --------
    >>> import zlib
    >>> row = np.frombuffer(b"hpn", np.uint8).reshape(1, -1)
    >>> int(crc32(row)[0]) == zlib.crc32(b"hpn")
    True
    """
    return _crc_reflected(data, _CRC32, _init(seed, len(data), 0xFFFFFFFF, 0xFFFFFFFF), 0xFFFFFFFF)


def crc32c(data: np.ndarray, seed: int = 0) -> np.ndarray:
    """CRC-32C (Castagnoli) of each row of ``data``; ``seed`` continues a CRC.

    Parameters
    ----------
    data
        uint8 array, one message per row.
    seed
        CRC to continue (0: a fresh one).

    Returns
    -------
    numpy.ndarray
        One uint32 per row.

    Examples
    --------
    The catalogue's check value:

    >>> hex(int(crc32c(np.frombuffer(b"123456789", np.uint8).reshape(1, -1))[0]))
    '0xe3069283'
    """
    return _crc_reflected(data, _CRC32C, _init(seed, len(data), 0xFFFFFFFF, 0xFFFFFFFF), 0xFFFFFFFF)


def crc16_arc(data: np.ndarray, seed: int = 0) -> np.ndarray:
    """CRC-16/ARC; ``seed`` is the initial register (0 in the catalogue).

    Parameters
    ----------
    data
        uint8 array, one message per row.
    seed
        Initial register.

    Returns
    -------
    numpy.ndarray
        One 16-bit value per row.
    """
    return _crc_reflected(data, _CRC16_ARC, _init(seed, len(data), 0xFFFF), 0)


def crc16_ccitt(data: np.ndarray, seed: int = 0xFFFF) -> np.ndarray:
    """CRC-16/CCITT as ``binascii.crc_hqx(row, seed)``.

    Parameters
    ----------
    data
        uint8 array, one message per row.
    seed
        Initial register.

    Returns
    -------
    numpy.ndarray
        One 16-bit value per row.

    Examples
    --------
    >>> import binascii
    >>> row = np.frombuffer(b"hpn", np.uint8).reshape(1, -1)
    >>> int(crc16_ccitt(row)[0]) == binascii.crc_hqx(b"hpn", 0xFFFF)
    True
    """
    return _crc16_msb(data, _CRC16_CCITT, seed)


def xor16(data: np.ndarray, seed: int = 0) -> np.ndarray:
    """XOR fold of the row's 16-bit big-endian words, XORed with the seed's low 16 bits.

    Parameters
    ----------
    data
        uint8 array, one message per row.
    seed
        Seed.

    Returns
    -------
    numpy.ndarray
        One 16-bit value per row.
    """
    cols = list(_columns(data))
    if len(cols) % 2:
        cols.append(np.zeros_like(cols[0]))
    h = _init(seed, len(data), 0xFFFF)
    for hi, lo in zip(cols[0::2], cols[1::2], strict=True):
        h ^= (np.asarray(hi, np.uint32) << np.uint32(8)) | np.asarray(lo, np.uint32)
    return h


def mix64(data: np.ndarray, seed: int = 0) -> np.ndarray:
    """A non-linear 32-bit hash (splitmix64 rounds over 8-byte words): independent choices.

    Parameters
    ----------
    data
        uint8 array, one message per row.
    seed
        Seed.

    Returns
    -------
    numpy.ndarray
        One 32-bit value per row.
    """
    cols = [np.asarray(c, np.uint64) for c in _columns(data)]
    cols += [np.zeros_like(cols[0])] * (-len(cols) % 8)
    words = [
        sum((cols[i + b] << np.uint64(56 - 8 * b) for b in range(8)), np.uint64(0))
        for i in range(0, len(cols), 8)
    ]
    h = np.broadcast_to(np.asarray(seed, np.uint64), (len(data),)) ^ np.uint64(0x243F6A8885A308D3)
    with np.errstate(over="ignore"):
        for w in words:
            h = h ^ w
            h = h + np.uint64(0x9E3779B97F4A7C15)
            h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            h = h ^ (h >> np.uint64(31))
    return (h >> np.uint64(32)).astype(np.uint32)


HASHES: Registry[Callable[[Any, Any], np.ndarray]] = Registry("hash")
for _name, _fn in (
    ("crc32", crc32),
    ("crc32c", crc32c),
    ("crc16", crc16_ccitt),
    ("crc16-arc", crc16_arc),
    ("xor16", xor16),
    ("mix64", mix64),
):
    HASHES.add(_name, _fn)


def get_hash(name: str) -> Callable[[Any, Any], np.ndarray]:
    """The hash function named ``name`` (``crc32``, ``crc32c``, ``crc16``, ...).

    Parameters
    ----------
    name
        A key of ``HASHES``.

    Returns
    -------
    Callable
        ``hash(data, seed) -> numpy.ndarray``.

    Raises
    ------
    InputError
        For an unknown name (field ``hash``).
    """
    return HASHES.get(name)


def fold16(h: np.ndarray) -> np.ndarray:
    """XOR-fold a 32-bit hash to 16 bits (what many switches feed to the ECMP modulo).

    Parameters
    ----------
    h
        32-bit hashes.

    Returns
    -------
    numpy.ndarray
        ``(h >> 16) ^ (h & 0xFFFF)``.

    Examples
    --------
    >>> hex(int(fold16(np.array([0x12345678], np.uint32))[0]))
    '0x444c'
    """
    h = np.asarray(h, np.uint32)
    return (h ^ (h >> np.uint32(16))) & np.uint32(0xFFFF)


def rotate16(h: np.ndarray, offset: int | np.ndarray) -> np.ndarray:
    """Rotate a 16-bit hash right by ``offset`` bits (0..15): the switch then takes its modulo
    from bits ``offset ..`` instead of the lowest ones (a hash offset).

    Parameters
    ----------
    h
        16-bit hashes.
    offset
        Bits, per hash or one for all.

    Returns
    -------
    numpy.ndarray
        The rotated hashes.
    """
    h = np.asarray(h, np.uint32) & np.uint32(0xFFFF)
    off = np.asarray(offset, np.uint32) % np.uint32(16)
    return ((h >> off) | (h << ((np.uint32(16) - off) % np.uint32(16)))) & np.uint32(0xFFFF)


_TUPLE = np.dtype(
    [("src", ">u4"), ("dst", ">u4"), ("proto", "u1"), ("sport", ">u2"), ("dport", ">u2")]
)


def pack_5tuples(
    src_ip: np.ndarray, dst_ip: np.ndarray, sport: np.ndarray, dport: np.ndarray, proto: int = 17
) -> np.ndarray:
    """Rows of 13 bytes, network order: src ip, dst ip, protocol, source port, dest port.

    Parameters
    ----------
    src_ip, dst_ip
        IPv4 addresses (uint32).
    sport, dport
        UDP/TCP ports.
    proto
        IP protocol (17: UDP).

    Returns
    -------
    numpy.ndarray
        uint8, rows x 13.
    """
    rec = np.empty(len(src_ip), dtype=_TUPLE)
    rec["src"], rec["dst"], rec["proto"] = src_ip, dst_ip, proto
    rec["sport"], rec["dport"] = sport, dport
    return rec.view(np.uint8).reshape(len(src_ip), 13)


def linux_bond_l34(
    src_ip: np.ndarray, dst_ip: np.ndarray, sport: np.ndarray, dport: np.ndarray
) -> np.ndarray:
    """Linux bonding ``xmit_hash_policy=layer3+4`` as its documentation gives it:
    ports XORed, XOR the addresses, fold by 16 and 8 bits (then modulo the slave count).

    Parameters
    ----------
    src_ip, dst_ip
        IPv4 addresses (uint32).
    sport, dport
        Ports.

    Returns
    -------
    numpy.ndarray
        The hash, before the modulo.
    """
    h = (np.asarray(sport, np.uint32) ^ np.asarray(dport, np.uint32)) ^ (
        np.asarray(src_ip, np.uint32) ^ np.asarray(dst_ip, np.uint32)
    )
    h = h ^ (h >> np.uint32(16))
    return h ^ (h >> np.uint32(8))
