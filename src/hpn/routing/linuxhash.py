"""Linux's IPv4 multipath hash, from the kernel's source: ``--ecmp-hash linux``.

What a Linux router does with ``fib_multipath_hash_policy=1`` and a
``fib_multipath_hash_seed`` set (Linux 6.11+, ``net/ipv4/route.c``: ``fib_multipath_hash``,
``fib_multipath_hash_from_keys``, ``fib_multipath_hash_construct_key``;
``net/core/flow_dissector.c``: ``__flow_hash_from_keys``, ``__flow_hash_consistentify``,
``flow_keys_hash_length``; ``lib/siphash.c``; ``net/ipv4/fib_semantics.c``: ``fib_rebalance``,
``fib_select_multipath``):

1. ``struct flow_keys`` zeroed, then addresses, ports and protocol set (``n_proto`` stays 0);
2. made direction-independent: addresses swapped if ``(u32)dst < (u32)src``, ports if
   ``(u16)dst < (u16)src`` (both compared as the network-order bytes read as little-endian
   integers);
3. SipHash-2-4 over the key bytes from ``basic`` to the end of the struct (48 bytes: basic 4,
   tags 4, vlan 8, cvlan 8, keyid 4, ports 4, icmp 4, v4 addresses 8, padding 4), keyed with
   ``k0 = k1 = seed << 32 | seed``; the low 32 bits, 0 mapped to 1;
4. shifted right by one (31 bits), then the first next hop whose upper bound
   ``round((i + 1) * 2^31 / n) - 1`` is >= the hash (hash threshold, equal weights): next hops
   in the order the route holds them (the lab's: link order, :mod:`hpn.lab.routes`).

The seed of a router is its switch seed (:meth:`hpn.routing.ecmp.HashEcmpRouter.switch_seeds`)
moved into 1..2^32-1 (:func:`kernel_seed`): seed 0 asks the kernel for a random key. The
namespace lab sets exactly these seeds, so the model predicts its paths flow for flow
(``tests/lab/test_kernelhash.py``: every hop against ``ip route get``).
"""

from __future__ import annotations

import numpy as np

LINUX = "linux"
"""The hash's name (``--ecmp-hash linux``, ``--bond linux``)."""
_U64 = np.uint64
_IV = (0x736F6D6570736575, 0x646F72616E646F6D, 0x6C7967656E657261, 0x7465646279746573)
KEY_BYTES = 48


def _rotl(x: np.ndarray, b: int) -> np.ndarray:
    return (x << _U64(b)) | (x >> _U64(64 - b))


def siphash24(
    words: np.ndarray, tail: np.ndarray, n: int, k0: np.ndarray | int, k1: np.ndarray | int
) -> np.ndarray:
    """SipHash-2-4 of many messages of ``n`` bytes (``lib/siphash.c``).

    Parameters
    ----------
    words
        Rows x n//8 little-endian uint64 words of the messages.
    tail
        The last n % 8 bytes of each message as a little-endian integer.
    n
        Message length in bytes.
    k0, k1
        The 128-bit key's halves, per row or one for all.

    Returns
    -------
    numpy.ndarray
        uint64 hashes.
    """
    k0, k1 = np.asarray(k0, _U64), np.asarray(k1, _U64)
    rows = words.shape[0]
    v0 = np.broadcast_to(_U64(_IV[0]) ^ k0, (rows,)).copy()
    v1 = np.broadcast_to(_U64(_IV[1]) ^ k1, (rows,)).copy()
    v2 = np.broadcast_to(_U64(_IV[2]) ^ k0, (rows,)).copy()
    v3 = np.broadcast_to(_U64(_IV[3]) ^ k1, (rows,)).copy()

    def rounds(k: int) -> None:
        nonlocal v0, v1, v2, v3
        for _ in range(k):
            v0 = v0 + v1
            v1 = _rotl(v1, 13) ^ v0
            v0 = _rotl(v0, 32)
            v2 = v2 + v3
            v3 = _rotl(v3, 16) ^ v2
            v0 = v0 + v3
            v3 = _rotl(v3, 21) ^ v0
            v2 = v2 + v1
            v1 = _rotl(v1, 17) ^ v2
            v2 = _rotl(v2, 32)

    with np.errstate(over="ignore"):
        for j in range(words.shape[1]):
            m = words[:, j]
            v3 ^= m
            rounds(2)
            v0 ^= m
        b = (_U64(n & 0xFF) << _U64(56)) | np.asarray(tail, _U64)
        v3 ^= b
        rounds(2)
        v0 ^= b
        v2 ^= _U64(0xFF)
        rounds(4)
    return v0 ^ v1 ^ v2 ^ v3


def _bswap32(x: np.ndarray) -> np.ndarray:
    """A big-endian u32 value's bytes read as a little-endian u32 (``__be32`` in memory)."""
    return np.asarray(x, np.uint32).byteswap()


def kernel_seed(seeds: np.ndarray) -> np.ndarray:
    """``fib_multipath_hash_seed`` for switch seeds: moved into 1..2^32-1 (0 means random),
    equal seeds staying equal.

    Parameters
    ----------
    seeds
        Switch seeds (below 2^32).

    Returns
    -------
    numpy.ndarray
        uint32 seeds, none 0.
    """
    return (np.asarray(seeds, _U64) % _U64(0xFFFFFFFF) + _U64(1)).astype(np.uint32)


def flow_hash(
    src_ip: np.ndarray,
    dst_ip: np.ndarray,
    sport: np.ndarray | int,
    dport: np.ndarray | int,
    proto: int,
    seed: np.ndarray | int,
) -> np.ndarray:
    """``fib_multipath_hash`` (policy 1) of many flows: the 31-bit hashes.

    Parameters
    ----------
    src_ip, dst_ip
        IPv4 addresses (uint32, host order).
    sport, dport
        Ports.
    proto
        IP protocol (17: UDP).
    seed
        ``fib_multipath_hash_seed`` per flow or one for all.

    Returns
    -------
    numpy.ndarray
        uint32 hashes below 2^31.

    Examples
    --------
    Direction-free, as the kernel makes it:

    >>> a = flow_hash(np.array([167772161]), np.array([167772418]), 5000, 4791, 17, 7)
    >>> b = flow_hash(np.array([167772418]), np.array([167772161]), 4791, 5000, 17, 7)
    >>> bool(a[0] == b[0])
    True
    """
    n = len(src_ip)
    s, d = _bswap32(src_ip).astype(_U64), _bswap32(dst_ip).astype(_U64)
    swap = d < s
    s, d = np.where(swap, d, s), np.where(swap, s, d)
    ps = np.broadcast_to(np.asarray(sport, np.uint16), (n,)).astype(np.uint16)
    pd = np.broadcast_to(np.asarray(dport, np.uint16), (n,)).astype(np.uint16)
    ps, pd = ps.byteswap().astype(_U64), pd.byteswap().astype(_U64)
    swap = pd < ps
    ps, pd = np.where(swap, pd, ps), np.where(swap, ps, pd)
    words = np.zeros((n, KEY_BYTES // 8), _U64)
    words[:, 0] = _U64(proto & 0xFF) << _U64(16)  # basic: n_proto 0, ip_proto, flags 0
    words[:, 3] = (ps | (pd << _U64(16))) << _U64(32)  # keyid 0 | ports
    words[:, 4] = s << _U64(32)  # icmp 0 | v4 src
    words[:, 5] = d  # v4 dst | padding 0
    k = np.asarray(seed, _U64) & _U64(0xFFFFFFFF)
    k = (k << _U64(32)) | k
    h = (siphash24(words, np.zeros(n, _U64), KEY_BYTES, k, k) & _U64(0xFFFFFFFF)).astype(np.uint32)
    h[h == 0] = 1
    return h >> np.uint32(1)


def select(hash31: np.ndarray, n: np.ndarray | int) -> np.ndarray:
    """The next hop (0..n-1) ``fib_select_multipath`` takes for equal weights.

    Parameters
    ----------
    hash31
        31-bit hashes.
    n
        Next hops per hash (or one count for all).

    Returns
    -------
    numpy.ndarray
        int64 next-hop indices.

    Examples
    --------
    >>> select(np.array([0, 715827882, 715827883, 2**31 - 1]), 3).tolist()
    [0, 0, 1, 2]
    """
    h = np.asarray(hash31, np.int64)
    n = np.broadcast_to(np.asarray(n, np.int64), h.shape)
    # upper bound of hop i: DIV_ROUND_CLOSEST((i + 1) << 31, n) - 1; the first with h <= it
    i = (h * n) >> np.int64(31)  # a guess never above the answer, then step up
    bound = lambda j: (((j + 1) << np.int64(32)) + n) // (2 * n) - 1  # noqa: E731
    for _ in range(2):
        i = np.where(h > bound(i), i + 1, i)
    return np.minimum(i, n - 1)
