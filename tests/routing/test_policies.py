"""Hash-faithful ECMP, polarization, HPN path selection and the ideal bound."""

import numpy as np
import pytest

from hpn.routing import make_router
from hpn.routing.ecmp import HashConfig
from hpn.routing.hpn_select import HpnRouter
from hpn.routing.paths import count_paths, path_report
from hpn.routing.polarization import job_flows, polarization
from hpn.topology import LinkTier, NodeKind, build


@pytest.fixture(scope="module")
def single_plane():
    return build("hpn", dual_plane=False, segments=2)


@pytest.fixture(scope="module")
def dual_plane():
    return build("hpn", segments=2)


def _agg_and_side(f, paths, i):
    hops = f.links.dst[paths[i]]
    agg = [h for h in hops if f.nodes.kind[h] == NodeKind.AGG][0]
    tor = [h for h in hops if f.nodes.kind[h] == NodeKind.TOR][-1]
    return int(f.nodes.index[agg]), int(f.nodes.plane[tor])


@pytest.mark.parametrize("seeds", ["same", "tier", "switch"])
def test_same_linear_hash_polarizes_the_agg_choice(single_plane, seeds):
    """With one CRC and no offset the Agg's 2-way choice follows the ToR's 60-way choice mod 2,
    whatever the seeds (a CRC seed XORs a constant): per Agg, one side for all its flows."""
    f = single_plane
    src, dst, keys = job_flows(f, hosts=16, senders=4, connections=4)
    cfg = HashConfig.polarized(seeds=seeds)
    same = make_router("ecmp", seed=7, hashing=cfg).route(f, src, dst, keys)
    pairs = [_agg_and_side(f, same, i) for i in range(len(src))]
    if seeds == "same":
        assert all(side == agg % 2 for agg, side in pairs)
    # per (Agg, source ToR): the side is a function of the Agg, so one side only
    tor = [int(f.links.dst[same[i][0]]) for i in range(len(src))]
    sides: dict = {}
    for (agg, side), t in zip(pairs, tor, strict=True):
        sides.setdefault((agg, t), set()).add(side)
    assert all(len(v) == 1 for v in sides.values())


@pytest.mark.parametrize(
    "hashing", [{}, {"tor_hash": "mix64", "agg_hash": "mix64", "agg_offset": 0}]
)
def test_default_offsets_or_a_nonlinear_hash_decorrelate(single_plane, hashing):
    f = single_plane
    src, dst, keys = job_flows(f, hosts=16, senders=4, connections=4)
    free = make_router("ecmp", seed=7, hashing=hashing).route(f, src, dst, keys)
    pairs = [_agg_and_side(f, free, i) for i in range(len(src))]
    agree = np.mean([side == agg % 2 for agg, side in pairs])
    assert 0.35 < agree < 0.65


def test_dual_plane_removes_the_agg_choice(dual_plane):
    f = dual_plane
    src, dst, keys = job_flows(f, hosts=16, senders=2, connections=4)
    p = make_router("ecmp", seed=3).route(f, src, dst, keys)
    first_port = f.links.port[p.links[p.offsets[:-1]]]
    last_port = f.links.port[p.links[p.offsets[1:] - 1]]
    assert np.array_equal(first_port, last_port)  # delivered on the port it was sent on


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_polarization_and_its_cure(single_plane, dual_plane, seed):
    rr = {"bond_hash": "rr"}
    plain = polarization(single_plane, "ecmp", seed=seed, hashing=rr)
    planes = polarization(dual_plane, "ecmp", seed=seed, hashing=rr)
    hpn = polarization(dual_plane, "hpn", seed=seed)
    assert plain.tor_port_load_ratio is None or plain.tor_port_load_ratio > 1.5
    assert planes.tor_port_load_ratio == 1.0
    assert hpn.tor_port_load_ratio == 1.0 and hpn.idle_port_nics == 0


def test_polarization_concentrates_agg_downlinks(single_plane):
    used_same, used_free = [], []
    for seed in range(1, 6):
        used_same.append(polarization(single_plane, "ecmp", seed=seed).agg_downlinks_used)
        used_free.append(polarization(single_plane, "random", seed=seed).agg_downlinks_used)
    assert np.mean(used_same) < 0.85 * np.mean(used_free)


def test_hpn_selection_distinct_disjoint_and_plane_balanced(dual_plane):
    f = dual_plane
    s, d = 0, 136 * 8  # host 0 NIC 0 -> host 136 NIC 0 (other segment, same rail)
    sel = HpnRouter(seed=1).select(f, np.full(16, s), np.full(16, d))
    uplinks = [
        int(x)
        for i in range(16)
        for x in sel.paths[i]
        if f.links.tier[x] == LinkTier.TOR_AGG and f.nodes.kind[f.links.src[x]] == NodeKind.TOR
    ]
    assert len(set(uplinks)) == 16  # link-disjoint above the NIC ports
    assert np.bincount(sel.plane, minlength=2).tolist() == [8, 8]
    assert len(set(sel.sport.tolist())) == 16
    # what the host predicted is what the switches do with those ports
    again = make_router("ecmp", seed=1).route_sports(f, np.full(16, s), np.full(16, d), sel.sport)
    assert np.array_equal(again.links, sel.paths.links)


def test_hpn_selection_reuses_paths_when_there_are_few(dual_plane):
    f = dual_plane
    sel = HpnRouter(seed=2).select(f, np.full(6, 0), np.full(6, 8))  # same ToR pair
    assert sel.distinct_paths_found[0] == 2
    assert np.bincount(sel.plane, minlength=2).tolist() == [3, 3]


def test_path_counts_follow_the_wiring():
    assert path_report(build("hpn", segments=2)).search_space == 60
    assert path_report(build("hpn", segments=2, tor_uplinks=30)).search_space == 30
    f = build("fat-tree", k=8)
    assert count_paths(f, 0, 127) == 16  # (k/2)^2 between hosts of pods 0 and 7
    dcn = build("dcn-plus", segments=2)
    a, b = 0, 16 * 8  # first GPUs of segments 0 and 1
    # 64 uplinks x (2 destination ToRs x 8 parallel links), per sending port
    assert count_paths(dcn, a, b, plane=0) == 64 * 2 * 8


def test_core_maps_ports_deterministically_and_falls_back():
    f = build("hpn", pods=2, segments=1)
    nd = f.nodes
    g0 = np.flatnonzero((nd.kind == 0) & (nd.pod == 0) & (nd.index == 0) & ~nd.backup)[:40]
    g1 = np.flatnonzero((nd.kind == 0) & (nd.pod == 1) & (nd.index == 0) & ~nd.backup)[:40]
    src, dst = np.repeat(g0, 4), np.repeat(g1, 4)
    r = make_router("ecmp", seed=3)
    p = r.route(f, src, dst)
    for i in range(len(src)):
        aggs = [h for h in f.links.dst[p[i]] if nd.kind[h] == NodeKind.AGG]
        assert nd.index[aggs[0]] % 15 == nd.index[aggs[1]] % 15
    core_out = [x for x in p[0] if nd.kind[f.links.src[x]] == NodeKind.CORE][0]
    down = np.zeros(f.num_links, bool)
    down[core_out] = True
    q = r.route(f, src, dst, down=down)
    assert core_out not in q.links
    moved = [i for i in range(len(src)) if not np.array_equal(p[i], q[i])]
    assert 0 in moved and all(core_out in p[i] for i in moved)


def test_ideal_balances_uplinks():
    f = build("hpn", segments=2)
    src, dst, keys = job_flows(f, hosts=16, senders=4, connections=4)
    p = make_router("ideal").route(f, src, dst, keys)
    up = p.links[
        (f.links.tier[p.links] == LinkTier.TOR_AGG)
        & (f.nodes.kind[f.links.src[p.links]] == NodeKind.TOR)
    ]
    per_tor = {}
    for x in up:
        per_tor.setdefault(int(f.links.src[x]), []).append(int(x))
    for links in per_tor.values():
        counts = np.unique(links, return_counts=True)[1]
        assert counts.max() - counts.min() <= 1


def test_hpn_selection_is_per_connection_not_per_flow(dual_plane):
    """Flows that reuse a connection key (buckets, micro-batches) share its path."""
    f = dual_plane
    keys = np.array([5, 9, 5, 9, 5, 9])
    sel = HpnRouter(seed=1).select(f, np.full(6, 0), np.full(6, 136 * 8), keys)
    assert len(set(sel.sport[keys == 5])) == 1 and len(set(sel.sport[keys == 9])) == 1
    assert sel.plane[0] != sel.plane[1]


def _tor_uplinks_used(f, hashing):
    """Distinct ToR -> Agg links the cross-segment flows of segment 0's ToRs use (DCN+: 8
    Aggs x 8 parallel links per ToR)."""
    nd = f.nodes
    gpus = np.flatnonzero((nd.kind == NodeKind.GPU) & (nd.segment == 0))
    dst = np.flatnonzero((nd.kind == NodeKind.GPU) & (nd.segment == 1))
    src = np.repeat(gpus, 4)
    far = np.resize(dst, len(src))
    p = make_router("ecmp", seed=1, hashing=hashing).route(f, src, far)
    up = p.links[
        (f.links.tier[p.links] == LinkTier.TOR_AGG)
        & (nd.kind[f.links.src[p.links]] == NodeKind.TOR)
    ]
    per_tor = {}
    for x in up:
        per_tor.setdefault(int(f.links.src[x]), set()).add(int(x))
    return min(len(v) for v in per_tor.values())


def test_a_lag_hashed_on_the_ecmp_bits_uses_one_member_per_neighbour():
    """ECMP over 8 Aggs, then a LAG over 8 parallel links: with the LAG taking the same hash
    bits as ECMP the member is a function of the Agg (8 of 64 uplinks); other bits use all."""
    f = build("dcn-plus", segments=2)
    same_bits = HashConfig(tor_lag_offset=0)
    assert _tor_uplinks_used(f, same_bits) == 8
    assert _tor_uplinks_used(f, None) > 48
    assert _tor_uplinks_used(f, {"lag": False}) > 48
