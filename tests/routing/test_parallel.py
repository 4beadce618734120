"""The compiled walk and HPN's candidate search split over threads (hpn.routing.parallel) give
exactly what one thread gives: ports, planes, counts and paths, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hpn.errors import InputError
from hpn.routing import fast as F
from hpn.routing import make_router
from hpn.routing import parallel as P
from hpn.topology import build
from hpn.topology.fabric import LinkTier, NodeKind
from tests.routing.test_kernel_parts import _down_one

pytest.importorskip("numba")


@pytest.fixture(scope="module")
def two_pods():
    return build("hpn", pods=2, segments=1)


@pytest.fixture
def split_all(monkeypatch):
    """Every call split (no size threshold); records the threads each split ran in."""
    monkeypatch.setattr(P, "SPLIT_MIN", 0)
    runs: list[int] = []
    run = P.run_parts

    def counted(fn, jobs):
        runs.append(len(jobs))
        return run(fn, jobs)

    monkeypatch.setattr(P, "run_parts", counted)
    return runs


def _flows(fabric, down=None, seed=2, conns=1):
    gpus = fabric.nodes_of(NodeKind.GPU)
    gpus = gpus[~fabric.nodes.backup[gpus]]
    if down is not None:  # keep endpoints whose NIC links are all up
        gpus = gpus[~np.isin(gpus, fabric.links.src[down])]
    rng = np.random.default_rng(seed)
    perm = rng.permutation(gpus)
    host = fabric.nodes.host
    for i in range(0, 40, 8):  # some pairs inside one host: the NVLink path
        mates = gpus[(host[gpus] == host[gpus[i]]) & (gpus != gpus[i])]
        perm[i] = mates[0]
    keep = perm != gpus
    src, dst = np.repeat(gpus[keep], conns), np.repeat(perm[keep], conns)
    return src, dst, np.tile(np.arange(conns), int(keep.sum()))


def _select(monkeypatch, threads, name, fabric, src, dst, keys, down=None, **kw):
    monkeypatch.setenv(P.ENV, str(threads))
    r = make_router(name, seed=3, **kw)
    if name == "hpn":
        out = r.select(fabric, src, dst, keys, down)
        return out.sport, out.plane, out.distinct_paths_found, out.paths
    return (r.route(fabric, src, dst, keys, down),)


def _assert_same(a, b):
    for x, y in zip(a, b, strict=True):
        if hasattr(x, "links"):
            np.testing.assert_array_equal(x.offsets, y.offsets)
            np.testing.assert_array_equal(x.links, y.links)
        else:
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("tier", [None, LinkTier.NIC_TOR, LinkTier.TOR_AGG, LinkTier.AGG_CORE])
@pytest.mark.parametrize("name", ["hpn", "ecmp"])
def test_threads_equal_one_thread(two_pods, split_all, monkeypatch, name, tier):
    down = None if tier is None else _down_one(two_pods, tier, 3)
    src, dst, keys = _flows(two_pods, down, conns=3)
    one = _select(monkeypatch, 1, name, two_pods, src, dst, keys, down)
    assert not split_all
    two = _select(monkeypatch, 2, name, two_pods, src, dst, keys, down)
    # HPN: the search (its paths are the flows'); ECMP: the walk
    assert split_all == [2]
    _assert_same(one, two)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    threads=st.integers(2, 5),
    n=st.integers(1, 400),
    conns=st.integers(1, 4),
    first_round=st.sampled_from([1, 5, 16]),
    seed=st.integers(0, 2**31),
)
def test_any_split_equals_one_thread(
    two_pods, split_all, monkeypatch, threads, n, conns, first_round, seed
):
    """Any number of threads, any number of pairs (fewer than the threads included), several
    connections per pair, several rounds: the same selection as one thread."""
    src, dst, keys = _flows(two_pods, seed=seed, conns=conns)
    src, dst, keys = src[: n * conns], dst[: n * conns], keys[: n * conns]
    kw = {"first_round": first_round, "max_candidates": 40}
    one = _select(monkeypatch, 1, "hpn", two_pods, src, dst, keys, **kw)
    many = _select(monkeypatch, threads, "hpn", two_pods, src, dst, keys, **kw)
    _assert_same(one, many)


def test_full_store_grows_in_a_thread(two_pods, split_all, monkeypatch):
    """A thread whose candidate-list store fills grows it and walks its range again."""
    src, dst, keys = _flows(two_pods)
    one = _select(monkeypatch, 1, "hpn", two_pods, src, dst, keys)
    init = F.Store.__init__
    grown: list[int] = []
    grow = F.Store.grow

    def small(self, fabric, g, walk, size=None):
        init(self, fabric, g, walk, 16)

    def counted(self):
        grown.append(self.size)
        grow(self)

    monkeypatch.setattr(F.Store, "__init__", small)
    monkeypatch.setattr(F.Store, "grow", counted)
    two = _select(monkeypatch, 2, "hpn", two_pods, src, dst, keys)
    assert split_all and grown
    _assert_same(one, two)


def test_round_robin_bond_searches_in_one_thread(two_pods, split_all, monkeypatch):
    """The rr bond numbers candidates across all pairs of a round: the search is not split,
    and a connection keeps the path (and port) of the candidate chosen for it, so nothing is
    walked again. The result is one thread's, and the numpy code's."""
    src, dst, keys = _flows(two_pods, conns=2)
    kw = {"hashing": {"bond_hash": "rr"}}
    one = _select(monkeypatch, 1, "hpn", two_pods, src, dst, keys, **kw)
    two = _select(monkeypatch, 2, "hpn", two_pods, src, dst, keys, **kw)
    assert split_all == []
    _assert_same(one, two)
    ref = make_router("hpn", seed=3, **kw)
    ref.compiled = False
    out = ref.select(two_pods, src, dst, keys)
    _assert_same(one, (out.sport, out.plane, out.distinct_paths_found, out.paths))


def test_no_path_error_is_one_threads(two_pods, split_all, monkeypatch):
    """A range that fails hands over to one thread: the error names the first flow without a
    path in flow order, as without threads."""
    lk = two_pods.links
    gpus = np.flatnonzero(two_pods.nodes.kind == NodeKind.GPU)
    dead = gpus[[300, 40]]
    down = np.isin(lk.src, dead) & (lk.tier == LinkTier.NIC_TOR)
    src = np.concatenate([gpus[100:140], [dead[0]], gpus[140:180], [dead[1]]])
    dst = np.concatenate([gpus[-40:], gpus[[-1]], gpus[-80:-40], gpus[[200]]])
    for name in ("ecmp", "hpn"):
        messages = []
        for threads in (1, 2):
            monkeypatch.setenv(P.ENV, str(threads))
            with pytest.raises(InputError) as e:
                make_router(name).route(two_pods, src, dst, down=down)
            messages.append(str(e.value))
        assert messages[0] == messages[1]
        # ECMP names the first flow; HPN the first pair (in source order), as without threads
        first = dead[0] if name == "ecmp" else min(dead)
        assert f"no path from node {first} " in messages[0]


@given(n=st.integers(0, 60), k=st.integers(1, 6), top=st.integers(1, 8), seed=st.integers(0, 99))
def test_ranges_cover_in_order_and_cut_between_keys(n, k, top, seed):
    key = np.sort(np.random.default_rng(seed).integers(0, top, n))
    got = P.ranges(n, k, key)
    assert len(got) == k
    assert got[0][0] == 0 and got[-1][1] == n
    assert all(a[1] == b[0] and a[0] <= a[1] for a, b in zip(got, got[1:], strict=False))
    for lo, _ in got[1:]:
        assert lo in (0, n) or key[lo] != key[lo - 1]
    plain = P.ranges(n, k)
    assert [hi - lo for lo, hi in plain] == [n * (j + 1) // k - n * j // k for j in range(k)]


def test_threads_setting(monkeypatch, tmp_path):
    monkeypatch.delenv(P.ENV, raising=False)
    assert P.threads() >= 1
    monkeypatch.setattr(P.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    monkeypatch.setattr(P, "cgroup_quota", lambda root="": None)
    assert P.threads() == 4  # the affinity mask
    monkeypatch.setattr(P, "cgroup_quota", lambda root="": 1.5)
    assert P.threads() == 2  # a quota of 1.5 cores, rounded up
    monkeypatch.setattr(P, "cgroup_quota", lambda root="": 64.0)
    assert P.threads() == 4  # a quota above the mask
    monkeypatch.setenv(P.ENV, "3")  # the setting wins
    assert P.threads() == 3
    for bad in ("0", "-1", "two"):
        monkeypatch.setenv(P.ENV, bad)
        with pytest.raises(InputError, match=P.ENV):
            P.threads()


def test_cgroup_quota_v2_and_v1(tmp_path):
    v2 = tmp_path / "v2"
    v2.mkdir()
    (v2 / "cpu.max").write_text("150000 100000\n")
    assert P.cgroup_quota(str(v2)) == 1.5
    (v2 / "cpu.max").write_text("max 100000\n")
    assert P.cgroup_quota(str(v2)) is None
    (v2 / "cpu.max").write_text("garbage\n")
    assert P.cgroup_quota(str(v2)) is None
    v1 = tmp_path / "v1"
    (v1 / "cpu").mkdir(parents=True)
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("200000\n")
    (v1 / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert P.cgroup_quota(str(v1)) == 2.0
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    assert P.cgroup_quota(str(v1)) is None
    assert P.cgroup_quota(str(tmp_path / "absent")) is None
    assert P.cores(str(v2)) >= 1


def test_run_parts_raises_a_threads_error():
    def fn(x):
        if x == 2:
            raise ValueError("part 2")
        return x * 10

    assert P.run_parts(fn, [(1,), (3,), (4,)]) == [10, 30, 40]
    with pytest.raises(ValueError, match="part 2"):
        P.run_parts(fn, [(1,), (2,), (4,)])
