"""The compiled routing kernels against the numpy code (the reference): the same paths, the
same HPN selection, bit for bit, on small fabrics (2 pods, a pod with links down, DCN+ with
LAGs, random graphs) and every hash setting; the router says which walk ran."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hpn import jit
from hpn.errors import InputError
from hpn.routing import make_router
from hpn.routing.ecmp import HashEcmpRouter
from hpn.topology import build
from hpn.topology.fabric import LinkTier, NodeKind
from tests.engine.fabrics import random_fabric

pytest.importorskip("numba")


@pytest.fixture(scope="module")
def two_pods():
    return build("hpn", pods=2, segments=1)


@pytest.fixture(scope="module")
def dcn():
    return build("dcn-plus", pods=2, segments=2)


def _flows(fabric, n, seed, conns=1):
    rng = np.random.default_rng(seed)
    ends = np.flatnonzero(np.isin(fabric.nodes.kind, (NodeKind.GPU, NodeKind.HOST)))
    src, dst = rng.choice(ends, n), rng.choice(ends, n)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    keys = rng.integers(0, conns, len(src)) if conns > 1 else None
    return src, dst, keys


def _both(name, fabric, src, dst, keys=None, down=None, **kw):
    fast, ref = make_router(name, **kw), make_router(name, **kw)
    ref.compiled = False
    a = fast.route(fabric, src, dst, keys, down)
    b = ref.route(fabric, src, dst, keys, down)
    assert (fast.kernel, ref.kernel) == ("numba", "numpy")
    np.testing.assert_array_equal(a.offsets, b.offsets)
    np.testing.assert_array_equal(a.links, b.links)
    return a


HASHINGS = [
    None,
    {"seeds": "same"},
    {"seeds": "tier", "lag": False},
    {"core_port_map": False, "bond_hash": "rr"},
    {"tor_hash": "xor16", "agg_hash": "mix64", "core_hash": "crc16", "bond_hash": "crc16-arc"},
    {"tor_hash": "crc32c", "agg_hash": "crc16-arc", "bond_hash": "mix64", "agg_offset": 3},
]


@pytest.mark.parametrize("hashing", HASHINGS)
@pytest.mark.parametrize("name", ["ecmp", "hpn"])
def test_two_pods_compiled_equals_numpy(two_pods, name, hashing):
    src, dst, keys = _flows(two_pods, 1500, 1, conns=3)
    paths = _both(name, two_pods, src, dst, keys, seed=7, hashing=hashing)
    paths.check(two_pods, src, dst)


def test_random_policy_compiled_equals_numpy(two_pods):
    src, dst, keys = _flows(two_pods, 2000, 2, conns=4)
    _both("random", two_pods, src, dst, keys, seed=11)


@pytest.mark.parametrize("name", ["ecmp", "hpn"])
def test_dcn_plus_lags_compiled_equals_numpy(dcn, name):
    # DCN+ has parallel Agg-core links: the two-stage (neighbour, LAG member) choice
    src, dst, keys = _flows(dcn, 1500, 3, conns=2)
    _both(name, dcn, src, dst, keys, seed=5)


@pytest.mark.parametrize("name", ["ecmp", "hpn"])
def test_pod_with_links_down_compiled_equals_numpy(name):
    fabric = build("hpn", segments=2)
    lk = fabric.links
    rng = np.random.default_rng(4)
    down = np.zeros(fabric.num_links, bool)
    for tier in (LinkTier.TOR_AGG, LinkTier.NIC_TOR):
        down[rng.choice(np.flatnonzero(lk.tier == tier), 20, replace=False)] = True
    ok = ~np.isin(np.arange(fabric.num_nodes), lk.src[down & (lk.tier == LinkTier.NIC_TOR)])
    src, dst, keys = _flows(fabric, 1500, 6, conns=2)
    keep = ok[src] & ok[dst]  # keep every endpoint reachable
    _both(name, fabric, src[keep], dst[keep], None if keys is None else keys[keep], down=down)


def test_hpn_selection_compiled_equals_numpy(two_pods):
    src, dst, keys = _flows(two_pods, 800, 8, conns=6)
    fast, ref = make_router("hpn", seed=2), make_router("hpn", seed=2)
    ref.compiled = False
    a, b = fast.select(two_pods, src, dst, keys), ref.select(two_pods, src, dst, keys)
    for name in ("sport", "plane", "distinct_paths_found"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    np.testing.assert_array_equal(a.paths.links, b.paths.links)
    # pairs of one host (NVLink) are in the search too
    gpus = np.flatnonzero(two_pods.nodes.kind == NodeKind.GPU)[:9]  # 8 of host 0, 1 more
    s, d = np.repeat(gpus, 9), np.tile(gpus, 9)
    _both("hpn", two_pods, s[s != d], d[s != d])


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31), lag=st.booleans(), policy=st.sampled_from(["ecmp", "hpn"]))
def test_random_graphs_compiled_equals_numpy(seed, lag, policy):
    rng = np.random.default_rng(seed)
    fabric = random_fabric(rng, int(rng.integers(1, 9)), int(rng.integers(2, 12)))
    hosts = np.flatnonzero(fabric.nodes.kind == NodeKind.HOST)
    src, dst = rng.choice(hosts, 60), rng.choice(hosts, 60)
    keep = src != dst
    keys = rng.integers(0, 3, int(keep.sum()))
    _both(policy, fabric, src[keep], dst[keep], keys, seed=seed, hashing={"lag": lag})


def test_same_errors_as_numpy(two_pods):
    lk = two_pods.links
    gpu = int(np.flatnonzero(two_pods.nodes.kind == NodeKind.GPU)[3])
    down = (lk.src == gpu) & (lk.tier == LinkTier.NIC_TOR)
    other = np.flatnonzero(two_pods.nodes.kind == NodeKind.GPU)[-5:]
    src = np.concatenate([other[:2], [gpu], other[2:]])
    dst = np.roll(src, 2)
    assert_same_no_path(two_pods, src, dst, down, gpu)


def assert_same_no_path(fabric, src, dst, down, node):
    """Compiled and numpy walks (ECMP and HPN) refuse with the same message, naming `node`."""
    for name in ("ecmp", "hpn"):
        messages = []
        for compiled in (True, False):
            r = make_router(name)
            r.compiled = compiled
            with pytest.raises(InputError) as e:
                r.route(fabric, src, dst, down=down)
            messages.append(str(e.value))
        assert messages[0] == messages[1]
        assert f"no path from node {node}" in messages[0]


def test_fast_path_not_taken_says_so(two_pods, monkeypatch):
    src, dst, _ = _flows(two_pods, 50, 9)

    class OwnChooser(HashEcmpRouter):
        def chooser(self, fabric, src, dst, keys):
            return super().chooser(fabric, src, dst, keys)

    own = OwnChooser()
    own.route(two_pods, src, dst)
    assert own.kernel == "numpy"  # a chooser the kernel does not know
    ideal = make_router("ideal")
    ideal.route(two_pods, src, dst)
    assert ideal.kernel == "numpy"
    monkeypatch.setattr(jit, "HAVE_NUMBA", False)  # numba not installed
    for name in ("ecmp", "hpn", "random"):
        r = make_router(name)
        r.route(two_pods, src, dst)
        assert r.kernel == "numpy"
