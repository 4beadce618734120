"""Shortest-path ECMP: legal shortest paths, seeded spreading, NVLink, failures."""

import networkx as nx
import numpy as np
import pytest

from hpn.errors import InputError
from hpn.routing import ROUTERS, Paths, make_router
from hpn.topology import NodeKind, build
from hpn.topology.fabric import LinkTier
from hpn.workload import endpoints

FORWARDING = {NodeKind.NVSWITCH, NodeKind.TOR, NodeKind.AGG, NodeKind.CORE}


def random_pairs(ep, n, seed=0):
    rng = np.random.default_rng(seed)
    src = rng.choice(ep, n)
    dst = rng.choice(ep, n)
    keep = src != dst
    return src[keep], dst[keep]


def transit_nodes(f, p: Paths) -> np.ndarray:
    inner = np.ones(len(p.links), bool)
    inner[p.offsets[1:] - 1] = False
    return f.links.dst[p.links[inner]]


def test_registry_and_unknown_policy():
    assert "ecmp" in ROUTERS
    with pytest.raises(InputError, match="routing"):
        make_router("nope")


@pytest.mark.parametrize("preset,kw", [("fat-tree", {"k": 4}), ("dcn-plus", {})])
def test_paths_are_shortest_walks(preset, kw):
    f = build(preset, **kw)
    ep = endpoints(f)
    src, dst = random_pairs(ep, 300)
    p = make_router("ecmp", seed=2).route(f, src, dst)
    p.check(f, src, dst)
    g = nx.DiGraph()
    lk = f.links
    net = lk.tier != LinkTier.NVLINK
    fwd = np.isin(f.nodes.kind, list(FORWARDING))
    # endpoints may only start or end a path: give them out-edges or in-edges, not both
    for s, d in zip(lk.src[net], lk.dst[net], strict=True):
        g.add_edge(("out", s) if not fwd[s] else s, ("in", d) if not fwd[d] else d)
    for i in range(len(src)):
        if f.nodes.host[src[i]] == f.nodes.host[dst[i]] and f.nodes.kind[src[i]] == 0:
            continue
        expect = nx.shortest_path_length(g, ("out", src[i]), ("in", dst[i]))
        assert p.lengths[i] == expect


def test_hpn_gpus_never_forward_and_same_host_uses_nvlink():
    f = build("hpn", segments=2)
    ep = endpoints(f)
    src, dst = random_pairs(ep, 2000, seed=1)
    same = np.flatnonzero(f.nodes.host[src] == f.nodes.host[dst])
    src = np.concatenate([src, ep[:8]])
    dst = np.concatenate([dst, ep[1:9]])  # GPUs of host 0 to their neighbours
    p = make_router("ecmp", seed=1).route(f, src, dst)
    p.check(f, src, dst)
    kinds = f.nodes.kind[transit_nodes(f, p)]
    assert np.isin(kinds, list(FORWARDING)).all()
    for i in list(same) + list(range(len(src) - 7, len(src))):
        if f.nodes.host[src[i]] != f.nodes.host[dst[i]]:
            continue
        assert p.lengths[i] == 2
        assert (f.links.tier[p[i]] == LinkTier.NVLINK).all()
    cross = f.nodes.host[src] != f.nodes.host[dst]
    assert not np.isin(f.links.tier[p.links[np.repeat(cross, p.lengths)]], [LinkTier.NVLINK]).any()


def test_hpn_spreads_over_both_ports_and_stays_in_plane():
    f = build("hpn", segments=2)
    ep = endpoints(f)
    src, dst = random_pairs(ep, 4000, seed=2)
    cross = f.nodes.host[src] != f.nodes.host[dst]
    src, dst = src[cross], dst[cross]
    p = make_router("ecmp", seed=5).route(f, src, dst)
    first = p.links[p.offsets[:-1]]
    port = f.links.port[first]
    assert set(np.unique(port)) == {0, 1}
    assert abs(port.mean() - 0.5) < 0.05
    # dual-plane: a flow that leaves on port p only meets plane-p ToRs and Aggs
    hop_nodes = f.links.dst[p.links]
    plane = f.nodes.plane[hop_nodes]
    sw = np.isin(f.nodes.kind[hop_nodes], [NodeKind.TOR, NodeKind.AGG])
    flow_port = np.repeat(port, p.lengths)
    assert (plane[sw] == flow_port[sw]).all()


def test_choice_is_seeded_per_key_not_per_position():
    f = build("fat-tree", k=8)
    ep = endpoints(f)
    src, dst = random_pairs(ep, 500, seed=3)
    keys = np.arange(len(src)) * 7 + 11
    r = make_router("random", seed=4)
    a = r.route(f, src, dst, keys)
    assert np.array_equal(a.links, r.route(f, src, dst, keys).links)
    perm = np.random.default_rng(0).permutation(len(src))
    b = r.route(f, src[perm], dst[perm], keys[perm])
    for j in range(0, len(src), 37):
        assert np.array_equal(b[j], a[perm[j]])
    c = make_router("random", seed=5).route(f, src, dst, keys)
    assert not np.array_equal(a.links, c.links)
    cores = f.links.dst[a.links][f.nodes.kind[f.links.dst[a.links]] == NodeKind.CORE]
    assert len(np.unique(cores)) == f.count(
        NodeKind.CORE
    )  # independent choices per hop use every core


def test_down_links_are_avoided_and_no_path_is_an_input_error():
    f = build("fat-tree", k=4)
    r = make_router("ecmp", seed=0)
    p = r.route(f, np.array([0]), np.array([15]))
    down = np.zeros(f.num_links, bool)
    down[p[0][1]] = True
    q = r.route(f, np.array([0]), np.array([15]), down=down)
    assert p[0][1] not in q[0] and q.lengths[0] == p.lengths[0]
    down[p[0][0]] = True  # the host's only uplink
    with pytest.raises(InputError, match="no path"):
        r.route(f, np.array([0]), np.array([15]), down=down)
    with pytest.raises(InputError, match="unknown node"):
        r.route(f, np.array([0]), np.array([10**6]))
