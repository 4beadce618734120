"""HPN's host-side selection places connections per NIC: both planes, spread uplinks."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hpn.errors import InputError
from hpn.routing import default_policy, describe, router_for
from hpn.routing.hpn_select import HpnRouter
from hpn.topology import LinkTier, NodeKind, build

SEG = 136 * 8  # GPUs (incl. backup hosts) per segment


@pytest.fixture(scope="module")
def pod():
    return build("hpn", segments=2)


def _uplink(f, path):
    return [int(x) for x in path if f.links.tier[x] == LinkTier.TOR_AGG][0]


def test_single_connection_pairs_use_both_planes(pod):
    """A permutation with one connection per pair: half the NICs send on each port (it used
    to be port 0 for all: connection 0 always took the first plane)."""
    gpus = np.flatnonzero((pod.nodes.kind == NodeKind.GPU) & ~pod.nodes.backup)
    rng = np.random.default_rng(3)
    dst = rng.permutation(gpus)
    keep = dst != gpus
    sel = HpnRouter(seed=1).select(pod, gpus[keep], dst[keep])
    share = np.mean(sel.plane == 0)
    assert 0.45 < share < 0.55


def test_a_nics_connections_spread_over_planes_and_uplinks(pod):
    """One NIC, one connection to each of 30 peers in the other segment (same rail): 15 per
    plane, and within a plane 15 different ToR uplinks (a per-pair choice would collide)."""
    peers = SEG + 8 * np.arange(30)
    sel = HpnRouter(seed=1).select(pod, np.zeros(30, np.int64), peers)
    assert np.bincount(sel.plane, minlength=2).tolist() == [15, 15]
    for p in (0, 1):
        ups = [_uplink(pod, sel.paths[i]) for i in np.flatnonzero(sel.plane == p)]
        assert len(set(ups)) == 15


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(st.tuples(st.integers(0, 15), st.integers(0, 15)), min_size=1, max_size=12),
    st.integers(2, 6),
    st.integers(0, 50),
)
def test_ring_connections_keep_exact_plane_balance(pod, edges, conns, seed):
    """Rail-0 GPUs of segment 0 -> segment 1 (any pairs), ``conns`` connections each: every
    pair has floor/ceil(conns/2) per plane, every NIC within one of even, paths of a pair
    distinct, and the ports predicted are the ports the network routes."""
    edges = sorted(set(edges))
    src = np.repeat([8 * a for a, _ in edges], conns)
    dst = np.repeat([SEG + 8 * b for _, b in edges], conns)
    keys = np.tile(np.arange(conns), len(edges))
    r = HpnRouter(seed=seed)
    sel = r.select(pod, src, dst, keys)
    for e in range(len(edges)):
        part = slice(e * conns, (e + 1) * conns)
        planes = np.bincount(sel.plane[part], minlength=2)
        assert abs(int(planes[0]) - int(planes[1])) == conns % 2
        ids = {tuple(sel.paths[i]) for i in range(e * conns, (e + 1) * conns)}
        assert len(ids) == conns
    for nic in np.unique(src):
        planes = np.bincount(sel.plane[src == nic], minlength=2)
        assert abs(int(planes[0]) - int(planes[1])) <= 1
    again = router_for(pod, "ecmp", seed=seed).route_sports(pod, src, dst, sel.sport)
    assert np.array_equal(again.links, sel.paths.links)


def test_a_dead_port_moves_every_connection_to_the_live_plane(pod):
    lk = pod.links
    down = np.zeros(pod.num_links, bool)
    dead = np.flatnonzero((lk.src == 0) & (lk.port == 0) & (lk.tier == LinkTier.NIC_TOR))
    down[dead] = True
    down[dead ^ 1] = True
    sel = HpnRouter(seed=1).select(pod, np.zeros(4, np.int64), np.full(4, SEG), down=down)
    assert (sel.plane == 1).all()
    assert len({tuple(sel.paths[i]) for i in range(4)}) == 4


def test_default_routing_follows_the_fabric(pod):
    assert default_policy(pod) == "hpn"
    assert default_policy(build("rail-only", segments=1)) == "hpn"
    assert default_policy(build("dcn-plus", segments=2)) == "ecmp"
    assert default_policy(build("fat-tree", k=4)) == "ecmp"
    r = router_for(pod, seed=2)
    assert r.name == "hpn" and "seeds switch" in describe(r)
    assert router_for(pod, "random").name == "random"
    with pytest.raises(InputError, match="hash settings apply"):
        router_for(pod, "random", hashing={"seeds": "same"})
    with pytest.raises(InputError, match="routing.seeds"):
        router_for(pod, "ecmp", hashing={"seeds": "every"})
