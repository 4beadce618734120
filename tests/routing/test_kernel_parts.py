"""The parts the compiled routing kernels build on, against their reference: hashes split by
linearity into seed, address and port terms equal the full hashes; the compiled class
distances equal the numpy table (faults included); the row-key unique equals
``np.unique(axis=0)``; walking pairs and flows class by class still reports the first error in
flow order; a pod with one link failed and two pods route as the numpy code does."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hpn.routing import kernels as K
from hpn.routing import make_router
from hpn.routing import shortest as S
from hpn.topology import build
from hpn.topology.fabric import LinkTier, NodeKind
from tests.engine.fabrics import random_fabric
from tests.routing.test_kernels import assert_same_no_path

pytest.importorskip("numba")


@pytest.fixture(scope="module")
def tables():
    K.kernel("route")  # compiles (or loads) the helpers
    return K.hash_tables(), K._sport_tables(K.hash_tables())


@settings(max_examples=200, deadline=None)
@given(
    code=st.integers(0, 5),
    seed=st.integers(0, 2**64 - 1),
    s_ip=st.integers(0, 2**32 - 1),
    d_ip=st.integers(0, 2**32 - 1),
    sport=st.integers(0, 2**16 - 1),
)
def test_hash_by_terms_equals_full_hash(tables, code, seed, s_ip, d_ip, sport):
    tab, spt = tables
    codes = np.full(4, code, np.int64)
    base, tup = np.zeros(5, np.int64), np.zeros(5, np.int64)
    K._terms(codes, tab, spt, s_ip, d_ip, np.uint64(seed), base)
    K._with_sport(codes, spt, base, sport, tup)
    term = K._seed_term(code, tab, np.uint64(seed))
    full = K._hash(code, tab, np.uint64(seed), s_ip, d_ip, sport)
    assert K._role_hash(code, term, tup[1], tab, s_ip, d_ip, sport) == full
    assert K._role_hash(code, tup[4], tup[0], tab, s_ip, d_ip, sport) == full  # the bond


def _down_one(fabric, tier, seed=0):
    down = np.zeros(fabric.num_links, bool)
    ids = np.flatnonzero(fabric.links.tier == tier)
    down[np.random.default_rng(seed).choice(ids)] = True
    return down


def _dst(fabric, n, seed):
    ends = np.flatnonzero(np.isin(fabric.nodes.kind, (NodeKind.GPU, NodeKind.HOST)))
    g = np.flatnonzero(np.isin(fabric.nodes.kind, S.FORWARDING))
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.choice(ends, n), rng.choice(g, 5)])  # switches are classes too


@pytest.mark.parametrize(
    "preset, kw, tier",
    [
        ("hpn", {"pods": 2, "segments": 1}, None),
        ("hpn", {"segments": 2}, LinkTier.TOR_AGG),
        ("hpn", {"pods": 2, "segments": 1}, LinkTier.AGG_CORE),
        ("dcn-plus", {"pods": 2, "segments": 2}, None),
    ],
)
def test_class_distances_equal_numpy(preset, kw, tier, monkeypatch):
    monkeypatch.setattr(S, "CLASS_KERNEL_MIN", 0)  # the kernel on small fabrics too
    fabric = build(preset, **kw)
    down = None if tier is None else _down_one(fabric, tier)
    g = S._Graph(fabric, down) if down is not None else S._graph(fabric)
    dst = _dst(fabric, 3000, 1)
    fast, uf = S._classes(g, fabric, dst, None)
    ref, ur = S._classes(g, fabric, dst, lambda c: np.zeros(len(c.keys), np.int64))
    assert fast.flat.dtype == ref.flat.dtype == np.int32
    np.testing.assert_array_equal(fast.flat, ref.flat)
    np.testing.assert_array_equal(uf, ur)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31))
def test_class_distances_random_graphs(seed):
    S.CLASS_KERNEL_MIN, kept = 0, S.CLASS_KERNEL_MIN  # the kernel on small fabrics too
    try:
        _random_graph_classes(seed)
    finally:
        S.CLASS_KERNEL_MIN = kept


def _random_graph_classes(seed):
    rng = np.random.default_rng(seed)
    fabric = random_fabric(rng, int(rng.integers(1, 12)), int(rng.integers(2, 20)))
    g = S._graph(fabric)
    dst = np.flatnonzero(fabric.nodes.kind == NodeKind.HOST)
    fast, uf = S._classes(g, fabric, dst, None)
    ref, ur = S._classes(g, fabric, dst, lambda c: np.zeros(len(c.keys), np.int64))
    np.testing.assert_array_equal(fast.flat, ref.flat)
    np.testing.assert_array_equal(uf, ur)


@settings(max_examples=100, deadline=None)
@given(
    rows=st.integers(0, 40),
    width=st.integers(1, 5),
    top=st.sampled_from([1, 3, 1000, 2**20, 2**40]),
    seed=st.integers(0, 2**31),
)
def test_unique_rows_equals_numpy(rows, width, top, seed):
    a = np.random.default_rng(seed).integers(-1, top, (rows, width))
    u, inv = S._unique_rows(a)
    ur, invr = np.unique(a, axis=0, return_inverse=True)
    np.testing.assert_array_equal(u, ur)
    np.testing.assert_array_equal(inv, invr.ravel())


def test_first_error_in_flow_order_when_walked_by_class():
    fabric = build("hpn", pods=2, segments=1)
    lk = fabric.links
    gpus = np.flatnonzero(fabric.nodes.kind == NodeKind.GPU)
    dead = gpus[[3, 40]]  # two sources without a NIC link
    down = np.isin(lk.src, dead) & (lk.tier == LinkTier.NIC_TOR)
    # the later dead source's destination is in an earlier class: a walk by class meets it
    # first, yet the error names the first in flow order, as the numpy code does
    src = np.concatenate([gpus[100:104], [dead[0]], gpus[104:108], [dead[1]]])
    dst = np.concatenate([gpus[-4:], gpus[[-1]], gpus[-8:-4], gpus[[200]]])
    assert_same_no_path(fabric, src, dst, down, dead[0])


@pytest.mark.parametrize("tier", [None, LinkTier.TOR_AGG, LinkTier.AGG_CORE, LinkTier.NIC_TOR])
def test_hpn_selection_one_link_failed_equals_numpy(tier):
    fabric = build("hpn", pods=2, segments=1)
    down = None if tier is None else _down_one(fabric, tier, 3)
    gpus = fabric.nodes_of(NodeKind.GPU)
    gpus = gpus[~fabric.nodes.backup[gpus]]
    if down is not None:  # keep endpoints whose NIC links are all up
        gpus = gpus[~np.isin(gpus, fabric.links.src[down])]
    perm = np.random.default_rng(2).permutation(gpus)
    keep = perm != gpus
    src, dst = gpus[keep], perm[keep]
    fast, ref = make_router("hpn", seed=3), make_router("hpn", seed=3)
    ref.compiled = False
    a, b = fast.select(fabric, src, dst, None, down), ref.select(fabric, src, dst, None, down)
    assert (fast.kernel, ref.kernel) == ("numba", "numpy")
    for name in ("sport", "plane", "distinct_paths_found"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    np.testing.assert_array_equal(a.paths.offsets, b.paths.offsets)
    np.testing.assert_array_equal(a.paths.links, b.paths.links)


def _first_appearance_ids(keys: np.ndarray) -> tuple[np.ndarray, int]:
    """Ids numbered by first appearance of each key (the reference for ``_dense_ids``)."""
    _, first, inv = np.unique(keys, return_index=True, return_inverse=True)
    rank = np.empty(len(first), np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inv.ravel()], len(first)


@settings(max_examples=100, deadline=None)
@given(
    n_pairs=st.integers(1, 30),
    items=st.integers(0, 200),
    uplinks=st.integers(1, 12),
    by_source=st.booleans(),
    seed=st.integers(0, 2**31),
)
def test_dense_ids_number_by_first_appearance(n_pairs, items, uplinks, by_source, seed):
    """Both ways of numbering (NIC, uplink) classes (one pass over source runs when pairs
    are in source order, a hash table otherwise) give ids by first appearance."""
    K.kernel("search")
    rng = np.random.default_rng(seed)
    p_src = rng.integers(0, 8, n_pairs)
    if by_source:
        p_src = np.sort(p_src)
    pair = np.sort(rng.integers(0, n_pairs, items)).astype(np.int32)
    up = rng.integers(0, uplinks, items).astype(np.int32)
    ids, m = K._dense_ids(p_src.astype(np.int64), pair, up)
    ref, mr = _first_appearance_ids(p_src[pair] * 1000 + up)
    np.testing.assert_array_equal(ids, ref)
    assert m == mr


@settings(max_examples=200, deadline=None)
@given(
    cnt=st.lists(st.integers(0, 6), min_size=1, max_size=30),
    top=st.sampled_from([1, 3, 2**45]),
    seed=st.integers(0, 2**31),
)
def test_first_min_equals_min_at_and_unique(cnt, top, seed):
    """HPN placement's first least score per connection: the reduceat form equals the
    ``np.minimum.at`` + ``np.unique`` form it replaced (ties: the first entry)."""
    from hpn.routing.hpn_select import _first_min

    cnt = np.array(cnt, np.int64)
    score = np.random.default_rng(seed).integers(0, top, int(cnt.sum()))
    rep = np.repeat(np.arange(len(cnt)), cnt)
    best = np.full(len(cnt), np.iinfo(np.int64).max)
    np.minimum.at(best, rep, score)
    want = np.flatnonzero(score == best[rep])
    want = want[np.unique(rep[want], return_index=True)[1]]
    got = _first_min(score, cnt)
    np.testing.assert_array_equal(got, want)
    nz = cnt[cnt > 0]
    np.testing.assert_array_equal(_first_min(score, nz), want)  # no empty group


@pytest.fixture(scope="module")
def two_pods():
    return build("hpn", pods=2, segments=1)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    first_round=st.sampled_from([1, 3, 5, 16, 21]),
    max_candidates=st.sampled_from([7, 40, 256]),
    conns=st.integers(1, 6),
    seed=st.integers(0, 2**31),
)
def test_hpn_rounds_equal_numpy(two_pods, first_round, max_candidates, conns, seed):
    """Many rounds (round sizes that are not a multiple of the lanes, the item table grown,
    pairs that stop early or exhaust their paths, pairs inside one host among them): the
    compiled search gives the numpy code's ports, planes, counts and paths."""
    fabric = two_pods
    gpus = fabric.nodes_of(NodeKind.GPU)
    gpus = gpus[~fabric.nodes.backup[gpus]]
    rng = np.random.default_rng(seed)
    src = rng.choice(gpus, 24)
    dst = rng.choice(gpus, 24)
    host = fabric.nodes.host
    for i in range(3):  # pairs inside one host: the NVLink path, no walk
        mates = gpus[(host[gpus] == host[src[i]]) & (gpus != src[i])]
        dst[i] = mates[0]
    keep = src != dst
    src, dst = np.repeat(src[keep], conns), np.repeat(dst[keep], conns)
    keys = np.tile(np.arange(conns), int(keep.sum()))
    kw = {"seed": 5, "first_round": first_round, "max_candidates": max_candidates}
    fast, ref = make_router("hpn", **kw), make_router("hpn", **kw)
    ref.compiled = False
    a, b = fast.select(fabric, src, dst, keys), ref.select(fabric, src, dst, keys)
    assert (fast.kernel, ref.kernel) == ("numba", "numpy")
    for name in ("sport", "plane", "distinct_paths_found"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    np.testing.assert_array_equal(a.paths.offsets, b.paths.offsets)
    np.testing.assert_array_equal(a.paths.links, b.paths.links)
