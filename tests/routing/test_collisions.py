"""ECMP collisions are visible: a permutation on a fat tree is slower than ideal under
per-flow ECMP, and ideal under a routing that is collision-free by construction."""

import numpy as np

from hpn.engine import FlowDAG, simulate
from hpn.routing import Paths
from hpn.topology import NodeKind, build

K, SIZE = 8, 1e6


def pod_shift(f):
    """Host (pod p, edge e, index h) -> host (pod p+1, e, h) with two-level (d-mod-k) routes:
    up through Agg h and core (h, e), down the same way: no two flows share a link."""
    h = K // 2
    n_host = K * h * h
    edge, agg, core = (f.nodes_of(kind) for kind in (NodeKind.TOR, NodeKind.AGG, NodeKind.CORE))
    src = np.arange(n_host)
    dst = (src + h * h) % n_host
    paths = []
    for s, d in zip(src, dst, strict=True):
        ps, e, i = s // (h * h), (s // h) % h, s % h
        pd = d // (h * h)
        hops = [
            s,
            edge[ps * h + e],
            agg[ps * h + i],
            core[i * h + e],
            agg[pd * h + i],
            edge[pd * h + e],
            d,
        ]
        paths.append(
            [f.link_between(int(a), int(b)) for a, b in zip(hops[:-1], hops[1:], strict=True)]
        )
    return src, dst, Paths.from_lists(paths)


def test_collision_free_routing_is_ideal_and_ecmp_is_not():
    f = build("fat-tree", k=K, speed=100e9)
    src, dst, paths = pod_shift(f)
    ideal = SIZE * 8 / 100e9 + 6 * f.links.latency[0]
    dag = FlowDAG()
    dag.add_flows(src, dst, SIZE, paths=paths)
    free = simulate(f, dag)
    np.testing.assert_allclose(free.fct, ideal, rtol=1e-9)
    assert (free.link_peak_util <= 1 + 1e-12).all()
    for seed in (1, 2, 3):
        dag = FlowDAG()
        dag.add_flows(src, dst, SIZE)
        ecmp = simulate(f, dag, "ecmp", seed=seed)
        assert np.median(ecmp.fct) > 1.2 * ideal
        assert ecmp.fct.min() >= ideal * (1 - 1e-9)


def _permutation_median(k: int, hashing, seed: int = 1) -> float:
    from hpn.routing.ecmp import HashEcmpRouter
    from hpn.workload import make_pattern

    f = build("fat-tree", k=k, speed=100e9)
    dag = make_pattern("permutation", f, 2e6, seed=seed)
    res = simulate(f, dag, HashEcmpRouter(seed=seed, hashing=hashing))
    ideal = 8 * res.size / res.paths.per_flow_min(f.links.capacity) + res.path_latency
    return float(np.median(res.fct / ideal))


def test_per_switch_seeds_and_offsets_undo_polarization():
    """k=16 fat tree, 1,024-flow permutation: one CRC with one seed everywhere polarizes (the
    Agg's core choice is a bijection of the edge's Agg choice, so a pod pair uses 8 of its 64
    paths); the default (per-switch seeds, Agg offset 10) behaves like independent choices."""
    from hpn.routing.ecmp import HashConfig

    polarized = _permutation_median(16, HashConfig.polarized())
    default = _permutation_median(16, None)
    tier_no_offset = _permutation_median(16, HashConfig.polarized(seeds="tier"))
    assert polarized > 6
    assert tier_no_offset == polarized  # role seeds alone change nothing
    assert default < 3.5
