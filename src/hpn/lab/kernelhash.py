"""Linux's IPv4 multipath hash, from the kernel's source, to predict the lab's paths.

What the kernel does with ``fib_multipath_hash_policy=1`` and a ``fib_multipath_hash_seed``
set (Linux 6.11+, ``net/ipv4/route.c``: ``fib_multipath_hash``, ``fib_multipath_hash_from_keys``,
``fib_multipath_hash_construct_key``; ``net/core/flow_dissector.c``: ``__flow_hash_from_keys``,
``__flow_hash_consistentify``, ``flow_keys_hash_length``; ``lib/siphash.c``;
``net/ipv4/fib_semantics.c``: ``fib_rebalance``, ``fib_select_multipath``):

1. ``struct flow_keys`` zeroed, then addresses, ports and protocol set (``n_proto`` stays 0);
2. made direction-independent: addresses swapped if ``(u32)dst - (u32)src < 0`` as a signed
   int, ports if ``(u16)dst < (u16)src`` (both compared as the network-order bytes read as
   little-endian integers);
3. SipHash-2-4 over the key bytes from ``basic`` to the end of the IPv4 addresses (44 bytes:
   basic 4, tags 4, vlan 8, cvlan 8, keyid 4, ports 4, icmp 4, v4 addresses 8), keyed with
   ``k0 = k1 = seed << 32 | seed``; the low 32 bits, 0 mapped to 1;
4. shifted right by one (31 bits), then the first next hop whose upper bound
   ``round((i + 1) * 2^31 / n) - 1`` is >= the hash (hash threshold, equal weights).

Without a user seed the key is random per namespace: only distributions can be compared.
"""

from __future__ import annotations

import ipaddress
import struct

_MASK = (1 << 64) - 1


def _rotl(x: int, b: int) -> int:
    return ((x << b) | (x >> (64 - b))) & _MASK


def siphash24(data: bytes, k0: int, k1: int) -> int:
    """SipHash-2-4 of ``data`` with the 128-bit key (k0, k1) (``lib/siphash.c``)."""
    v0 = 0x736F6D6570736575 ^ k0
    v1 = 0x646F72616E646F6D ^ k1
    v2 = 0x6C7967656E657261 ^ k0
    v3 = 0x7465646279746573 ^ k1

    def rounds(n: int) -> None:
        nonlocal v0, v1, v2, v3
        for _ in range(n):
            v0 = (v0 + v1) & _MASK
            v1 = _rotl(v1, 13) ^ v0
            v0 = _rotl(v0, 32)
            v2 = (v2 + v3) & _MASK
            v3 = _rotl(v3, 16) ^ v2
            v0 = (v0 + v3) & _MASK
            v3 = _rotl(v3, 21) ^ v0
            v2 = (v2 + v1) & _MASK
            v1 = _rotl(v1, 17) ^ v2
            v2 = _rotl(v2, 32)

    n = len(data)
    end = n - n % 8
    for i in range(0, end, 8):
        (m,) = struct.unpack_from("<Q", data, i)
        v3 ^= m
        rounds(2)
        v0 ^= m
    b = (n & 0xFF) << 56
    tail = data[end:]
    b |= int.from_bytes(tail, "little")
    v3 ^= b
    rounds(2)
    v0 ^= b
    v2 ^= 0xFF
    rounds(4)
    return v0 ^ v1 ^ v2 ^ v3


def _le32(addr: str) -> int:
    """An IPv4 address's network-order bytes read as a little-endian u32 (as ``__be32``)."""
    return int.from_bytes(ipaddress.IPv4Address(addr).packed, "little")


def _le16(port: int) -> int:
    return int.from_bytes(port.to_bytes(2, "big"), "little")


def flow_hash(src: str, dst: str, sport: int, dport: int, proto: int, seed: int) -> int:
    """``fib_multipath_hash`` (policy 1, user seed ``seed``): the 31-bit hash."""
    s, d = _le32(src), _le32(dst)
    if d < s:  # compared as u32
        s, d = d, s
    ps, pd = _le16(sport), _le16(dport)
    if pd < ps:
        ps, pd = pd, ps
    key = struct.pack(
        "<HBB I 8x 8x I HH 4x II 4x", 0, proto, 0, 0, 0, ps, pd, s, d
    )  # basic, tags, vlan, cvlan, keyid, ports, icmp, v4 addrs, the struct's padding
    k = ((seed & 0xFFFFFFFF) << 32) | (seed & 0xFFFFFFFF)
    h = siphash24(key, k, k) & 0xFFFFFFFF
    return (h or 1) >> 1


def select(hash31: int, n: int) -> int:
    """The next hop (0..n-1) ``fib_select_multipath`` takes for equal weights."""
    for i in range(n):
        bound = ((i + 1) * (1 << 31) * 2 + n) // (2 * n) - 1  # DIV_ROUND_CLOSEST - 1
        if hash31 <= bound:
            return i
    return n - 1


class KernelTables:
    """Every namespace's routes as the kernel holds them now (``ip -j route show table
    all``, read once), to walk flows hop by hop with :func:`flow_hash` instead of asking
    ``ip route get`` per flow and hop."""

    def __init__(self, plan):
        import json

        from hpn.lab import netns

        self.plan = plan
        self.routes: list[list[tuple[int, int, str, list[str]]]] = []  # (net, len, table, devs)
        for ns in plan.namespaces:
            data = json.loads(netns.run(["ip", "-n", ns, "-j", "route", "show", "table", "all"]))
            rows = []
            for r in data:
                if r.get("type", "unicast") not in ("unicast", "blackhole"):
                    continue
                dst = r.get("dst", "")
                dst = "0.0.0.0/0" if dst == "default" else dst if "/" in dst else dst + "/32"
                try:
                    net = ipaddress.IPv4Network(dst)
                except ValueError:
                    continue
                devs = (
                    []
                    if r.get("type") == "blackhole"
                    else [h["dev"] for h in r.get("nexthops", [])] or [r.get("dev", "")]
                )
                table = str(r.get("table", "main"))
                rows.append((int(net.network_address), net.prefixlen, table, devs))
            self.routes.append(rows)

    def egress(self, ns: int, src: str, dst: str, sport: int, dport: int = 4791) -> str | None:
        """The interface the namespace's kernel sends this flow by (None: no route)."""
        plan = self.plan
        table = "main"
        if plan.ns_role[ns] == "host":
            node = next((n for n in plan.nodes_in_ns[ns] if plan.ip(n) == src), None)
            if node is not None:
                table = str(plan.table_of(node))
        d = int(ipaddress.IPv4Address(dst))
        best = None
        for net, plen, tbl, devs in self.routes[ns]:
            if tbl != table:
                continue
            mask = ((1 << 32) - 1) ^ ((1 << (32 - plen)) - 1) if plen else 0
            if d & mask == net and (best is None or plen > best[0]):
                best = (plen, devs)
        if best is None or not best[1]:
            return None
        devs = best[1]
        if len(devs) == 1:
            return devs[0]
        seed = int(plan.kernel_seed[plan.nodes_in_ns[ns][0]])
        return devs[select(flow_hash(src, dst, sport, dport, 17, seed), len(devs))]


def predict_paths(plan, src, dst, sport, tables: KernelTables | None = None):
    """(Paths, reached) as :func:`hpn.lab.learn.learn_paths` gives them, computed from the
    kernels' route tables and the kernel's hash instead of asked flow by flow."""
    import numpy as np

    from hpn.routing.base import Paths

    tables = tables or KernelTables(plan)
    f = plan.fabric
    out, ok = [], np.zeros(len(src), bool)
    for i in range(len(src)):
        at, path = int(src[i]), []
        s, d = plan.ip(int(src[i])), plan.ip(int(dst[i]))
        for _ in range(8):
            ns = int(plan.ns_of_node[at])
            dev = tables.egress(ns, s, d, int(sport[i]))
            link = plan.link_of_if.get((ns, dev)) if dev else None
            if link is None:
                break
            path.append(link)
            at = int(f.links.dst[link])
            if at == int(dst[i]):
                ok[i] = True
                break
        out.append(path)
    return Paths.from_lists(out), ok
