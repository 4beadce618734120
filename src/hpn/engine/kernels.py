"""Compiled bookkeeping kernels (numba, the ``fast`` extra), with the numpy code as the
fallback: :func:`ledger_set` books link loads (:class:`hpn.engine.links.LinkLedger`) in one
pass; hop counts per link, the per-tier sums of the sampler, connection ids by a hash table,
the successor CSR of the dependencies, and the cache-line hint ``_prefetch`` the other
kernel modules use. The max-min fill is :mod:`hpn.engine.fill_kernels`; the batch steps are
:mod:`hpn.engine.step_kernels`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hpn import jit
from hpn.engine.maxmin import gather_rows
from hpn.engine.records import LedgerRec
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


def _ledger_set(lk, v, now, led):  # pragma: no cover - compiled
    # LinkLedger.set for one link: book its load up to `now`, then hold `v` (led: LedgerRec)
    load, carried, busy, peak, since, cap_at, cap, on = led
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


def _ledger_kernel(links, new, now, led):  # pragma: no cover - compiled
    load, carried, busy, peak, since, cap_at, cap, on = led
    n = len(links)
    for i in range(n):
        if i + 16 < n:  # the cache lines of a link 16 ahead (random links miss every cache)
            ahead = links[i + 16]
            _prefetch(load, ahead)
            _prefetch(carried, ahead)
            _prefetch(cap_at, ahead)
            _prefetch(cap, ahead)
            _prefetch(on, ahead)
        _ledger_set(links[i], new[i], now, led)


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


def _succ_kernel(before, after, n):  # pragma: no cover - compiled
    # the successors of each task, grouped by predecessor in edge order (a stable counting
    # sort: what after[np.argsort(before, kind="stable")] gives), and the group offsets
    off = np.zeros(n + 1, np.int64)
    for e in range(len(before)):
        off[before[e] + 1] += 1
    for t in range(n):
        off[t + 1] += off[t]
    fill = off[:-1].copy()
    succ = np.empty(len(after), after.dtype)
    for e in range(len(before)):
        b = before[e]
        succ[fill[b]] = after[e]
        fill[b] += 1
    return succ, off


def _count_kernel(ids, n):  # pragma: no cover - compiled
    # np.bincount(ids, minlength=n) as int32, without bincount's int64 copy of the ids
    out = np.zeros(n, np.int32)
    for e in range(len(ids)):
        out[ids[e]] += 1
    return out


def _helper(name: str) -> Any:
    """The compiled helper ``name`` (called by the kernels of `engine.step_kernels` and
    `engine.fill_kernels`)."""
    _kernel("ledger")
    return globals()[name]


def _kernel(name: str):
    """The compiled kernel ``name`` (helpers compiled first, so the kernel calls them)."""
    if not _compiled:
        globals()["_prefetch"] = _prefetch_intrinsic()
        helpers = ("_ledger_set", "_conn_slot")
        kernels = {
            "ledger": "_ledger_kernel", "hops": "_hops_kernel", "tiers": "_tier_kernel",
            "conn": "_conn_kernel", "tier_list": "_tier_list_kernel", "succ": "_succ_kernel",
            "count": "_count_kernel",
        }  # fmt: skip
        _compiled.update(compile_in(globals(), helpers, kernels))
    return _compiled[name]


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
    led = LedgerRec.of(ledger)
    _kernel("ledger")(np.asarray(links, np.int64), np.asarray(new, np.float64), float(now), led)


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
    is shared by two (src, dst) pairs (:func:`hpn.engine.paths.connections` sorts then).

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


def counts(ids: np.ndarray, n: int) -> np.ndarray:
    """``np.bincount(ids, minlength=n)`` as int32 (task ids per task: predecessor counts);
    compiled, no int64 copy of ``ids`` is made.

    Parameters
    ----------
    ids
        Ids in ``0..n-1``.
    n
        Number of ids.

    Returns
    -------
    numpy.ndarray
        How often each id occurs (int32).

    Examples
    --------
    >>> counts(np.array([2, 0, 2], np.int32), 4).tolist()
    [1, 0, 2, 0]
    """
    if _use() and len(ids):
        return _kernel("count")(ids, n)
    return np.bincount(ids, minlength=n).astype(np.int32)


def successors(before: np.ndarray, after: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The dependency edges ``before[i] -> after[i]`` of ``n`` tasks as CSR: the successors
    grouped by predecessor, in edge order within a group (a stable sort), and the offsets.

    Parameters
    ----------
    before, after
        Task ids per edge (the same integer dtype).
    n
        Number of tasks.

    Returns
    -------
    tuple of numpy.ndarray
        Successors (``after``'s dtype) and offsets (int64, ``n + 1``).

    Examples
    --------
    >>> s, off = successors(np.array([2, 0, 2]), np.array([0, 1, 1]), 3)
    >>> s.tolist(), off.tolist()
    ([1, 0, 1], [0, 1, 1, 3])
    """
    if _use() and len(before):
        return _kernel("succ")(before, after, n)
    order = np.argsort(before, kind="stable")
    off = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(before, minlength=n), out=off[1:])
    return after[order], off
