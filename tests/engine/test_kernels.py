"""The compiled max-min kernel against the numpy progressive filling: bit-identical."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpn.engine.fill_kernels import fill_rates
from hpn.engine.kernels import HAVE_NUMBA

pytestmark = pytest.mark.skipif(not HAVE_NUMBA, reason="numba (the fast extra) not installed")


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**31), st.integers(1, 60), st.integers(1, 40))
def test_compiled_fill_is_bit_identical_to_numpy(seed, n_users, n_links):
    rng = np.random.default_rng(seed)
    hops = rng.integers(0, 6, n_users)  # users without links get inf
    rows = np.repeat(np.arange(n_users), hops)
    cols = rng.integers(0, n_links, len(rows))  # repeats are weights
    cap = rng.choice([0.0, 1.0, 2.5, 4.0, 10.0, 1e10 / 3], n_links) * rng.choice([1.0, 1 / 7])
    fast = fill_rates(rows, cols, n_users, n_links, cap, compiled=True)
    ref = fill_rates(rows, cols, n_users, n_links, cap, compiled=False)
    np.testing.assert_array_equal(fast, ref)


def test_a_shared_link_and_a_private_one():
    # users 0 and 1 share link 0 (capacity 10); user 1 also crosses link 1 (capacity 2)
    rows, cols = np.array([0, 1, 1]), np.array([0, 0, 1])
    rates = fill_rates(rows, cols, 2, 2, np.array([10.0, 2.0]), compiled=True)
    np.testing.assert_array_equal(rates, [8.0, 2.0])


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2**31))
def test_compiled_ledger_books_what_numpy_books(seed):
    from hpn.engine.links import LinkLedger

    rng = np.random.default_rng(seed)
    cap = rng.choice([0.0, 1e9, 2.5e9, 1e10 / 3], 12)
    fast, ref = LinkLedger(cap.copy()), LinkLedger(cap.copy())
    ref.compiled = False
    now = 0.0
    for _ in range(30):
        now += float(rng.choice([0.0, 1e-6, 3e-4 / 7]))
        links = rng.choice(12, int(rng.integers(0, 12)), replace=False)
        new = rng.choice([0.0, 1e-15, 1e8, 7e8 / 3], len(links))
        for ledger in (fast, ref):
            ledger.cap[links[:1]] = 5e8  # a capacity change on the way
            ledger.set(links, new, now)
    for name in ("load", "bytes", "busy", "peak", "since", "cap_at", "on"):
        np.testing.assert_array_equal(getattr(fast, name), getattr(ref, name), err_msg=name)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**31), st.integers(1, 30), st.integers(1, 25))
def test_compiled_components_equal_scipy(seed, n_flows, n_links):
    from hpn.engine.fill_kernels import reached

    rng = np.random.default_rng(seed)
    length = rng.integers(0, 4, n_flows)
    links = rng.integers(0, n_links, int(length.sum()) + 3)
    start = rng.integers(0, len(links) - length + 1)
    user = rng.integers(0, max(n_flows // 2, 1), n_flows)  # some flows coupled into one user
    n_live = int(rng.integers(0, n_flows + 1))
    stamp = np.full(n_links, -1, np.int64)
    args = (start, length, links, user, int(user.max()) + 1, n_live, stamp)
    fast = reached(*args, compiled=True)
    np.testing.assert_array_equal(stamp, -1)  # scratch left as found
    np.testing.assert_array_equal(fast, reached(*args, compiled=False))


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**31), st.integers(1, 40), st.integers(1, 25))
def test_compiled_components_of_flows_equal_scipy(seed, n_flows, n_links):
    """Coupled groups whole (every member searched: read by their links, their components
    kept for the next search with the same whole groups) or not, solo flows, flows both
    checked and seeds: the fused kernel gives the twin's result, search after search."""
    from hpn.engine.fill_kernels import group_rows, reach_cache, reached_flows

    rng = np.random.default_rng(seed)
    length = rng.integers(0, 4, n_flows)
    links = rng.integers(0, n_links, int(length.sum()) + 3)
    start = rng.integers(0, len(links) - length + 1).astype(np.int32)
    n_groups = int(rng.integers(1, n_flows // 2 + 2))
    group = np.where(rng.random(n_flows) < 0.7, rng.integers(0, n_groups, n_flows), -1)
    group = group.astype(np.int32)
    stamp = np.full(n_links, -1, np.int64)
    path = (start, length, links)
    rows = group_rows(group, *path, n_links)
    cache = reach_cache(len(rows[2]), n_links)
    seen = rng.permutation(n_flows)
    for _ in range(4):
        if rng.random() < 0.6:  # another set (else the same whole groups again)
            seen = rng.permutation(n_flows)[: int(rng.integers(1, n_flows + 1))]
        n_live = int(rng.integers(0, len(seen) + 1))
        again = rng.choice(seen[:n_live], min(n_live, int(rng.integers(0, 3))), replace=False)
        flows = np.concatenate([seen, again]).astype(np.int64)  # live, gone, new (also live)
        args = (flows, n_live, len(seen), group, path, stamp)
        fast = reached_flows(*args, rows, cache, compiled=True)
        np.testing.assert_array_equal(stamp, -1)  # scratch left as found
        np.testing.assert_array_equal(fast, reached_flows(*args, compiled=False))


def test_group_rows_list_each_groups_distinct_links():
    from hpn.engine.fill_kernels import group_rows

    # flows 0, 2, 3 in group 0 (interleaved with group 1's flow 1), flow 4 alone
    links = np.array([5, 6, 5, 7, 6, 5, 1, 2])
    start, length = np.array([0, 2, 3, 5, 6]), np.array([2, 1, 2, 1, 2])
    group = np.array([0, 1, 0, 0, -1], np.int32)
    row, out, size = group_rows(group, start, length, links, 8)
    assert row.tolist() == [0, 3, 4] and size.tolist() == [3, 1]
    assert out[:3].tolist() == [5, 6, 7] and out[3:].tolist() == [5]


def test_components_by_hand():
    from hpn.engine.fill_kernels import reached

    # flows 0-1 share link 5, flow 2 is alone on 7, flow 3 (a seed) crosses 5: 0 and 1 reached
    links = np.array([5, 6, 5, 7, 5])
    start, length = np.array([0, 2, 3, 4]), np.array([2, 1, 1, 1])
    stamp = np.full(8, -1, np.int64)
    got = reached(start, length, links, np.arange(4), 4, 3, stamp, compiled=True)
    np.testing.assert_array_equal(got, [True, True, False])


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2**31))
def test_tier_sums_add_in_link_order_like_bincount(seed):
    from hpn.engine.kernels import tier_sums
    from hpn.engine.links import LinkLedger

    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 300))
    ledger = LinkLedger(rng.choice([0.0, 1e9, 1e10 / 3], n))
    # links grouped by tier, as fabrics number them, and a few out of order
    tier = np.sort(rng.integers(0, 5, n)).astype(np.uint8)
    tier[rng.integers(0, max(n, 1), min(n, 3))] = 4
    links = rng.choice(n, int(rng.integers(0, n + 1)), replace=False)
    ledger.set(links, rng.choice([0.0, 1e-15, 1e8 / 3, 7e8 / 3, 2.2e9], len(links)), 1e-6)
    on = ledger.on
    loaded = np.flatnonzero(on)
    ref = np.bincount(tier[loaded], weights=ledger.load[loaded], minlength=5)
    np.testing.assert_array_equal(tier_sums(on, tier, ledger.load, 5), ref)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**31), st.integers(0, 3000), st.sampled_from([0.0, 0.003, 0.01, 0.1, 0.5]))
def test_tier_sums_skip_unloaded_runs_exactly(seed, n, frac):
    # few loaded links, clustered or alone, tier changes inside unloaded runs, n not a
    # multiple of 64: the compiled pass (which skips runs of 64 unloaded links) adds exactly
    # what bincount adds over the loaded links
    from hpn.engine.kernels import tier_sums
    from hpn.engine.links import LinkLedger

    rng = np.random.default_rng(seed)
    ledger = LinkLedger(np.full(n, 1e10 / 3))
    tier = np.sort(rng.integers(0, 4, n)).astype(np.uint8)
    k = int(frac * n)
    alone = rng.choice(n, k, replace=False) if n else np.zeros(0, np.int64)
    heads = rng.integers(0, max(n, 1), 3)
    runs = [np.arange(a, min(a + int(rng.integers(1, 20)), n)) for a in heads]
    links = np.unique(np.concatenate([alone, *runs]).astype(np.int64)) if n else alone
    ledger.set(links, rng.uniform(1e6, 3e9, len(links)) / 3, 1e-6)
    loaded = np.flatnonzero(ledger.on)
    ref = np.bincount(tier[loaded], weights=ledger.load[loaded], minlength=4)
    np.testing.assert_array_equal(tier_sums(ledger.on, tier, ledger.load, 4), ref)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**31), st.integers(0, 300), st.integers(1, 40), st.booleans(), st.booleans())
def test_compiled_connections_are_the_sorted_ones(seed, n, n_keys, shared, small):
    # repeated keys (connections over many transfers), negative and huge keys; with
    # ``shared`` some key is used by two (src, dst) pairs: the kernel gives up, the sort runs;
    # ``small``: the hash table starts at 16 slots and is doubled on the way
    from hpn.engine import kernels
    from hpn.engine.paths import connections

    rng = np.random.default_rng(seed)
    pool = rng.integers(-(2**62), 2**62, n_keys)
    keys = pool[rng.integers(0, n_keys, n)]
    by_key = {  # each key's own (src, dst)
        int(k): (int(rng.integers(0, 20)), int(rng.integers(0, 20))) for k in pool
    }
    src = np.array([by_key[int(k)][0] for k in keys], np.int64)
    dst = np.array([by_key[int(k)][1] for k in keys], np.int64)
    if shared and n > 1:
        j = int(rng.integers(1, n))
        src[j] = 20 + src[j]  # the key of flow j now names another pair too
    old, kernels.CONN_BITS = kernels.CONN_BITS, 4 if small else kernels.CONN_BITS
    try:
        fast = connections(src, dst, keys, 64, compiled=True)
    finally:
        kernels.CONN_BITS = old
    ref = connections(src, dst, keys, 64, compiled=False)
    for got, want in zip(fast, ref, strict=True):
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2**31), st.integers(1, 50), st.integers(0, 200))
def test_compiled_counts_are_bincount(seed, n, m):
    from hpn.engine import kernels

    ids = np.random.default_rng(seed).integers(0, n, m).astype(np.int32)
    got = kernels.counts(ids, n)  # compiled (numba installed) unless ids is empty
    want = np.bincount(ids, minlength=n)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.int32
